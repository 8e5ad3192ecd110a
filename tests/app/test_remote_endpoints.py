"""Serving engines behind the real composition root (SPEC §1 "Serving engines").

``Settings(llm_url=...)`` puts the LLM stage on an OpenAI-compatible server over real HTTP; the
session, policy and MCP gateway are Vocero's own, the tool server a real fixture MCP server that
records every ``tools/call`` it receives.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.apps import sim_app
from tests.support.engines import Rule, ScriptedEngine
from tests.support.wsclient import ProtocolClient
from vocero.app.runtime import build_runners
from vocero.app.settings import REPO_ROOT, add_serve_arguments, settings_from
from vocero.contracts.errors import ConfigError

pytestmark = pytest.mark.process

ORDERS = REPO_ROOT / "fixtures" / "mcp_servers" / "orders_server.py"
READER = {"token": "reader", "subject": "rita", "tenant": "acme", "roles": ["customer"],
          "scopes": ["orders:read"]}
STRANGER = {"token": "stranger", "subject": "sam", "tenant": "acme", "roles": ["customer"],
            "scopes": []}
RULES = [
    Rule(match=r"data from shop.order_status.*shipped", text="Order A123 has shipped."),
    Rule(match="order A123", tool="shop.order_status", arguments={"order_id": "A123"}),
    Rule(match="hello", text="Hello! How can I help you today?"),
]


def profile(folder: Path) -> dict[str, Any]:
    return {
        "id": "shop", "version": "1", "match": {"tenant": "acme"},
        "mcp_servers": {"orders": {
            "command": sys.executable, "args": [str(ORDERS)],
            "env": {"VOCERO_MCP_RECORD": str(folder / "calls.jsonl")},
        }},
        "tools": [{
            "name": "shop.order_status", "server": "orders", "resolves_to": "get_order_status",
            "description": "Look up one order's status by its number.",
            "readout": "Order {order_id} is {status}.",
            "action_class": "read", "required_scopes": ["orders:read"], "idempotent": True,
        }],
    }


@contextmanager
def serving(tmp_path: Path, engine: ScriptedEngine) -> Iterator[TestClient]:
    with sim_app(tmp_path, profile(tmp_path), [READER, STRANGER], {},
                 llm_url=engine.url, llm_model="scripted") as client:
        yield client


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def say(pc: ProtocolClient, text: str) -> str:
    mark = len(pc.frames)
    pc.send("input.text.v1", {"text": text})
    pc.expect("response.completed.v1")
    return "".join(f["data"]["payload"]["text"] for f in pc.frames[mark:]
                   if f["type"] == "vocero.response.text_delta.v1")


def test_the_endpoints_tool_call_goes_through_policy_and_a_refused_one_never_reaches_mcp(
    tmp_path: Path,
) -> None:
    with ScriptedEngine(RULES) as engine, serving(tmp_path, engine) as client:
        with client.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            pc.connect("stranger")  # no orders:read: policy refuses the call
            say(pc, "where is my order A123")
        assert calls(tmp_path) == [], "a call policy refused reached the MCP server"
        with client.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            pc.connect("reader")
            heard = say(pc, "where is my order A123")
        assert "A123" in heard, heard
    [call] = calls(tmp_path)
    assert call["arguments"] == {"order_id": "A123"}
    sent_tools = [r.get("tools") for r in engine.requests if r.get("stream")]
    assert any(t and t[0]["function"]["name"] == "shop.order_status" for t in sent_tools)


def test_a_dead_endpoint_degrades_the_turn_shows_in_readyz_and_recovers(tmp_path: Path) -> None:
    with ScriptedEngine(RULES) as engine, serving(tmp_path, engine) as client:
        ready = client.get("/readyz").json()
        assert ready["endpoints"]["llm"]["health"] == "ready"
        with client.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            pc.connect("reader")
            engine.dead = True
            pc.send("input.text.v1", {"text": "hello"})
            error = pc.expect("error.v1")["data"]["payload"]
            assert error["code"] == "LLM_UNAVAILABLE" and error["retryable"] is True
            pc.expect("response.completed.v1", lambda p: p["status"] == "failed")
            down = client.get("/readyz").json()
            assert down["endpoints"]["llm"]["health"] == "degraded"
            assert "HTTP 503" in down["endpoints"]["llm"]["detail"]
            engine.dead = False
            assert say(pc, "hello").startswith("Hello!")  # the same session carries on
        with client.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            pc.connect("reader")
            assert say(pc, "hello").startswith("Hello!")
        assert client.get("/readyz").json()["endpoints"]["llm"]["health"] == "ready"
        scraped = client.get("/metrics").text
        assert 'vocero_endpoint_errors_total{stage="llm",status="503"} 1.0' in scraped
        assert 'vocero_endpoint_first_token_ms{quantile="0.5",stage="llm"}' in scraped
        assert 'vocero_endpoint_tokens_per_second{quantile="0.95",stage="llm"}' in scraped
        assert 'vocero_endpoint_breaker_open{stage="llm"} 0.0' in scraped


def test_the_flags_read_their_environment_twins_and_a_url_needs_its_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VOCERO_LLM_URL", "http://engine:8000/v1")
    monkeypatch.setenv("VOCERO_LLM_MODEL", "llama")
    monkeypatch.setenv("VOCERO_LLM_API_KEY", "sk-from-the-environment")
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    settings = settings_from(parser.parse_args(["--tts-url", "http://tts:8002"]))
    assert (settings.llm_url, settings.llm_model, settings.tts_url) == (
        "http://engine:8000/v1", "llama", "http://tts:8002")
    with pytest.raises(ConfigError, match="--tts-model: required with --tts-url"):
        build_runners(settings)
    shared, per_session = build_runners(dataclasses.replace(settings, tts_url="", runners="sim"))
    assert shared.llm.name == "llm.remote" and per_session().llm is shared.llm
    assert shared.remote_stages() == ["llm"]
    assert "sk-from" not in repr(settings) and "sk-from" not in shared.llm.status().detail
