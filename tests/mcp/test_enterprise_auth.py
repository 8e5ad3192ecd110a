"""Enterprise-managed authorization (SEP-990) and the jwt-bearer grant (RFC 7523), docs/mcp.md
"Enterprise-managed authorization", docs/adr/0027 addendum.

Per caller (``auth: {enterprise: ...}``): each caller's JWT is exchanged at a real local IdP
(``tests/support/idp.py``) for an ID-JAG, which its ``/as/token`` (the MCP server's
authorization server) takes as a jwt-bearer grant; the bookings fixture server checks every
call's bearer by introspection and records it. Server-level (``oauth: {grant: jwt_bearer}`` /
``identity_assertion``): the SDK's flow through :class:`AuthGuard` against an in-process
resource server, authorization server and IdP (``httpx2.MockTransport``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl

import httpx2
import pytest
from bookings_support import IdpBookings, booking_request, delegated_gateway, idp_bookings, remember
from gateway_support import RecordingAudit, records

from tests.support.idp import (
    AS_CLIENT_ID,
    AS_CLIENT_SECRET,
    AS_ISSUER,
    CLIENT_ID,
    CLIENT_SECRET,
    ID_JAG,
    JWT_BEARER,
)
from vocero.contracts.domain import (
    EnterpriseAuthSpec,
    McpOAuthSpec,
    McpServerAuth,
    McpServerSpec,
    Principal,
)
from vocero.mcp_gateway import CallerCredentials, DelegationUnavailable, McpGateway
from vocero.mcp_gateway.oauth import (
    AuthGuard,
    InMemoryOAuthTokenRepository,
    SealedTokenStorage,
)
from vocero.mcp_gateway.oauth_grants import build_auth

pytestmark = [pytest.mark.anyio, pytest.mark.process]

IDP_ENV = "BOOKINGS_IDP_SECRET"
AS_ENV = "BOOKINGS_AS_SECRET"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ALICE = Principal(subject_ref="sub_alice", tenant_id="acme", scopes=["bookings:read"])
BRUNO = Principal(subject_ref="sub_bruno", tenant_id="acme", scopes=["bookings:read"])


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdpBookings]:
    with idp_bookings(tmp_path_factory.mktemp("enterprise")) as world:
        yield world


def gateway(
    w: IdpBookings, credentials: CallerCredentials, monkeypatch: pytest.MonkeyPatch
) -> AbstractAsyncContextManager[tuple[McpGateway, RecordingAudit]]:
    monkeypatch.setenv(IDP_ENV, CLIENT_SECRET)
    monkeypatch.setenv(AS_ENV, AS_CLIENT_SECRET)
    enterprise = EnterpriseAuthSpec(
        idp_token_url=w.idp.token_url, idp_client_id=CLIENT_ID, idp_client_secret_env=IDP_ENV,
        issuer=AS_ISSUER, token_url=w.idp.as_token_url, scope="bookings:read",
        client_id=AS_CLIENT_ID, client_secret_env=AS_ENV,
    )  # fmt: skip
    auth = McpServerAuth(enterprise=enterprise)
    return delegated_gateway(w, auth, credentials, session_id="ses_enterprise")


async def test_each_caller_gets_its_own_id_jag_and_access_token(
    w: IdpBookings, monkeypatch: pytest.MonkeyPatch
) -> None:
    w.idp.fail_exchange = w.idp.fail_grant = ""
    legs1, legs2 = len(w.idp.exchanges), len(w.idp.grants)
    credentials = CallerCredentials()
    alice_jwt, bruno_jwt = w.idp.token(sub="alice"), w.idp.token("ES256", sub="bruno")
    remember(credentials, ALICE, alice_jwt)
    remember(credentials, BRUNO, bruno_jwt)
    async with gateway(w, credentials, monkeypatch) as (gw, audit):
        for n, who in enumerate([ALICE, BRUNO, ALICE, BRUNO]):
            result = await gw.call(booking_request(
                "bookings.slots", {"day": f"d{n}"}, operation_id=f"op_ent_{n}", principal=who))
            assert result.content["day"] == f"d{n}"
    exchanges, grants = w.idp.exchanges[legs1:], w.idp.grants[legs2:]
    assert len(exchanges) == len(grants) == 2  # once per caller, then cached
    by_op = {c["operation_id"]: c["bearer"] for c in w.calls()}
    assert by_op["op_ent_0"] == by_op["op_ent_2"] != by_op["op_ent_1"] == by_op["op_ent_3"]
    assert w.idp.issued[by_op["op_ent_0"]]["sub"] == "alice"
    assert w.idp.issued[by_op["op_ent_1"]]["sub"] == "bruno"
    # leg 1: the caller's own JWT, as an ID token, for an ID-JAG for the configured AS
    leg1 = {e.form["subject_token"]: e for e in exchanges}
    assert set(leg1) == {alice_jwt, bruno_jwt}
    for e in exchanges:
        assert e.client == (CLIENT_ID, CLIENT_SECRET)
        assert e.form["grant_type"] == TOKEN_EXCHANGE
        assert e.form["requested_token_type"] == ID_JAG
        assert e.form["subject_token_type"] == "urn:ietf:params:oauth:token-type:id_token"
        assert (e.form["audience"], e.form["resource"]) == (AS_ISSUER, w.server.url)
    # leg 2: that caller's ID-JAG as the jwt-bearer assertion, the client authenticated
    alice_grant = next(g for g in grants if g.issued == by_op["op_ent_0"])
    assert alice_grant.form["assertion"] == leg1[alice_jwt].issued
    assert all(g.form["grant_type"] == JWT_BEARER for g in grants)
    assert all(g.client == (AS_CLIENT_ID, AS_CLIENT_SECRET) for g in grants)
    listed = [h for h in records(w.folder / "headers.jsonl") if h["body_method"] != "tools/call"]
    assert listed and all(h["authorization"] == "" for h in listed)
    seen = json.dumps(audit.events)
    secrets = [*by_op.values(), CLIENT_SECRET, AS_CLIENT_SECRET, alice_jwt]
    assert not any(value in seen for value in secrets)


@pytest.mark.parametrize(
    "failure", ["idp_refused", "as_refused", "no_caller_jwt", "as_secret_missing"]
)
async def test_a_failed_enterprise_flow_sends_nothing_to_the_server(
    w: IdpBookings, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    credentials = CallerCredentials()
    if failure != "no_caller_jwt":
        remember(credentials, ALICE, w.idp.token(sub=f"alice-{failure}"))
    w.idp.fail_exchange = "http_error" if failure == "idp_refused" else ""
    w.idp.fail_grant = "invalid_grant" if failure == "as_refused" else ""
    grants = len(w.idp.grants)
    operation = f"op_ent_fail_{failure}"
    async with gateway(w, credentials, monkeypatch) as (gw, audit):
        if failure == "as_secret_missing":
            monkeypatch.delenv(AS_ENV)
        with pytest.raises(DelegationUnavailable) as caught:
            await gw.call(booking_request(
                "bookings.slots", {"day": "mon"}, operation_id=operation, principal=ALICE))
    w.idp.fail_exchange = w.idp.fail_grant = ""
    assert caught.value.reason_code == "authorization_unavailable"
    assert caught.value.possibly_executed is False
    assert [c for c in w.calls() if c["operation_id"] == operation] == []
    # a refused leg 1 never reaches the authorization server; a refused grant is not retried
    assert len(w.idp.grants) - grants == (1 if failure == "as_refused" else 0)
    assert [f["reason_code"] for f in audit.of("mcp.delegation_failed")] == [
        "authorization_unavailable"
    ]


# --------------------------------------------------------------- server-level grants

MCP_URL = "http://mcp.test/mcp"
AS_URL = "http://as.test"
IDP_URL = "http://idp.test"


@dataclass
class Servers:
    """A resource server that wants ``good-token``, its authorization server, an IdP."""

    grant_answer: int = 200
    seen: list[tuple[str, dict[str, str], str]] = field(default_factory=list)
    """(url, form, authorization) of every token-endpoint request."""
    mcp_bearers: list[str] = field(default_factory=list)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url)
        if url.startswith(MCP_URL):
            bearer = request.headers.get("authorization", "")
            self.mcp_bearers.append(bearer)
            if bearer == "Bearer good-token":
                return httpx2.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})
            challenge = 'Bearer resource_metadata="http://mcp.test/.well-known/oauth-protected-resource/mcp"'
            return httpx2.Response(401, headers={"www-authenticate": challenge})
        if url == "http://mcp.test/.well-known/oauth-protected-resource/mcp":
            return httpx2.Response(200, json={"resource": MCP_URL,
                                              "authorization_servers": [AS_URL]})
        if url.startswith(f"{AS_URL}/.well-known/"):
            return httpx2.Response(200, json={
                "issuer": AS_URL, "token_endpoint": f"{AS_URL}/token",
                "authorization_endpoint": f"{AS_URL}/authorize",
                "response_types_supported": ["code"],
                "grant_types_supported": [JWT_BEARER],
            })  # fmt: skip
        form = dict(parse_qsl(request.content.decode()))
        self.seen.append((url, form, request.headers.get("authorization", "")))
        if url == f"{IDP_URL}/token":
            return httpx2.Response(200, json={"access_token": "the-id-jag",
                                              "issued_token_type": ID_JAG, "token_type": "N_A"})
        if url == f"{AS_URL}/token" and self.grant_answer == 200:
            return httpx2.Response(200, json={"access_token": "good-token",
                                              "token_type": "Bearer", "expires_in": 600})
        return httpx2.Response(400, json={"error": "invalid_grant"})


def guard_for(
    oauth: McpOAuthSpec, environ: dict[str, str], servers: Servers
) -> tuple[AuthGuard, list[str]]:
    failures: list[str] = []
    storage = SealedTokenStorage("wif", InMemoryOAuthTokenRepository(), _Plain())
    spec = McpServerSpec(url=MCP_URL, oauth=oauth)
    guard = build_auth("wif", spec, storage, consent=None, on_failure=failures.append,
                       environ=environ,
                       idp_transport=httpx2.MockTransport(servers.handle))  # fmt: skip
    return guard, failures


class _Plain:
    def seal_text(self, text: str, context: str) -> str:
        return text

    def open_text(self, sealed: str, context: str) -> str:
        return sealed


async def _post(guard: AuthGuard, servers: Servers) -> httpx2.Response:
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(servers.handle),
                                  auth=guard) as http:  # fmt: skip
        return await http.post(MCP_URL, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


async def test_the_workload_jwt_from_its_file_is_the_grant_of_a_public_client(
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "workload.jwt"
    token_file.write_text("workload-jwt-1\n")
    oauth = McpOAuthSpec(grant="jwt_bearer", client_id="vocero-workload", issuer=AS_URL,
                         assertion_file=str(token_file))  # fmt: skip
    servers = Servers()
    guard, failures = guard_for(oauth, {}, servers)
    assert (await _post(guard, servers)).status_code == 200
    assert servers.mcp_bearers[-1] == "Bearer good-token" and failures == []
    [(url, form, authorization)] = servers.seen
    assert url == f"{AS_URL}/token" and authorization == ""  # a public client
    assert form["grant_type"] == JWT_BEARER and form["assertion"] == "workload-jwt-1"
    assert form["client_id"] == "vocero-workload" and "client_secret" not in form
    assert form["resource"] == MCP_URL


async def test_a_refused_workload_grant_is_neither_retried_nor_replaced(tmp_path: Path) -> None:
    oauth = McpOAuthSpec(grant="jwt_bearer", client_id="vocero-workload", issuer=AS_URL,
                         assertion_env="WORKLOAD_JWT")  # fmt: skip
    servers = Servers(grant_answer=400)
    environ = {"WORKLOAD_JWT": "expired-jwt"}
    guard, failures = guard_for(oauth, environ, servers)
    assert (await _post(guard, servers)).status_code == 400  # the refusal is the answer
    assert (await _post(guard, servers)).status_code >= 400  # a reconnect: not presented again
    assert [form["grant_type"] for _, form, _ in servers.seen] == [JWT_BEARER]
    assert "Bearer good-token" not in servers.mcp_bearers
    assert failures == ["server_auth_failed"] * 2 and guard.last_failure == "server_auth_failed"
    environ["WORKLOAD_JWT"] = "rotated-jwt"  # a new workload token is presented
    servers.grant_answer = 200
    assert (await _post(guard, servers)).status_code == 200
    assert [form["assertion"] for _, form, _ in servers.seen] == ["expired-jwt", "rotated-jwt"]


async def test_a_missing_workload_jwt_fails_closed_before_any_token_request() -> None:
    oauth = McpOAuthSpec(grant="jwt_bearer", client_id="vocero-workload", issuer=AS_URL,
                         assertion_env="WORKLOAD_JWT")  # fmt: skip
    servers = Servers()
    guard, failures = guard_for(oauth, {}, servers)
    assert (await _post(guard, servers)).status_code == 401
    assert servers.seen == [] and failures == ["server_auth_failed"]


async def test_vocero_s_own_id_token_becomes_an_id_jag_then_a_jwt_bearer_grant() -> None:
    oauth = McpOAuthSpec(
        grant="identity_assertion", client_id="vocero-at-as", client_secret_env="AS_SECRET",
        issuer=AS_URL, assertion_env="VOCERO_ID_TOKEN", idp_token_url=f"{IDP_URL}/token",
        idp_client_id="vocero-at-idp",
    )  # fmt: skip
    servers = Servers()
    guard, failures = guard_for(
        oauth, {"AS_SECRET": "s3cret", "VOCERO_ID_TOKEN": "id-token"}, servers
    )
    assert (await _post(guard, servers)).status_code == 200
    assert failures == []
    [(idp_url, leg1, _), (as_url, leg2, authorization)] = servers.seen
    assert idp_url == f"{IDP_URL}/token" and as_url == f"{AS_URL}/token"
    assert (leg1["grant_type"], leg1["requested_token_type"]) == (TOKEN_EXCHANGE, ID_JAG)
    assert (leg1["subject_token"], leg1["audience"], leg1["resource"]) == (
        "id-token", AS_URL, MCP_URL)
    assert leg1["client_id"] == "vocero-at-idp"
    assert (leg2["grant_type"], leg2["assertion"]) == (JWT_BEARER, "the-id-jag")
    assert authorization.startswith("Basic ")
