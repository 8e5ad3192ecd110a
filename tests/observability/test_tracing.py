"""Traces (vocero/observability/tracing.py): a tool-assisted spoken turn, driven through the real
app on the sim runners with the demo profile's orders MCP server, gives one ``vocero.turn`` span
per turn, child of the client envelope's ``traceparent``, with a span for every stage below it;
the trace context reaches the MCP server in ``_meta``; attributes carry no words; with tracing off
the client's own ``traceparent`` still reaches the server; OTLP/HTTP export works when an
endpoint is set."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.testclient import TestClient

from tests.support.audio import tone_frames
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import REPO_ROOT, Settings
from vocero.observability import tracing

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
SPOKEN = "what is the status of order A123"
SCRIPT = {
    "stt": [SPOKEN],
    "tts": {"ms_per_char": 2},
    "llm": [{"match": r"status of order (?P<order>\w+)", "tool": "orders.status",
             "arguments": {"order_id": "{order}"}, "reply": "Order {order} is {result.status}."}],
}


def _profiles(tmp_path: Path, record: Path) -> Path:
    """The demo profile, its orders server recording every tools/call (``_meta`` included)."""
    fixtures = REPO_ROOT / "fixtures" / "profiles"
    profile = yaml.safe_load((fixtures / "demo.yaml").read_text())
    profile["claims"] = str(fixtures / profile["claims"])
    profile["mcp_servers"] = {"orders": profile["mcp_servers"]["orders"]}
    orders = profile["mcp_servers"]["orders"]
    orders["args"] = [str((fixtures / a).resolve()) for a in orders["args"]]
    orders["env"] = {"VOCERO_MCP_RECORD": str(record)}
    profile["tools"] = [t for t in profile["tools"] if t["server"] in ("orders", "vocero")]
    profile.pop("followups", None)
    directory = tmp_path / "profiles"
    directory.mkdir()
    (directory / "demo.yaml").write_text(yaml.safe_dump(profile))
    return directory


@pytest.fixture
def app_settings(sim_settings: Settings, tmp_path: Path) -> Settings:
    script = tmp_path / "trace.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    return replace(sim_settings, sim_script=str(script),
                   profiles=str(_profiles(tmp_path, tmp_path / "orders.jsonl")))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    with tracing.installed(tracing.otel_tracer(exporter, batch=False)):
        yield exporter


def _spoken_turn(settings: Settings, traceparent: str) -> dict[str, Any]:
    """One push-to-talk turn whose frames carry ``traceparent``; the call's first tools/call."""
    with TestClient(create_app(settings)) as client:
        assert client.portal is not None
        client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
        with client.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            pc.connect()
            pc.send("session.update_requested.v1", {"preferences": {"turn_mode": "push_to_talk"}})
            pc.expect("session.configuration_applied.v1")

            def send(name: str, payload: dict[str, Any]) -> None:
                envelope = json.loads(pc_envelope(pc, name, payload))
                envelope["traceparent"] = traceparent
                pc.send_raw(json.dumps(envelope))

            tone = tone_frames(400)
            for frame in (b"".join(tone[:10]), b"".join(tone[10:])):
                send("audio.input.delta.v1",
                     {"audio": base64.b64encode(frame).decode(), "sample_rate": 16000})
            send("audio.input.commit.v1", {})
            done = pc.expect("response.completed.v1")["data"]["payload"]
            assert done["status"] == "completed" and "A123" in done["heard_text"]
            pc.send("session.close.v1")
    record = Path(settings.profiles).parent / "orders.jsonl"
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(calls) == 1
    return calls[0]


def pc_envelope(pc: ProtocolClient, name: str, payload: dict[str, Any]) -> str:
    from tests.support.wsclient import envelope

    return envelope(name, payload, sequence=pc.sequence + 1, session_id=pc.session_id)


