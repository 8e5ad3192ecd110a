"""The recording tap relays bytes unchanged and records each tools/call with its response."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import ServerProcess, free_port
from vocero.evals.proxy import RecordingProxy
from vocero.evals.tap import Recorder, relay

REPO = Path(__file__).resolve().parents[2]
ORDERS = REPO / "fixtures" / "mcp_servers" / "orders_server.py"
PRINCIPAL = {"subject_ref": "sub_1", "tenant_id": "acme", "scopes": ["orders:read"]}


def test_relay_copies_every_byte_and_parses_complete_lines() -> None:
    data = b'{"a": 1}\n{"b":\n not json\n\n{"c": 3}'
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    sink = io.BytesIO()
    lines: list[bytes] = []
    with os.fdopen(read, "rb") as source:
        relay(source, sink, lines.append)
    assert sink.getvalue() == data
    assert lines == [b'{"a": 1}', b'{"b":', b" not json", b'{"c": 3}']


class AnsweringSink(io.BytesIO):
    """A server that answers a call the moment its line is written, before the relay's next
    statement runs (what a busy machine may do to the tap's two threads)."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def write(self, data: Any) -> int:
        written = super().write(data)
        if data.endswith(b"\n"):
            self.recorder.response(b'{"jsonrpc": "2.0", "id": 7, "result": {"content": []}}')
        return written


def test_a_call_answered_before_the_relay_returns_is_still_recorded(tmp_path: Path) -> None:
    """Quarry Hill, stop 52: a committed booking reached the server, but its call was missing
    from the tap's records: the answer overtook the request's registration."""
    record = tmp_path / "calls.jsonl"
    recorder = Recorder(str(record), "library")
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "book_room", "arguments": {"room": "ridge"}}}  # fmt: skip
    read, write = os.pipe()
    os.write(write, json.dumps(call).encode() + b"\n")
    os.close(write)
    with os.fdopen(read, "rb") as source:
        relay(source, AnsweringSink(recorder), recorder.request)
    records = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(r["tool"], r["arguments"], r["status"]) for r in records] == [
        ("book_room", {"room": "ridge"}, "ok")
    ]


def _rpc(process: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any] | None:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = process.stdout.readline()
        assert line, "the tap closed its stdout"
        answer: dict[str, Any] = json.loads(line)
        if answer.get("id") == message["id"]:
            return answer


@pytest.mark.process
def test_a_real_fixture_server_through_the_tap(tmp_path: Path) -> None:
    record = tmp_path / "orders.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "vocero.evals.tap", "--record", str(record), "--server", "orders",
         "--", sys.executable, str(ORDERS)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO)
    try:
        init = _rpc(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "eval-test", "version": "1"}}})
        assert init is not None and "result" in init
        _rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        meta = {"io.vocero/principal": PRINCIPAL, "io.vocero/operation_id": "op_1"}
        found = _rpc(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "get_order_status", "arguments": {"order_id": "A123"}, "_meta": meta}})
        missing = _rpc(process, {"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": {
            "name": "get_order_status", "arguments": {"order_id": "NOPE"}, "_meta": meta}})
    finally:
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    assert found is not None and "shipped" in json.dumps(found["result"])
    assert missing is not None
    records = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(r["tool"], r["arguments"], r["server"]) for r in records] == [
        ("get_order_status", {"order_id": "A123"}, "orders"),
        ("get_order_status", {"order_id": "NOPE"}, "orders"),
    ]
    assert records[0]["meta"]["io.vocero/principal"] == PRINCIPAL
    assert records[0]["meta"]["io.vocero/operation_id"] == "op_1"
    assert records[0]["status"] == "ok" and records[0]["result"] == found["result"]
    assert records[1]["status"] == "error"
    assert all(r["answered_at"] >= r["at"] for r in records)


def _answer(response: httpx.Response) -> dict[str, Any]:
    """A JSON-RPC answer, as JSON or as the data of an event stream."""
    if "text/event-stream" in response.headers.get("content-type", ""):
        data = [line[5:].strip() for line in response.text.splitlines()
                if line.startswith("data:")]
        return json.loads(data[-1])  # type: ignore[no-any-return]
    return response.json()  # type: ignore[no-any-return]


@pytest.mark.process
def test_a_streamable_http_server_through_the_recording_proxy(tmp_path: Path) -> None:
    port = free_port()
    server = ServerProcess("orders server", [sys.executable, str(ORDERS), "--transport", "http",
                                             "--port", str(port)], port=port, cwd=REPO).spawn()
    record = tmp_path / "orders.jsonl"
    proxy = RecordingProxy(f"http://127.0.0.1:{port}/mcp", str(record), "orders").start()
    try:
        server.wait_ready()
        headers = {"Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}
        with httpx.Client(timeout=10) as client:
            init = client.post(proxy.url, headers=headers, json={
                "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "eval-test", "version": "1"}}})
            assert init.status_code == 200 and "result" in _answer(init)
            session = init.headers.get("mcp-session-id")
            if session:
                headers["mcp-session-id"] = session
            client.post(proxy.url, headers=headers,
                        json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            meta = {"io.vocero/principal": PRINCIPAL, "io.vocero/operation_id": "op_2"}
            call = client.post(proxy.url, headers=headers, json={
                "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                    "name": "get_order_status", "arguments": {"order_id": "A123"},
                    "_meta": meta}})
            answer = _answer(call)
    finally:
        proxy.stop()
        server.stop(grace_s=10)
    assert "shipped" in json.dumps(answer["result"])
    (only,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert (only["server"], only["tool"], only["arguments"], only["status"]) == (
        "orders", "get_order_status", {"order_id": "A123"}, "ok")
    assert only["meta"]["io.vocero/operation_id"] == "op_2"
    assert only["result"] == answer["result"]
