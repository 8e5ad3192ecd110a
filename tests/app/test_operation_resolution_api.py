"""A way out of ``unknown`` through the operator API (docs/operators.md "Operations nobody could
reconcile"), end to end through the real composition root (sim runners): a write whose server
answers too late is ``unknown`` and nothing can reconcile it (no lookup tool, not idempotent);
``GET /v1/operations/unresolved`` lists it with what the caller heard; an operator resolves it
with a note (``POST /v1/operations/{id}/resolution``): audited, a ``task`` follow-up to tell the
caller, never sent again. Bad bodies 400, wrong roles 403, unknown ids 404, settled ones 409.

The outbound-dialler fixture server over stdio records every ``tools/call`` it receives and
answers ``place_call`` after 5 s, past the tool's 300 ms timeout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from tests.support.apps import sim_app
from tests.support.polling import wait_for
from tests.support.wsclient import ProtocolClient

SERVER_SCRIPT = Path(__file__).resolve().parents[2] / "fixtures" / "mcp_servers" / "calls_server.py"
ADMIN = {"authorization": "Bearer op-admin-token"}
OWNER = {"authorization": "Bearer owner-token"}
SECURITY = {"authorization": "Bearer sec-token"}
SCOPE = "followups:write"
SCRIPT = {
    "tts": {"ms_per_char": 1},
    "llm": [
        {"match": r"ring (?P<p>\+?[0-9]+)", "tool": "dialler.ring",
         "arguments": {"phone": "{p}", "reason": "billing question", "followup_id": "fup_x1"}},
        {"match": ".*", "reply": "Ask me to ring a number."},
    ],
}
CALLER = {"token": "caller-1", "subject": "subject-1", "tenant": "t1", "roles": ["customer"],
          "scopes": [SCOPE], "timezone": "Europe/Madrid"}


def _profile(record: Path) -> dict[str, Any]:
    return {
        "id": "dialler", "version": "1", "match": {"tenant": "t1"},
        "mcp_servers": {"dialler": {
            "command": sys.executable, "args": [str(SERVER_SCRIPT)],
            "env": {"VOCERO_MCP_RECORD": str(record), "VOCERO_MCP_DELAY_MS": "place_call=5000"}}},
        "tools": [{"name": "dialler.ring", "server": "dialler", "resolves_to": "place_call",
                   "action_class": "reversible_write", "requires_confirmation": False,
                   "required_scopes": [SCOPE], "timeout_ms": 300}],
    }


def _calls(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


@pytest.fixture
def client(tmp_path: Path) -> Any:
    operators = tmp_path / "operators.yaml"
    operators.write_text(yaml.safe_dump([
        {"token": "owner-token", "name": "olga", "roles": ["business_owner"]},
        {"token": "sec-token", "name": "sam", "roles": ["security"]},
    ]))
    record = tmp_path / "dialler.jsonl"
    with sim_app(tmp_path, _profile(record), [CALLER], SCRIPT, operator_token="op-admin-token",
                 operators=str(operators)) as running:
        running.record = record  # type: ignore[attr-defined]
        yield running


def _ring(client: TestClient) -> str:
    """The caller asks for the write; returns what they heard."""
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("caller-1")
        pc.send("input.text.v1", {"text": "ring +34600000001"})
        done = pc.expect("response.completed.v1")
        return str(done["data"]["payload"]["heard_text"])


def _unresolved(client: TestClient) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = client.get("/v1/operations/unresolved",
                                             headers=SECURITY).json()["items"]
    return items


def test_an_operator_resolves_an_unknown_operation_and_nothing_is_sent_again(
    client: TestClient,
) -> None:
    record: Path = client.record  # type: ignore[attr-defined]
    heard = _ring(client)
    [unknown] = wait_for(
        "the write to be unknown for good",
        lambda: [o for o in _unresolved(client) if o["reason_code"] == "reconciliation_required"])
    assert unknown["status"] == "unknown" and unknown["tool"] == "dialler.ring"
    assert heard and heard in [h["text"] for h in unknown["heard"] if h["role"] == "assistant"]
    assert unknown["readback"]["summary"]
    assert len(_calls(record)) == 1
    op_id = unknown["operation_id"]
    resolution = f"/v1/operations/{op_id}/resolution"

    assert client.post(resolution, json={"outcome": "committed", "note": "x"}).status_code == 401
    forbidden = client.post(resolution, json={"outcome": "committed", "note": "x"},
                            headers=SECURITY)
    assert forbidden.status_code == 403
    for body, field in (({"outcome": "committed"}, "note"),
                        ({"outcome": "committed", "note": "   "}, "note"),
                        ({"outcome": "maybe", "note": "checked"}, "outcome"),
                        ({"note": "checked"}, "outcome"),
                        ({"outcome": "failed", "note": "checked", "extra": 1}, "extra")):
        bad = client.post(resolution, json=body, headers=OWNER)
        assert bad.status_code == 400, body
        assert bad.json()["error"]["code"] == "invalid_body"
        assert bad.json()["error"]["field"] == field
    not_json = client.post(resolution, content=b"yes", headers=OWNER)
    assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_json")
    missing = client.post("/v1/operations/op_nobody/resolution",
                          json={"outcome": "failed", "note": "checked"}, headers=OWNER)
    assert missing.status_code == 404

    resolved = client.post(resolution, json={"outcome": "committed",
                                             "note": "the dialler's log shows the call"},
                           headers=OWNER)
    assert resolved.status_code == 200, resolved.text
    body = resolved.json()
    assert (body["status"], body["reason_code"]) == ("committed", "operator_resolved")
    assert body["receipt"]["operator"] == "olga"
    again = client.post(resolution, json={"outcome": "failed", "note": "oops"}, headers=OWNER)
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "not_unknown"
    assert _unresolved(client) == []

    [listed] = client.get(f"/v1/operations?session_id={unknown['session_id']}",
                          headers=ADMIN).json()["items"]
    assert (listed["status"], listed["reason_code"]) == ("committed", "operator_resolved")
    followups = client.get(f"/v1/followups?session_id={unknown['session_id']}",
                           headers=ADMIN).json()["items"]
    assert [(f["id"], f["channel"], f["status"], f["timezone"]) for f in followups] == [
        (body["followup_id"], "task", "task", "UTC")]
    assert op_id in followups[0]["reason"] and "went through" in followups[0]["reason"]
    audit = client.get(f"/v1/audit?session_id={unknown['session_id']}", headers=ADMIN).json()
    assert audit["chain"]["ok"]
    [event] = [e for e in audit["items"] if e["kind"] == "operation.resolved"]
    assert event["actor"] == "operator:olga"
    assert (event["data"]["outcome"], event["data"]["note"], event["data"]["operator"]) == (
        "committed", "the dialler's log shows the call", "olga")

    # no worker of this process (or any other) may claim it again; the server got one call
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    assert client.portal is not None
    assert client.portal.call(runtime.actions.repo.outbox.claim_due, "probe", 10) == []
    assert [c["tool"] for c in _calls(record)] == ["place_call"]