def _by_name(finished: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in finished:
        named.setdefault(span.name, []).append(span)
    return named


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[int]:
    chain, parent = [], span.parent
    while parent is not None:
        chain.append(parent.span_id)
        above = by_id.get(parent.span_id)
        parent = above.parent if above is not None else None
    return chain


@pytest.mark.process
def test_a_tool_assisted_turn_has_a_span_for_every_stage(
    app_settings: Settings, spans: InMemorySpanExporter
) -> None:
    call = _spoken_turn(app_settings, TRACEPARENT)
    finished = spans.get_finished_spans()
    named = _by_name(finished)
    by_id = {s.context.span_id: s for s in finished}

    (turn,) = named[tracing.TURN]
    assert f"{turn.context.trace_id:032x}" == CLIENT_TRACE, "the client's trace"
    assert turn.parent is not None and f"{turn.parent.span_id:016x}" == CLIENT_SPAN
    assert turn.attributes is not None and turn.attributes["vocero.turn.source"] == "audio"
    assert str(turn.attributes["vocero.turn_id"]).startswith("turn_")
    for stage in tracing.STAGES:
        assert stage in named, f"no {stage} span: {sorted(named)}"
        for span in named[stage]:
            assert span.context.trace_id == turn.context.trace_id
            assert turn.context.span_id in _ancestors(span, by_id), f"{stage} outside the turn"
            assert span.start_time is not None and span.end_time is not None
            assert span.end_time >= span.start_time
    assert turn.start_time is not None and turn.end_time is not None
    capture, endpointing = named[tracing.CAPTURE][0], named[tracing.ENDPOINTING][0]
    assert capture.start_time == turn.start_time, "the turn starts with its audio"
    assert capture.end_time == endpointing.start_time

    (policy,) = named[tracing.POLICY]
    assert policy.attributes is not None
    assert (policy.attributes["vocero.tool"], policy.attributes["vocero.decision"]) == (
        "orders.status", "run")
    (mcp,) = named[tracing.MCP]
    assert mcp.attributes is not None and mcp.attributes["vocero.status"] == "committed"
    assert len(named[tracing.LLM]) == 2, "asked once for the tool, once after its result"

    # The MCP server got this trace in _meta: its parent is a span of this turn.
    meta = call["meta"]["traceparent"].split("-")
    assert meta[1] == CLIENT_TRACE
    assert int(meta[2], 16) in by_id and int(meta[2], 16) != int(CLIENT_SPAN, 16)

    words = {w.lower() for w in SPOKEN.split()} - {"of", "is", "the", "what"}
    for span in finished:
        for value in (span.attributes or {}).values():
            assert not (words & set(str(value).lower().split())), (span.name, value)


@pytest.mark.process
def test_with_tracing_off_the_client_traceparent_reaches_the_mcp_server(
    app_settings: Settings,
) -> None:
    assert isinstance(tracing.current(), tracing.NullTracer)
    call = _spoken_turn(app_settings, TRACEPARENT)
    assert call["meta"]["traceparent"] == TRACEPARENT


def test_span_attributes_are_redacted_like_logs(spans: InMemorySpanExporter) -> None:
    with tracing.span(tracing.MCP, tool="orders.status", resume_token="tok-1", audio="pcm",
                      played_ms=12):
        pass
    (span,) = spans.get_finished_spans()
    assert dict(span.attributes or {}) == {
        "vocero.tool": "orders.status", "vocero.resume_token": "[redacted]",
        "vocero.audio": "[redacted]", "vocero.played_ms": 12,
    }


def test_an_exception_ends_its_span_with_its_type_only(spans: InMemorySpanExporter) -> None:
    with pytest.raises(ValueError), tracing.span(tracing.STT):
        raise ValueError("the caller said 4111 1111 1111 1111")
    (span,) = spans.get_finished_spans()
    assert span.status.description == "ValueError"
    assert not span.events, "no exception event: its message may quote a value"


class _Collector(BaseHTTPRequestHandler):
    received: list[bytes] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        type(self).received.append(body)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


def test_otlp_export_when_an_endpoint_is_set() -> None:
    assert isinstance(tracing.otel_from_endpoint(""), tracing.NullTracer)
    collector = HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=collector.serve_forever, daemon=True)
    thread.start()
    try:
        tracer = tracing.otel_from_endpoint(f"http://127.0.0.1:{collector.server_port}")
        assert isinstance(tracer, tracing.OtelTracer)
        with tracing.installed(tracer), tracing.span(tracing.LLM):
            pass  # leaving `installed` shuts the provider down, which flushes the batch
    finally:
        collector.shutdown()
    request = ExportTraceServiceRequest()
    request.ParseFromString(b"".join(_Collector.received))
    exported = [s.name for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]
    assert exported == [tracing.LLM]
