"""``configure_logging``: rendered output never carries secrets; context rides along."""

from __future__ import annotations

import io
import json
import logging
import logging.config
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
import uvicorn.config
from structlog.testing import capture_logs

from vocero.observability.context import bind_session, bind_turn
from vocero.observability.logging import configure_logging, level_number, shared_processors

SECRETS = ["demo-token", "rt-123", "hunter2", "sk-live-42", "UklGRg==", "my-voice-text"]


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
    root.handlers[:] = handlers
    root.setLevel(level)


def _emit_secrets() -> None:
    structlog.get_logger("test").info(
        "session.connect",
        token="demo-token",
        resume_token="rt-123",
        request={"headers": {"Authorization": "Bearer sk-live-42"}, "password": "hunter2"},
        tool_calls=[{"tool": "orders.status", "tool_arguments": {"order_id": "A-1"}}],
        ref_audio="UklGRg==",
        sensitive_ref="my-voice-text",
        tool="orders.status",
    )


def _json_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_output_never_contains_secrets() -> None:
    out = io.StringIO()
    configure_logging("json", file=out)
    _emit_secrets()
    text = out.getvalue()
    assert not [secret for secret in SECRETS if secret in text]
    (line,) = _json_lines(out)
    assert line["event"] == "session.connect"
    assert line["tool"] == "orders.status"
    assert line["token"] == "[redacted]"
    assert line["request"]["headers"]["Authorization"] == "[redacted]"
    assert line["tool_calls"][0] == {"tool": "orders.status", "tool_arguments": "[redacted]"}
    assert line["level"] == "info"
    assert line["timestamp"].endswith("Z")


def test_console_output_never_contains_secrets() -> None:
    out = io.StringIO()
    configure_logging("console", file=out)
    _emit_secrets()
    text = out.getvalue()
    assert "session.connect" in text
    assert "[redacted]" in text
    assert not [secret for secret in SECRETS if secret in text]


def test_allow_sensitive_is_explicit_and_announced() -> None:
    out = io.StringIO()
    configure_logging("json", file=out, allow_sensitive=True)
    _emit_secrets()
    events = [line["event"] for line in _json_lines(out)]
    assert events == ["logging.redaction_disabled", "session.connect"]
    assert "demo-token" in out.getvalue()


def test_session_and_turn_are_bound_through_contextvars() -> None:
    out = io.StringIO()
    configure_logging("json", file=out)
    log = structlog.get_logger()
    with bind_session("ses_1"):
        log.info("a")
        with bind_turn("turn_1", generation_id="gen_1"):
            log.info("b")
        log.info("c")
    log.info("d")
    lines = _json_lines(out)
    assert [(ln.get("session_id"), ln.get("turn_id"), ln.get("generation_id")) for ln in lines] == [
        ("ses_1", None, None),
        ("ses_1", "turn_1", "gen_1"),
        ("ses_1", None, None),
        (None, None, None),
    ]


def test_bound_context_cannot_smuggle_secrets() -> None:
    out = io.StringIO()
    configure_logging("json", file=out)
    with bind_session("ses_1", token="demo-token"):
        structlog.get_logger().info("x")
    assert "demo-token" not in out.getvalue()


def test_capture_logs_sees_bound_context() -> None:
    with (
        capture_logs(processors=shared_processors()) as logs,
        bind_session("ses_9"),
        bind_turn("turn_3"),
    ):
        structlog.get_logger().warning("turn.committed", pcm=b"\x00\x01")
    assert logs == [
        {
            "event": "turn.committed",
            "session_id": "ses_9",
            "turn_id": "turn_3",
            "pcm": "[redacted]",
            "log_level": "warning",
            "level": "warning",
            "timestamp": logs[0]["timestamp"],
        }
    ]


def test_level_filters_lower_events() -> None:
    out = io.StringIO()
    configure_logging("json", level="warning", file=out)
    log = structlog.get_logger()
    log.info("quiet")
    log.warning("loud")
    assert [line["event"] for line in _json_lines(out)] == ["loud"]


def test_exceptions_render_in_json() -> None:
    out = io.StringIO()
    configure_logging("json", file=out)
    try:
        raise RuntimeError("kaput")
    except RuntimeError:
        structlog.get_logger().exception("op.failed", token="demo-token")
    (line,) = _json_lines(out)
    assert "RuntimeError: kaput" in line["exception"]
    assert line["token"] == "[redacted]"


def test_stdlib_records_can_be_routed_through_the_same_chain() -> None:
    out = io.StringIO()
    configure_logging("json", file=out, route_stdlib=True)
    configure_logging("json", file=out, route_stdlib=True)  # idempotent: one handler
    logging.getLogger("uvicorn.error").info("server %s", "started")
    (line,) = _json_lines(out)
    assert (line["event"], line["level"]) == ("server started", "info")


def test_server_loggers_set_up_by_uvicorn_itself_still_go_through_the_chain() -> None:
    """uvicorn's default logging config stops its loggers propagating, with plain handlers of
    their own: routed, their records (the access log's targets too) are redacted all the same."""
    logging.config.dictConfig(uvicorn.config.LOGGING_CONFIG)
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)  # as log_level="warning" does
    out = io.StringIO()
    configure_logging("json", file=out, route_stdlib=True)
    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/v1/realtime?token=demo-token",
        "1.1", 101,
    )
    logging.getLogger("uvicorn.error").info("server %s", "started")
    access, started = _json_lines(out)
    assert "demo-token" not in json.dumps(access)
    assert started["event"] == "server started"
    assert not logging.getLogger("uvicorn").handlers


def test_bad_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="level"):
        level_number("chatty")
    with pytest.raises(ValueError, match="format"):
        configure_logging("xml", file=io.StringIO())  # type: ignore[arg-type]
    assert level_number("DEBUG") == logging.DEBUG
