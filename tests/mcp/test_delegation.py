"""Delegated credentials (SPEC §11, docs/adr/0027): each caller's JWT is exchanged (RFC 8693) at
a real local identity provider (``tests/support/idp.py``) and the result rides only on that
caller's ``tools/call``. The bookings fixture server checks every call's bearer by introspection
at the provider and records the bearer it received (``VOCERO_MCP_CALL_INTROSPECT``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from bookings_support import IdpBookings, booking_request, delegated_gateway, idp_bookings, remember
from gateway_support import RecordingAudit, records

from tests.support.idp import CLIENT_ID, CLIENT_SECRET
from vocero.contracts.domain import McpServerAuth, Principal, TokenExchangeSpec
from vocero.mcp_gateway import CallerCredentials, DelegationUnavailable, McpGateway

pytestmark = [pytest.mark.anyio, pytest.mark.process]

SECRET_ENV = "BOOKINGS_EXCHANGE_SECRET"
ALICE = Principal(subject_ref="sub_alice", tenant_id="acme",
                  scopes=["bookings:read", "bookings:write"])  # fmt: skip
BRUNO = Principal(subject_ref="sub_bruno", tenant_id="acme",
                  scopes=["bookings:read", "bookings:write"])  # fmt: skip


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdpBookings]:
    """One provider and one server for the module (a server takes a second or more to start);
    each test uses operation ids of its own."""
    with idp_bookings(tmp_path_factory.mktemp("delegation")) as world:
        yield world


def gateway(
    w: IdpBookings, credentials: CallerCredentials, monkeypatch: pytest.MonkeyPatch
) -> AbstractAsyncContextManager[tuple[McpGateway, RecordingAudit]]:
    monkeypatch.setenv(SECRET_ENV, CLIENT_SECRET)
    exchange = TokenExchangeSpec(
        token_url=w.idp.token_url, audience="bookings-api", scope="bookings:read bookings:write",
        client_id=CLIENT_ID, client_secret_env=SECRET_ENV,
    )
    auth = McpServerAuth(token_exchange=exchange)
    return delegated_gateway(w, auth, credentials, session_id="ses_delegation")


async def test_two_callers_calls_carry_their_own_exchanged_tokens(
    w: IdpBookings, monkeypatch: pytest.MonkeyPatch
) -> None:
    w.idp.fail_exchange = ""
    exchanged_before = len(w.idp.exchanges)
    credentials = CallerCredentials()
    remember(credentials, ALICE, w.idp.token(sub="alice"))
    remember(credentials, BRUNO, w.idp.token("ES256", sub="bruno"))
    async with gateway(w, credentials, monkeypatch) as (gw, audit):
        for n, who in enumerate([ALICE, BRUNO, ALICE, BRUNO]):
            result = await gw.call(booking_request(
                "bookings.slots", {"day": f"d{n}"}, operation_id=f"op_two_{n}", principal=who))
            assert result.content["day"] == f"d{n}"
    exchanges = w.idp.exchanges[exchanged_before:]
    assert len(exchanges) == 2  # one per caller, then cached
    by_op = {c["operation_id"]: c["bearer"] for c in w.calls()}
    assert by_op["op_two_0"] == by_op["op_two_2"] and by_op["op_two_1"] == by_op["op_two_3"]
    assert by_op["op_two_0"] != by_op["op_two_1"]
    assert w.idp.issued[by_op["op_two_0"]]["sub"] == "alice"
    assert w.idp.issued[by_op["op_two_1"]]["sub"] == "bruno"
    form = next(e.form for e in exchanges if e.issued == by_op["op_two_0"])
    assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange"
    assert form["subject_token_type"] == "urn:ietf:params:oauth:token-type:jwt"
    assert (form["audience"], form["scope"]) == ("bookings-api", "bookings:read bookings:write")
    assert all(e.client == (CLIENT_ID, CLIENT_SECRET) for e in exchanges)
    listed = [h for h in records(w.folder / "headers.jsonl") if h["body_method"] != "tools/call"]
    assert listed and all(h["authorization"] == "" for h in listed)  # never on listings
    seen = json.dumps(audit.events)
    assert not any(token in seen for token in [*by_op.values(), CLIENT_SECRET])


@pytest.mark.parametrize("failure", ["http_error", "bad_json", "no_token", "no_caller_jwt"])
async def test_a_failed_exchange_sends_nothing_to_the_server(
    w: IdpBookings, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    credentials = CallerCredentials()
    w.idp.fail_exchange = ""
    if failure != "no_caller_jwt":  # a caller of the identities file holds no JWT
        remember(credentials, ALICE, w.idp.token(sub="alice"))
        w.idp.fail_exchange = failure
    operation = f"op_fail_{failure}"
    async with gateway(w, credentials, monkeypatch) as (gw, audit):
        with pytest.raises(DelegationUnavailable) as caught:
            await gw.call(booking_request(
                "bookings.order", {"item": "tea", "quantity": 1}, operation_id=operation,
                principal=ALICE))
    w.idp.fail_exchange = ""
    assert caught.value.reason_code == "authorization_unavailable"
    assert caught.value.possibly_executed is False
    # no request, so no credential (the caller's or a shared one), reached the server
    assert [c for c in w.calls() if c["operation_id"] == operation] == []
    failed = audit.of("mcp.delegation_failed")
    assert [f["reason_code"] for f in failed] == ["authorization_unavailable"]
    assert audit.of("mcp.tool_call")[-1]["reason"] == "authorization_unavailable"


def test_a_jwt_callers_session_calls_with_its_exchanged_token_and_a_file_caller_fails_closed(
    w: IdpBookings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole path through ``serve``'s composition root: the JWT a caller connected with is
    what the gateway exchanges for its session's tool call."""
    from tests.support.apps import sim_app
    from tests.support.idp import AUDIENCE, ISSUER
    from tests.support.wsclient import ProtocolClient

    monkeypatch.setenv(SECRET_ENV, CLIENT_SECRET)
    w.idp.fail_exchange = ""
    exchange = {"token_url": w.idp.token_url, "audience": "bookings-api", "scope": "bookings:read",
                "client_id": CLIENT_ID, "client_secret_env": SECRET_ENV}  # fmt: skip
    plan = {
        "id": "delegated", "version": "1", "match": {"tenant": "acme", "roles": ["customer"]},
        "instructions": "Answer briefly.",
        "mcp_servers": {"bookings": {"url": w.server.url,
                                     "auth": {"token_exchange": exchange}}},
        "tools": [{"name": "bookings.slots", "server": "bookings", "resolves_to": "find_slots",
                   "action_class": "read", "required_scopes": ["bookings:read"],
                   "idempotent": True}],
    }  # fmt: skip
    script = {"llm": [
        {"match": r"slots on (?P<day>\w+)", "tool": "bookings.slots",
         "arguments": {"day": "{day}"}, "reply": "Free on {result.day}."},
        {"match": ".*", "reply": "Hello."},
    ]}  # fmt: skip
    callers = [{"token": "file-caller-token", "subject": "filed", "tenant": "acme",
                "roles": ["customer"], "scopes": ["bookings:read"]}]  # fmt: skip
    jwt = w.idp.token(sub="session-caller", scope="bookings:read")

    def ask(client: Any, token: str, day: str) -> tuple[str, list[dict[str, Any]]]:
        with client.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            pc.connect(token)
            pc.send("input.text.v1", {"text": f"slots on {day}"})
            pc.expect("response.completed.v1")
            texts = "".join(d["text"] for d in pc.of_type("response.text_delta.v1"))
            pc.send("session.close.v1")
            pc.expect_close()
        return texts, pc.of_type("tool.status.v1")

    with sim_app(tmp_path, plan, callers, script, caller_jwks=w.idp.jwks_url,
                 caller_issuer=ISSUER, caller_audience=AUDIENCE,
                 operator_token="op-test") as client:  # fmt: skip
        before, exchanged = len(w.calls()), len(w.idp.exchanges)
        said, _ = ask(client, jwt, "tuesday")
        assert "Free on tuesday" in said
        sent = w.calls()[before:]
        assert len(sent) == 1 and w.idp.issued[sent[0]["bearer"]]["sub"] == "session-caller"
        _, statuses = ask(client, "file-caller-token", "friday")  # no JWT: nothing to exchange
        # the caller's client is told the lookup was refused and why (a real model reads the
        # same status in the tool message; the simulator only fills its template)
        assert [(s["status"], s["reason_code"]) for s in statuses][-1:] == [
            ("rejected", "authorization_unavailable")
        ]
        assert len(w.calls()) == before + 1  # the file caller's call never reached the server
        audit = client.get("/v1/audit", headers={"authorization": "Bearer op-test"}).json()
        failed = [e["data"] for e in audit["items"] if e["kind"] == "mcp.delegation_failed"]
        assert failed == [{"server": "bookings", "reason_code": "authorization_unavailable",
                           "cause": "no_caller_jwt", "tenant_id": "acme",
                           "subject_ref": failed[0]["subject_ref"]}]  # once: not retried
        assert jwt not in json.dumps(audit) and "file-caller-token" not in json.dumps(audit)
    assert len(w.idp.exchanges) == exchanged + 1
