"""``--tool-approval review`` (SPEC §3, docs/mcp.md "Discovery and pinning"): a tool seen for the
first time is ``pending`` and cannot be called until an operator approves its definition hash; a
call meanwhile is refused ``tool_pending`` and the caller hears a truthful fallback. ``auto``
keeps trust on first use. A profile's ``tool_approval: review`` wins over ``auto``.

End to end through the real composition root (sim runners) against the outbound-dialler fixture
server over stdio, which records every ``tools/call`` it receives."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from tests.support.apps import sim_app
from tests.support.wsclient import ProtocolClient
from vocero.app.cli import build_parser
from vocero.app.settings import settings_from
from vocero.contracts.domain import AgentProfile, McpServerSpec, ProfileMatch, ToolSpec
from vocero.mcp_gateway import GatewaySettings, McpConnections
from vocero.mcp_gateway.model import RemoteTool
from vocero.policy.reasons import explain

SERVER_SCRIPT = Path(__file__).resolve().parents[2] / "fixtures" / "mcp_servers" / "calls_server.py"
ADMIN = {"authorization": "Bearer op-admin-token"}
SCOPE = "followups:write"
SCRIPT = {
    "tts": {"ms_per_char": 1},
    "llm": [
        {"match": r"find (?P<op>\w+)", "tool": "calls.find", "arguments": {"operation_id": "{op}"}},
        {"match": ".*", "reply": "Ask me to find a call."},
    ],
}
CALLER = {"token": "caller-1", "subject": "subject-1", "tenant": "t1", "roles": ["customer"],
          "scopes": [SCOPE]}


def _profile(record: Path, **extra: Any) -> dict[str, Any]:
    return {
        "id": "dialler", "version": "1", "match": {"tenant": "t1"},
        "mcp_servers": {"dialler": {"command": sys.executable, "args": [str(SERVER_SCRIPT)],
                                    "env": {"VOCERO_MCP_RECORD": str(record)}}},
        "tools": [{"name": "calls.find", "server": "dialler", "resolves_to": "lookup_call",
                   "action_class": "read", "required_scopes": [SCOPE]}],
        **extra,
    }


def _calls(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def _listed(client: TestClient) -> None:
    connection = client.app.state.runtime.connections.connection("dialler")  # type: ignore[attr-defined]

    async def bounded() -> None:
        with anyio.fail_after(30):
            await connection.wait_listed(1)

    assert client.portal is not None
    client.portal.call(bounded)


def _ask(client: TestClient, text: str) -> tuple[dict[str, Any], str]:
    """How the call ended (the last ``tool.status.v1``) and what the caller heard."""
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("caller-1")
        pc.send("input.text.v1", {"text": text})
        done = pc.expect("response.completed.v1")
        statuses = [f["data"]["payload"] for f in pc.frames if f["type"].endswith("tool.status.v1")]
        return dict(statuses[-1]), str(done["data"]["payload"]["heard_text"])


def _pin(client: TestClient) -> dict[str, Any]:
    listed = client.get("/v1/tools", headers=ADMIN).json()["items"]
    [pin] = [p for p in listed if (p["server"], p["tool"]) == ("dialler", "lookup_call")]
    return dict(pin)


def test_review_keeps_a_first_seen_tool_pending_until_an_operator_approves_it(
    tmp_path: Path,
) -> None:
    record = tmp_path / "dialler.jsonl"
    with sim_app(tmp_path, _profile(record), [CALLER], SCRIPT,
                 operator_token="op-admin-token", tool_approval="review") as client:
        _listed(client)
        pending = _pin(client)
        assert pending["status"] == "pending"
        assert pending["definition_hash"] == ""  # nothing approved yet
        assert pending["observed_hash"].startswith("sha256:")

        status, heard = _ask(client, "find op_first")
        assert (status["status"], status["reason_code"]) == ("rejected", "tool_pending")
        assert explain("tool_pending") in heard
        assert _calls(record) == [], "nothing reaches the server while the tool is pending"

        approve = "/v1/tools/dialler/lookup_call/approvals"
        wrong = client.post(approve, json={"definition_hash": "sha256:" + "0" * 64},
                            headers=ADMIN)
        assert wrong.status_code == 409
        approved = client.post(approve, json={"definition_hash": pending["observed_hash"]},
                               headers=ADMIN)
        assert approved.status_code == 200, approved.text
        assert approved.json()["status"] == "approved"
        assert approved.json()["definition_hash"] == pending["observed_hash"]

        status, _ = _ask(client, "find op_second")
        assert status["status"] == "committed", status
        [call] = _calls(record)  # the same call now reaches the server, once
        assert call["tool"] == "lookup_call"
        assert call["arguments"]["operation_id"].lower() == "op_second"
        audit = client.get("/v1/audit", headers=ADMIN).json()["items"]
    kinds = [e["kind"] for e in audit]
    assert "mcp.tool_pending" in kinds and "mcp.tool_approved" in kinds
    denied = [e["data"] for e in audit if e["kind"] == "action.denied"]
    assert [d["reason_code"] for d in denied] == ["tool_pending"]
    assert denied[0]["resolved_tool"] == "dialler/lookup_call"


def test_auto_trusts_a_first_seen_tool_as_before(tmp_path: Path) -> None:
    record = tmp_path / "dialler.jsonl"
    with sim_app(tmp_path, _profile(record), [CALLER], SCRIPT,
                 operator_token="op-admin-token") as client:
        _listed(client)
        pin = _pin(client)
        assert (pin["status"], pin["approved_by"]) == ("approved", "first_use")
        status, _ = _ask(client, "find op_auto")
        assert status["status"] == "committed", status
        assert len(_calls(record)) == 1


# ------------------------------------------------------------------------ without a server


def _spec(name: str, server: str) -> ToolSpec:
    return ToolSpec(name=name, server=server, resolves_to="find", action_class="read")


def _bare(profile_id: str, server: str, tool_approval: str) -> AgentProfile:
    return AgentProfile(
        id=profile_id, version="1", match=ProfileMatch(tenant=profile_id),
        mcp_servers={server: McpServerSpec(url=f"http://127.0.0.1:9/{server}")},
        tools=[_spec(f"{server}.find", server)], tool_approval=tool_approval,  # type: ignore[arg-type]
    )


class _Audit:
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        return None


async def _first_sight(connections: McpConnections, server: str) -> str:
    conn = connections.connection(server)
    assert conn is not None
    await conn.pins.observe([RemoteTool(name="find", input_schema={"type": "object"})])
    pin = conn.pins.get("find")
    assert pin is not None
    return pin.status


@pytest.mark.anyio
async def test_a_profile_asking_for_review_wins_over_auto_for_its_servers() -> None:
    profiles = [_bare("strict", "ledger", "review"), _bare("relaxed", "weather", "auto")]
    auto = McpConnections.from_profiles(profiles, audit=_Audit())
    assert await _first_sight(auto, "ledger") == "pending"
    assert await _first_sight(auto, "weather") == "approved"
    review = McpConnections.from_profiles(
        profiles, audit=_Audit(), settings=GatewaySettings(auto_approve_first_seen=False))
    assert await _first_sight(review, "weather") == "pending", "a profile cannot loosen serve"


def test_the_flag_and_its_environment_twin_reach_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def parsed(*argv: str) -> str:
        args = build_parser().parse_args(["serve", *argv])
        return settings_from(args).tool_approval

    monkeypatch.delenv("VOCERO_TOOL_APPROVAL", raising=False)
    assert parsed() == "auto"
    assert parsed("--tool-approval", "review") == "review"
    monkeypatch.setenv("VOCERO_TOOL_APPROVAL", "review")
    assert parsed() == "review"
    assert parsed("--tool-approval", "auto") == "auto"
    with pytest.raises(SystemExit):
        parsed("--tool-approval", "sometimes")
