"""Operator tenancy (SPEC §11 "Operators", docs/operators.md "Tenancy"): an operator sees and acts
only on its tenants. Another tenant's object answers 404, by path and as ``?session_id=``; lists
hold only the operator's tenants' rows, filtered in the query, so pages stay full and in order
while the other tenant's rows interleave; ``platform_admin`` (and the ``--operator-token`` admin)
sees every tenant."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from tests.conftest import DEMO_SCRIPT, write_script
from tests.support.db import migrated_copy
from tests.support.voices import make_wav
from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.contracts.domain import Principal
from vocero.followups.records import Finding, FollowupDraft, new_id
from vocero.policy.gate import ResolvedTool
from vocero.store.repositories import Conversations
from vocero.store.units import UnitEntry, UnitRepository

A, B = "tenant-a", "tenant-b"
OPERATORS = [
    {"token": "a-reader", "name": "ana", "roles": ["security"], "tenants": [A]},
    {"token": "b-reader", "name": "bob", "roles": ["security"], "tenants": [B]},
    {"token": "a-owner", "name": "amy", "roles": ["business_owner"], "tenants": [A]},
    {"token": "a-approver", "name": "abe", "roles": ["business_owner"], "tenants": [A]},
    {"token": "b-owner", "name": "ben", "roles": ["business_owner", "admin"], "tenants": [B]},
    {"token": "both-reader", "name": "bea", "roles": ["security"], "tenants": [A, B]},
    {"token": "platform", "name": "pat", "roles": ["security", "platform_admin"],
     "tenants": [A]},
    {"token": "legacy", "name": "leo", "roles": ["security"]},
]
ROWS = 7
"""Rows of each kind per tenant: at a page size of 3, A's rows span three pages."""


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


AR, BR, ADMIN = bearer("a-reader"), bearer("b-reader"), bearer("op-admin-token")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app for the module (seeding is most of its cost); the tests that change state
    (approvals, voices) touch rows no other test reads."""
    tmp_path = tmp_path_factory.mktemp("tenancy")
    operators = tmp_path / "operators.yaml"
    operators.write_text(yaml.safe_dump(OPERATORS))
    settings = Settings(runners="sim", db=migrated_copy(tmp_path / "vocero.db",
                                                        driver="sqlite+aiosqlite"),
                        sim_script=write_script(tmp_path / "script.yaml", DEMO_SCRIPT),
                        operator_token="op-admin-token", operators=str(operators),
                        followups_tick_s=0)
    with TestClient(create_app(settings)) as client:
        assert client.portal is not None
        client.portal.call(_seed, client.app.state.runtime)  # type: ignore[attr-defined]
        yield client


TOOL = ResolvedTool(name="records.read", server="records", tool="read_record",
                    action_class="read", required_scopes=frozenset(),
                    requires_confirmation=False, idempotent=True, lookup_tool="",
                    timeout_ms=1000)


async def _seed(runtime: Any) -> None:
    """Per tenant, one session (``ses_a``, ``ses_b``) and :data:`ROWS` follow-ups, findings,
    operations and audit events, A's and B's rows alternating in time; one unit per session; one
    audit event of no session."""
    conversations = Conversations(runtime.store)
    for tenant, session_id in ((A, "ses_a"), (B, "ses_b")):
        await conversations.create_session(
            session_id=session_id, tenant_id=tenant, subject_ref=f"sub_{tenant}",
            profile_id="p", profile_version="1")
    for tenant, session_id in ((A, "ses_a"), (B, "ses_b")):  # the oldest operation of each
        await runtime.actions.repo.record_read(
            session_id=session_id, operation_id=f"op_unknown_{session_id}", tool=TOOL,
            principal=Principal(subject_ref=f"sub_{tenant}", tenant_id=tenant, scopes=[]),
            arguments_hash="h", status="unknown", reason="reconciliation_required")
    start = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
    step = 0
    for i in range(ROWS):
        for tenant, session_id in ((A, "ses_a"), (B, "ses_b")):
            at = start + timedelta(minutes=step)
            step += 1
            tag = f"{session_id}_{i}"
            await runtime.followups.store.record(FollowupDraft(
                session_id=session_id, tenant_id=tenant, subject_ref=f"sub_{tenant}",
                when_text=f"at {i}", due_at=at + timedelta(hours=i + 1), timezone="UTC",
                channel="phone", reason=tag, operation_id=new_id("op")), at)
            await runtime.followups.store.add_findings([Finding(
                id=new_id("fnd"), kind="promised_unbooked", session_id=session_id,
                generation_id=tag, text="We'll call you.", at=at)])
            await runtime.actions.repo.record_read(
                session_id=session_id, operation_id=f"op_{tag}", tool=TOOL,
                principal=Principal(subject_ref=f"sub_{tenant}", tenant_id=tenant, scopes=[]),
                arguments_hash="h", status="committed", reason="")
            await runtime.audit.append("test.event", {"tag": tag}, session_id=session_id)
    await runtime.audit.append("auth.denied", {"reason_code": "bad_token"})
    units = UnitRepository(runtime.store)
    for session_id in ("ses_a", "ses_b"):
        await units.record(UnitEntry(
            unit_id=f"unit_{session_id}", session_id=session_id, generation_id="gen",
            turn_id="turn", question_revision=0, index=0, kind="conversational", text="Hello.",
            planned_at=start))


def _pages(client: TestClient, path: str, headers: dict[str, str],
           **query: str) -> list[list[dict[str, Any]]]:
    """Every page of a newest-first list, following ``next``."""
    pages, params = [], dict(query)
    while True:
        response = client.get(path, params=params, headers=headers)
        assert response.status_code == 200, response.text
        body = response.json()
        pages.append(body["items"])
        if "next" not in body:
            return pages
        params = {**query, "cursor": body["next"]}


def _audit(client: TestClient, headers: dict[str, str], **query: str) -> list[list[dict[str,
                                                                                       Any]]]:
    """Every page of ``/v1/audit``, following ``next_after_seq``."""
    pages, after = [], "0"
    while True:
        body = client.get("/v1/audit", params={**query, "after_seq": after},
                          headers=headers).json()
        pages.append(body["items"])
        if "next_after_seq" not in body:
            return pages
        after = str(body["next_after_seq"])


def newest_first(session_id: str) -> list[str]:
    return [f"{session_id}_{i}" for i in range(ROWS - 1, -1, -1)]


SESSION_QUERIES = ["/v1/audit", "/v1/operations", "/v1/followups", "/v1/findings", "/v1/units",
                   "/v1/proposals"]


@pytest.mark.parametrize("path", SESSION_QUERIES)
def test_another_tenants_session_is_404_as_a_query(app: TestClient, path: str) -> None:
    """``?session_id=`` of tenant B's session: 404 for A's operator, as for a session that does
    not exist; B's operator and the platform admin read it."""
    assert app.get(path, params={"session_id": "ses_b"}, headers=AR).status_code == 404
    assert app.get(path, params={"session_id": "ses_none"}, headers=AR).status_code == 404
    assert app.get(path, params={"session_id": "ses_a"}, headers=AR).status_code == 200
    for allowed in (BR, ADMIN, bearer("platform"), bearer("legacy")):
        assert app.get(path, params={"session_id": "ses_b"}, headers=allowed).status_code == 200


