"""The Grafana dashboard (deploy/grafana/vocero.json, issue 32) queries only series a running
server exports: a real ``vocero serve --runners sim`` takes a call with a tool turn and a
malformed frame, then every selector of every panel (parsed with ``promql-parser``) must name a
family on its ``/metrics``, and the series the call produced must have samples."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets.sync.client as ws_client
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.support.promql import selectors
from tests.support.servers import READY_LINE, ServerProcess, free_port
from tests.support.wsclient import envelope
from vocero.app.settings import REPO_ROOT

pytestmark = pytest.mark.process

DASHBOARD = REPO_ROOT / "deploy" / "grafana" / "vocero.json"
SCRIPT = {
    "tts": {"ms_per_char": 2},
    "llm": [
        {"match": r"status of order (?P<order>\w+)", "tool": "orders.status",
         "arguments": {"order_id": "{order}"}, "reply": "Order {order} is {result.status}."},
        {"match": ".*", "reply": "I can help with orders."},
    ],
}
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$job": "vocero"}
PRODUCED_BY_THE_CALL = {
    "vocero_ttfs_ms_bucket", "vocero_llm_ttft_ms_bucket", "vocero_tts_ttfa_ms_bucket",
    "vocero_tool_latency_ms_bucket", "vocero_tool_latency_ms_count", "vocero_generations_total",
    "vocero_sessions_total", "vocero_errors_total", "vocero_units_total",
    "vocero_runner_healthy", "vocero_followups_overdue", "vocero_metric_series",
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    port = free_port()
    command = [sys.executable, "-m", "vocero", "serve", "--runners", "sim", "--port", str(port),
               "--db", f"sqlite:///{tmp_path}/v.db", "--sim-script", str(script)]
    with ServerProcess("vocero serve", command, ready_line=READY_LINE,
                       log=tmp_path / "serve.log"):
        yield f"127.0.0.1:{port}"


def call_with_a_tool_turn(address: str) -> None:
    with ws_client.connect(f"ws://{address}/v1/realtime", open_timeout=10) as conn:
        conn.send(envelope("session.connect.v1", {"token": "demo-token"}, sequence=1))
        session_id = json.loads(conn.recv(timeout=30))["data"]["payload"]["session_id"]
        conn.send(envelope("input.text.v1", {"text": "what is the status of order A123"},
                           sequence=2, session_id=session_id))
        seen = receive_until(conn, "vocero.response.completed.v1")
        assert "vocero.response.audio_delta.v1" in seen
        conn.send("{not json")
        receive_until(conn, "vocero.error.v1")


def receive_until(conn: ws_client.ClientConnection, wanted: str) -> set[str]:
    seen: set[str] = set()
    while wanted not in seen:
        seen.add(json.loads(conn.recv(timeout=30))["type"])
    return seen


def exported(address: str) -> tuple[set[str], set[str]]:
    """Families /metrics declares (also those without samples yet), and names with samples."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    declared: set[str] = set()
    sampled: set[str] = set()
    for family in text_string_to_metric_families(text):
        declared.add(family.name)
        if family.type == "counter":
            declared.add(f"{family.name}_total")
        if family.type == "histogram":
            declared |= {f"{family.name}_{part}" for part in ("bucket", "count", "sum")}
        sampled |= {sample.name for sample in family.samples}
    return declared, sampled


def queried() -> set[str]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    names: set[str] = set()
    for panel in dashboard["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            expression = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expression = expression.replace(variable, value)
            names |= {name for name, _ in selectors(expression)}
    return names


def test_every_series_the_dashboard_queries_is_on_metrics(server: str) -> None:
    call_with_a_tool_turn(server)
    declared, sampled = exported(server)
    wanted = queried()
    assert wanted - declared == set(), "the dashboard queries series /metrics does not have"
    assert PRODUCED_BY_THE_CALL - sampled == set(), "series the call should have produced"
    stages = {"vocero_turn_endpointing_ms_bucket", "vocero_stt_final_ms_bucket",
              "vocero_llm_ttft_ms_bucket", "vocero_tts_ttfa_ms_bucket", "vocero_ttfs_ms_bucket",
              "vocero_barge_in_stop_ms_bucket", "vocero_tool_latency_ms_bucket",
              "vocero_sessions_total", "vocero_queue_depth", "vocero_errors_total"}
    assert stages <= wanted, "the dashboard lost a panel the issue asks for"
