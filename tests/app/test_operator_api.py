"""Operator API (SPEC §3): bearer auth, roles, sessions with heard history, audit chain."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.contracts.domain import Principal
from vocero.followups.records import Finding, FollowupDraft, new_id
from vocero.policy.gate import ResolvedTool
from vocero.store.repositories import Conversations

ADMIN = {"authorization": "Bearer op-admin-token"}


def test_health_ready_and_metrics(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.portal is not None
    client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
    ready = client.get("/readyz")
    assert ready.status_code == 200
    runners = ready.json()["runners"]
    assert runners == {"stt": "ready", "llm": "ready", "tts": "ready", "turn": "ready"}
    body = client.get("/metrics").text
    for name in (
        "ttfs_ms",
        "barge_in_stop_ms",
        "llm_ttft_ms",
        "tts_ttfa_ms",
        "stt_final_ms",
        "tool_latency_ms",
        "vocero_sessions_total",
        "vocero_denials_total",
    ):
        assert name in body


@pytest.mark.parametrize("path", ["/v1/sessions/ses_x", "/v1/audit", "/v1/operations"])
def test_operator_routes_need_a_bearer_token(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 401
    assert client.get(path, headers={"authorization": "Bearer wrong"}).status_code == 401
    assert client.get(path, headers={"authorization": "Basic op-admin-token"}).status_code == 401


def test_roles_gate_routes(sim_settings: Settings, tmp_path: Path) -> None:
    operators = tmp_path / "operators.yaml"
    operators.write_text(
        yaml.safe_dump(
            [
                {"token": "sec-token", "name": "sam", "roles": ["security"]},
                {"token": "viewer-token", "name": "vic", "roles": ["viewer"]},
            ]
        )
    )
    from dataclasses import replace

    with TestClient(create_app(replace(sim_settings, operators=str(operators)))) as c:
        assert (
            c.get("/v1/audit", headers={"authorization": "Bearer viewer-token"}).status_code == 403
        )
        assert c.get("/v1/audit", headers={"authorization": "Bearer sec-token"}).status_code == 200


def test_session_history_holds_what_was_heard(client: TestClient) -> None:
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect()
        pc.auto_playout = False
        pc.send("input.text.v1", {"text": "tell me a story"})
        audio = pc.expect("response.audio_delta.v1")["data"]["payload"]
        pc.send(
            "output.playout_progress.v1",
            {"generation_id": audio["generation_id"], "played_ms": 600, "buffered_ms": 0},
        )
        pc.expect("response.audio_delta.v1")
        pc.send("input.speech_started.v1")
        stop_seen = pc.expect("output.stop_and_flush.v1")
        done = pc.expect("response.completed.v1")["data"]["payload"]
        after = pc.frames[pc.frames.index(stop_seen) + 1 :]
        assert not [
            f
            for f in after
            if f["type"] in ("vocero.response.audio_delta.v1", "vocero.response.text_delta.v1")
        ]
        assert done["status"] == "interrupted"
        assert done["heard_text"] and "story" not in done["heard_text"][-6:]
    session = client.get(f"/v1/sessions/{pc.session_id}", headers=ADMIN).json()
    assert session["identity"]["subject_ref"].startswith("sub_")
    assert "alice" not in str(session)
    assert session["history"] == [
        {"role": "user", "text": "tell me a story", "generation_id": "", "status": ""},
        {
            "role": "assistant",
            "text": done["heard_text"],
            "generation_id": done["generation_id"],
            "status": "interrupted",
        },
    ]


def test_unknown_session_is_404(client: TestClient) -> None:
    assert client.get("/v1/sessions/ses_nope", headers=ADMIN).status_code == 404


def test_audit_chain_verifies_and_links(client: TestClient) -> None:
    with client.websocket_connect("/v1/realtime") as ws:
        ProtocolClient(ws).connect()
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.send("session.connect.v1", {"token": "bad"})
        pc.expect_close()
    body = client.get("/v1/audit", headers=ADMIN).json()
    items = body["items"]
    assert body["chain"]["ok"] is True
    assert [i["seq"] for i in items] == sorted(i["seq"] for i in items)
    for earlier, later in itertools.pairwise(items):
        assert later["prev_hash"] == earlier["hash"]
    kinds = [i["kind"] for i in items]
    assert "session.opened" in kinds and "session.auth_denied" in kinds
    assert "bad" not in str([i["data"] for i in items])


def test_tool_pins_are_listed_and_review_is_guarded(client: TestClient) -> None:
    assert client.portal is not None
    client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
    listed = client.get("/v1/tools", headers=ADMIN).json()["items"]
    pinned = {(p["server"], p["tool"]): p for p in listed}
    assert pinned[("orders", "get_order_status")]["status"] == "approved"
    assert ("admin", "delete_account") not in pinned, "prohibited tools are never connected"
    approve = "/v1/tools/orders/get_order_status/approvals"
    body = {"definition_hash": "0" * 64}
    assert client.post(approve, json=body).status_code == 401
    missing = client.post("/v1/tools/nope/x/approvals", json=body, headers=ADMIN)
    assert missing.status_code == 404
    nothing_pending = client.post(approve, json=body, headers=ADMIN)
    assert nothing_pending.status_code == 409
    assert nothing_pending.json() == {"error": "no_pending_definition"}


# --------------------------------------------------------------------------------- paging


def _pages(client: TestClient, path: str, **query: str) -> list[list[dict[str, Any]]]:
    """Every page of a newest-first list, following ``next`` until the last page."""
    pages, params = [], dict(query)
    while True:
        body = client.get(path, params=params, headers=ADMIN).json()
        pages.append(body["items"])
        if "next" not in body:
            return pages
        params = {**query, "cursor": body["next"]}


async def _seed(runtime: Any, session_id: str, count: int) -> None:
    """``count`` follow-ups, findings and read operations of one session, a minute apart."""
    await Conversations(runtime.store).create_session(
        session_id=session_id, tenant_id="acme", subject_ref="sub_pages", profile_id="demo",
        profile_version="1")
    start = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
    tool = ResolvedTool(name="orders.status", server="orders", tool="get_order_status",
                        action_class="read", required_scopes=frozenset(),
                        requires_confirmation=False, idempotent=True, lookup_tool="",
                        timeout_ms=1000)
    for i in range(count):
        at = start + timedelta(minutes=i)
        await runtime.followups.store.record(FollowupDraft(
            session_id=session_id, tenant_id="acme", subject_ref="sub_pages",
            when_text=f"at {i}", due_at=at + timedelta(hours=i + 1), timezone="UTC",
            channel="task", reason=f"task {i}", operation_id=new_id("op")), at)
        await runtime.followups.store.add_findings([Finding(
            id=new_id("fnd"), kind="promised_unbooked", session_id=session_id,
            generation_id=f"gen_{i}", text=f"We'll call you {i}.", at=at)])
        await runtime.actions.repo.record_read(
            session_id=session_id, operation_id=f"op_page_{i:02d}", tool=tool,
            principal=Principal(subject_ref="sub_pages", tenant_id="acme", scopes=[]),
            arguments_hash="h", status="committed", reason="")


def test_lists_are_paged_newest_first_with_a_next_cursor(client: TestClient) -> None:
    """``/v1/followups``, ``/v1/findings`` and ``/v1/operations`` (with or without
    ``session_id``): the newest first, ``limit`` a page, ``next`` until the last page, filters
    kept; before, the 500 oldest came back and the newest were out of sight."""
    assert client.portal is not None
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    client.portal.call(_seed, runtime, "ses_pages", 7)
    followups = _pages(client, "/v1/followups", session_id="ses_pages", limit="3")
    assert [len(p) for p in followups] == [3, 3, 1]
    assert [f["reason"] for p in followups for f in p] == [f"task {i}" for i in range(6, -1, -1)]
    by_status = _pages(client, "/v1/followups", status="task", limit="5")
    assert [f["reason"] for p in by_status for f in p] == [f"task {i}" for i in range(6, -1, -1)]
    findings = _pages(client, "/v1/findings", kind="promised_unbooked", limit="2")
    assert [len(p) for p in findings] == [2, 2, 2, 1]
    assert [f["generation_id"] for p in findings for f in p] == [
        f"gen_{i}" for i in range(6, -1, -1)]
    for query in ({"session_id": "ses_pages"}, {}):
        operations = _pages(client, "/v1/operations", limit="4", **query)
        assert [len(p) for p in operations] == [4, 3]
        listed = [o["operation_id"] for p in operations for o in p]
        assert listed == [f"op_page_{i:02d}" for i in range(6, -1, -1)]
    default = client.get("/v1/operations", headers=ADMIN).json()
    assert len(default["items"]) == 7 and "next" not in default
    assert client.get("/v1/findings", params={"session_id": "ses_other"},
                      headers=ADMIN).json() == {"items": []}