def test_another_tenants_session_is_404_by_path(app: TestClient) -> None:
    assert app.get("/v1/sessions/ses_b", headers=AR).status_code == 404
    assert app.get("/v1/sessions/ses_a", headers=AR).json()["identity"]["tenant_id"] == A
    assert app.get("/v1/sessions/ses_b", headers=BR).json()["identity"]["tenant_id"] == B
    assert app.get("/v1/sessions/ses_b", headers=ADMIN).status_code == 200


def test_units_of_the_own_session_are_listed(app: TestClient) -> None:
    units = app.get("/v1/units", params={"session_id": "ses_a"}, headers=AR).json()["items"]
    assert [u["unit_id"] for u in units] == ["unit_ses_a"]


@pytest.mark.parametrize(("path", "key", "query"), [
    ("/v1/followups", "reason", {}),
    ("/v1/followups", "reason", {"status": "scheduled"}),
    ("/v1/findings", "generation_id", {"kind": "promised_unbooked"}),
    ("/v1/operations", "operation_id", {}),
])
def test_lists_hold_only_the_operators_tenants_rows_paged(
    app: TestClient, path: str, key: str, query: dict[str, str]
) -> None:
    """B's rows interleave A's; A's operator pages through full pages of A's rows only (a filter
    after paging would give short or empty pages and lose rows)."""
    strip = (lambda v: v.removeprefix("op_")) if key == "operation_id" else (lambda v: v)
    unknown = path == "/v1/operations"  # one more operation each: the unknown one, oldest
    for headers, session_id in ((AR, "ses_a"), (BR, "ses_b")):
        pages = _pages(app, path, headers, limit="3", **query)
        assert [len(p) for p in pages] == ([3, 3, 2] if unknown else [3, 3, 1])
        assert [strip(row[key]) for p in pages for row in p] == newest_first(session_id) + (
            [f"unknown_{session_id}"] if unknown else [])
    for everyone in (ADMIN, bearer("platform"), bearer("legacy"), bearer("both-reader")):
        rows = [row for p in _pages(app, path, everyone, limit="4", **query) for row in p]
        assert len(rows) == 2 * (ROWS + unknown)


