"""The redaction processor: sensitive keys are replaced at any depth, everything else kept."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import structlog
from structlog.testing import capture_logs

from vocero.contracts.domain import Caller
from vocero.observability.logging import shared_processors
from vocero.observability.redaction import REDACTED, is_sensitive, redact, redact_event

SENSITIVE = [
    "audio", "pcm", "token", "resume_token", "operator_token", "access-token", "password",
    "secret", "client_secret", "credential", "credentials", "mcp_credentials", "authorization",
    "Authorization", "api_key", "x-api-key", "apikey", "arguments", "tool_arguments", "ref_audio",
    "ref_text", "sensitive_phone", "sensitive_", "TOKEN",
]  # fmt: skip
NOT_SENSITIVE = [
    "event", "session_id", "audio_ms", "token_count", "tokens", "text", "tool", "reason_code",
    "arguments_hash", "pcm_bytes", "secretary", "insensitive_x", "level",
]  # fmt: skip


@pytest.mark.parametrize("key", SENSITIVE)
def test_sensitive_keys(key: str) -> None:
    assert is_sensitive(key)


@pytest.mark.parametrize("key", NOT_SENSITIVE)
def test_ordinary_keys(key: str) -> None:
    assert not is_sensitive(key)


def test_nested_values_are_redacted() -> None:
    value = {
        "headers": {"Authorization": "Bearer abc", "accept": "json"},
        "calls": [{"tool": "orders.status", "arguments": {"order": "A1"}}, ("x", {"pcm": b"\0"})],
        "meta": {"deeper": {"resume_token": "rt", "ok": 1}},
    }
    assert redact(value) == {
        "headers": {"Authorization": REDACTED, "accept": "json"},
        "calls": [{"tool": "orders.status", "arguments": REDACTED}, ["x", {"pcm": REDACTED}]],
        "meta": {"deeper": {"resume_token": REDACTED, "ok": 1}},
    }


def test_structs_are_redacted_by_field_name() -> None:
    caller = Caller(token="demo-token", subject="alice", tenant="acme")
    redacted = redact({"caller": caller})["caller"]
    assert redacted["token"] == REDACTED
    assert redacted["tenant"] == "acme"


def test_depth_is_bounded() -> None:
    value: Any = "leaf"
    for _ in range(50):
        value = {"next": value}
    assert "leaf" not in msgspec.json.encode(redact(value)).decode()


def test_event_dict_top_level_and_structlog_keys() -> None:
    error = ValueError("boom")
    event = {"event": "x", "token": "t", "exc_info": (ValueError, error, None), "n": [1]}
    assert redact_event(None, "info", event) == {
        "event": "x",
        "token": REDACTED,
        "exc_info": (ValueError, error, None),
        "n": [1],
    }


def test_capture_logs_through_the_shared_chain() -> None:
    log = structlog.get_logger()
    with capture_logs(processors=shared_processors()) as logs:
        log.info("session.connect", token="demo-token", session_id="ses_1", audio_ms=20)
    (entry,) = logs
    assert entry["token"] == REDACTED
    assert (entry["session_id"], entry["audio_ms"], entry["log_level"]) == ("ses_1", 20, "info")
    assert "timestamp" in entry


def test_allow_sensitive_keeps_values_for_local_debugging() -> None:
    log = structlog.get_logger()
    with capture_logs(processors=shared_processors(allow_sensitive=True)) as logs:
        log.info("debug.dump", token="demo-token")
    assert logs[0]["token"] == "demo-token"