def test_unresolved_operations_stay_within_the_tenant(app: TestClient) -> None:
    """``GET /v1/operations/unresolved`` lists the operator's tenants' only; resolving another
    tenant's answers 404 and leaves it unknown."""
    listed = app.get("/v1/operations/unresolved", headers=AR).json()["items"]
    assert [o["operation_id"] for o in listed] == ["op_unknown_ses_a"]
    everyone = app.get("/v1/operations/unresolved", headers=ADMIN).json()["items"]
    assert {o["operation_id"] for o in everyone} == {"op_unknown_ses_a", "op_unknown_ses_b"}
    refused = app.post("/v1/operations/op_unknown_ses_b/resolution",
                       json={"outcome": "failed", "note": "checked"}, headers=bearer("a-owner"))
    assert refused.status_code == 404
    still = app.get("/v1/operations/unresolved", headers=BR).json()["items"]
    assert [o["operation_id"] for o in still] == ["op_unknown_ses_b"]


def test_sessions_list_holds_only_the_operators_tenants(app: TestClient) -> None:
    listed = app.get("/v1/sessions", headers=AR).json()["items"]
    assert [s["session_id"] for s in listed] == ["ses_a"]
    assert app.get("/v1/sessions", params={"live": "true"}, headers=AR).json() == {"items": []}
    everyone = app.get("/v1/sessions", headers=ADMIN).json()["items"]
    assert {s["session_id"] for s in everyone} == {"ses_a", "ses_b"}


def test_audit_lists_only_the_operators_sessions_events_paged(app: TestClient) -> None:
    """Without ``session_id``: A's sessions' events only, in ``seq`` order, pages full; the event
    of no session (an authentication denial) only for an operator of every tenant."""
    pages = _audit(app, AR, limit="3")
    events = [e for p in pages for e in p]
    assert all(len(p) == 3 for p in pages[:-1])
    assert {e["session_id"] for e in events} == {"ses_a"}
    tags = [e["data"]["tag"] for e in events if e["kind"] == "test.event"]
    assert tags == newest_first("ses_a")[::-1]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    scoped = app.get("/v1/audit", params={"limit": "3"}, headers=AR).json()
    assert scoped["scoped"] is True  # the console then checks each event, the server the links
    assert "scoped" not in app.get("/v1/audit", headers=ADMIN).json()
    admin = [e for p in _audit(app, ADMIN, limit="5") for e in p]
    assert {e["session_id"] for e in admin} == {"ses_a", "ses_b", ""}
    assert "auth.denied" in {e["kind"] for e in admin}
    assert "auth.denied" in {e["kind"] for p in _audit(app, bearer("platform")) for e in p}
    denials = app.get("/v1/denials", headers=AR).json()["items"]
    assert denials == []


def test_followup_approval_stays_within_the_tenant(app: TestClient) -> None:
    assert app.portal is not None
    store = app.app.state.runtime.followups.store  # type: ignore[attr-defined]
    held = {}
    for session_id, headers in (("ses_a", AR), ("ses_b", BR)):
        followup = app.get("/v1/followups", params={"session_id": session_id},
                           headers=headers).json()["items"][0]
        app.portal.call(lambda f=followup: store.move(f["id"], "awaiting_approval",
                                                       now=datetime.now(UTC)))
        held[session_id] = followup["id"]
    a_owner, b_owner = bearer("a-owner"), bearer("b-owner")
    refused = app.post(f"/v1/followups/{held['ses_b']}/approve", json={}, headers=a_owner)
    assert refused.status_code == 404
    assert app.portal.call(store.get, held["ses_b"]).status == "awaiting_approval"
    assert app.post(f"/v1/followups/{held['ses_b']}/approve", json={},
                    headers=b_owner).json()["status"] == "scheduled"
    assert app.post(f"/v1/followups/{held['ses_a']}/approve", json={},
                    headers=a_owner).json()["status"] == "scheduled"


def _voice(voice_id: str, tenant: str) -> dict[str, Any]:
    return {"voice_id": voice_id, "tenant": tenant, "owner": "Brand team",
            "purpose": "Agent voice", "languages": ["en"], "usage_until": "2099-01-01",
            "consent_ref": "consent-1"}


def _version() -> dict[str, str]:
    return {"ref_audio": base64.b64encode(make_wav(1.5)).decode(), "ref_text": "Hello there."}


def test_voices_stay_within_the_tenant_and_four_eyes_hold(app: TestClient) -> None:
    a_owner, a_approver, b_owner = bearer("a-owner"), bearer("a-approver"), bearer("b-owner")
    assert app.post("/v1/voices", json=_voice("voice-b", A), headers=b_owner).status_code == 403
    assert app.post("/v1/voices", json=_voice("voice-a", A), headers=a_owner).status_code == 201
    assert app.post("/v1/voices", json=_voice("voice-b", B), headers=b_owner).status_code == 201
    for voice_id, owner in (("voice-a", a_owner), ("voice-b", b_owner)):
        assert app.post(f"/v1/voices/{voice_id}/versions", json=_version(),
                        headers=owner).status_code == 201
    # tenant A's operators cannot read, extend, approve or revoke B's voice
    assert app.get("/v1/voices/voice-b", headers=a_owner).status_code == 404
    assert app.post("/v1/voices/voice-b/versions", json=_version(),
                    headers=a_owner).status_code == 404
    assert app.post("/v1/voices/voice-b/versions/1/approvals",
                    headers=AR).status_code == 404
    assert app.post("/v1/voices/voice-b/revoke", json={"reason": "x"},
                    headers=AR).status_code == 404
    b_voice = app.get("/v1/voices/voice-b", headers=b_owner).json()
    assert b_voice["status"] != "revoked" and len(b_voice["versions"]) == 1
    assert b_voice["versions"][0]["approvals"] == []
    assert [v["voice_id"] for v in app.get("/v1/voices", headers=a_owner).json()["items"]] == [
        "voice-a"]
    assert {v["voice_id"] for v in app.get("/v1/voices", headers=ADMIN).json()["items"]} == {
        "voice-a", "voice-b"}
    # four eyes within A: two operators with the same role are not enough; a second role is
    assert app.post("/v1/voices/voice-a/versions/1/approvals",
                    headers=a_owner).json()["status"] == "pending"
    assert app.post("/v1/voices/voice-a/versions/1/approvals",
                    headers=a_approver).status_code == 409
    bob = app.post("/v1/voices/voice-a/versions/1/approvals", headers=BR)
    assert bob.status_code == 404  # a security operator of B does not count for A
    assert app.post("/v1/voices/voice-a/versions/1/approvals",
                    headers=AR).json()["status"] == "approved"


@pytest.mark.parametrize("path", ["/v1/tools", "/v1/mcp/authorizations", "/v1/profiles"])
def test_routes_on_what_every_tenant_shares_need_every_tenant(app: TestClient, path: str) -> None:
    """Pinned tools, MCP authorizations and profiles are global: only an operator of every
    tenant reads or changes them."""
    assert app.get(path, headers=AR).status_code == 403
    assert app.get(path, headers=ADMIN).status_code == 200
    assert app.get(path, headers=bearer("platform")).status_code == 200


TENANCY_REVIEWED = {
    ("/v1/sessions", "GET"), ("/v1/sessions/{session_id}", "GET"), ("/v1/audit", "GET"),
    ("/v1/operations", "GET"), ("/v1/operations/unresolved", "GET"), ("/v1/handoffs", "GET"),
    ("/v1/operations/{operation_id}/resolution", "POST"), ("/v1/units", "GET"),
    ("/v1/followups", "GET"), ("/v1/followups/{followup_id}/approve", "POST"),
    ("/v1/findings", "GET"), ("/v1/proposals", "GET"), ("/v1/denials", "GET"),
    ("/v1/voices", "GET"), ("/v1/voices", "POST"), ("/v1/voices/{voice_id}", "GET"),
    ("/v1/voices/{voice_id}/versions", "POST"),
    ("/v1/voices/{voice_id}/versions/{version:int}/approvals", "POST"),
    ("/v1/voices/{voice_id}/revoke", "POST"),
    # global: every tenant required
    ("/v1/tools", "GET"), ("/v1/tools/{server}/{tool}/approvals", "POST"),
    ("/v1/mcp/authorizations", "GET"), ("/v1/profiles", "GET"),
    ("/v1/profiles/{profile_id}/versions", "GET"), ("/v1/profiles/{profile_id}/rollback", "POST"),
    # no tenant's rows
    ("/v1/latency", "GET"), ("/v1/retention", "GET"),
}
"""Every operator route and how it is scoped (docs/operators.md "Tenancy")."""
NOT_OPERATOR_ROUTES = ("/v1/realtime", "/v1/telephony/")
"""Caller and carrier endpoints: no operator token, no operator scope."""


def test_every_operator_route_was_reviewed_for_tenancy(app: TestClient) -> None:
    """A new ``/v1`` operator route fails here until its tenant scoping is decided, written in
    docs/operators.md "Tenancy" and added above."""
    found = {
        (route.path, method)
        for route in app.app.routes  # type: ignore[attr-defined]
        if getattr(route, "path", "").startswith("/v1")
        and not route.path.startswith(NOT_OPERATOR_ROUTES)
        for method in (getattr(route, "methods", None) or {"WEBSOCKET"}) - {"HEAD"}
    }
    assert found == TENANCY_REVIEWED
