"""OAuth 2.1 for streamable-HTTP servers against a local authorization server fixture
(``fixtures/mcp_servers/oauth_server.py``) and the bookings server as resource server: client
credentials, step-up, expiry and refresh, a revoked client, the authorization-code grant with
PKCE, tokens sealed at rest and never in audit or logs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from bookings_support import booking_request, booking_tools, calls
from gateway_support import Stack, gateway_stack, records
from oauth_support import ENV, KEY, Servers, oauth_servers
from structlog.testing import capture_logs

from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import McpOAuthSpec
from vocero.contracts.errors import ErrorCode
from vocero.mcp_gateway import (
    AuthOptions,
    ConsentResult,
    InMemoryConsentRepository,
    InMemoryOAuthTokenRepository,
    OperatorConsent,
    PendingConsent,
    ServerAuthError,
    public_error,
)
from vocero.mcp_gateway.oauth import SealedTokenStorage
from vocero.voice_vault import VaultCipher

pytestmark = pytest.mark.anyio


def client_credentials(issuer: str, scopes: list[str] | None = None) -> McpOAuthSpec:
    return McpOAuthSpec(
        grant="client_credentials",
        client_id="vocero-gateway",
        client_secret_env="BOOKINGS_CLIENT_SECRET",
        issuer=issuer,
        scopes=scopes if scopes is not None else ["bookings:read"],
    )


@asynccontextmanager
async def stack_for(
    servers: Servers,
    oauth: McpOAuthSpec,
    *,
    repository: InMemoryOAuthTokenRepository | None = None,
    protocol: str = "auto",
    consent: Any = None,
    operator: OperatorConsent | None = None,
    clock: VirtualClock | None = None,
) -> AsyncIterator[Stack]:
    auth = AuthOptions(
        sealer=VaultCipher(KEY),
        repository=repository if repository is not None else InMemoryOAuthTokenRepository(),
        consent=consent,
        operator=operator,
        environ=ENV,
    )
    async with gateway_stack(
        "http",
        {},
        tools=booking_tools(),
        protocol=protocol,
        http={"bookings": servers.bookings},
        oauth={"bookings": oauth},
        auth=auth,
        **({"clock": clock} if clock is not None else {}),
    ) as stack:
        yield stack


async def _token_of(repository: InMemoryOAuthTokenRepository) -> dict[str, Any]:
    storage = SealedTokenStorage("bookings", repository, VaultCipher(KEY))
    tokens = await storage.get_tokens()
    assert tokens is not None
    return tokens.model_dump()


@pytest.mark.parametrize("protocol", ["auto", "2025-11-25"])
async def test_client_credentials_step_up_and_sealed_tokens(
    protocol: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repository = InMemoryOAuthTokenRepository()
    with oauth_servers(tmp_path) as servers:
        oauth = client_credentials(servers.issuer)
        async with stack_for(servers, oauth, repository=repository, protocol=protocol) as stack:
            conn = stack.connections.connection("bookings")
            assert conn is not None and conn.state == "connected"
            read = await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
            assert read.content["day"] == "d"
            # a write needs bookings:write: 403 insufficient_scope, re-authorized with both
            wrote = await stack.gateway.call(
                booking_request("bookings.order", {"item": "tea", "quantity": 1})
            )
            assert wrote.content["status"] == "committed"
            grants = await servers.admin("/admin/grants")
        assert [(g["grant"], g["scope"]) for g in grants] == [
            ("client_credentials", "bookings:read"),
            ("client_credentials", "bookings:read bookings:write"),
        ]
        sent = [h for h in records(tmp_path / "headers.jsonl") if h["body_method"] == "tools/call"]
        assert sent and all(h["authorization"] == "Bearer" for h in sent)
        sealed = repository.rows["bookings"]
        token = await _token_of(repository)
        assert token["scope"] == "bookings:read bookings:write"
        assert token["access_token"] not in sealed and "at_" not in sealed
        seen = json.dumps(stack.audit.events) + capsys.readouterr().out
        assert token["access_token"] not in seen and token["refresh_token"] not in seen
        assert "s3cret" not in seen
        assert stack.audit.of("mcp.oauth_granted")


async def test_a_token_expiring_mid_session_is_refreshed_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    repository = InMemoryOAuthTokenRepository()
    with oauth_servers(tmp_path, expires_in="0,3600") as servers:
        oauth = client_credentials(servers.issuer, ["bookings:read", "bookings:write"])
        async with stack_for(servers, oauth, repository=repository) as stack:
            for day in ("d1", "d2", "d3"):
                result = await stack.gateway.call(booking_request("bookings.slots", {"day": day}))
                assert result.content["day"] == day
        assert await servers.grants() == ["client_credentials", "refresh_token"]
        # a restart finds the sealed token (and its expiry): no new grant, no 401 first
        before = len(records(tmp_path / "headers.jsonl"))
        async with stack_for(servers, oauth, repository=repository) as stack:
            result = await stack.gateway.call(booking_request("bookings.slots", {"day": "d4"}))
            assert result.content["day"] == "d4"
        assert await servers.grants() == ["client_credentials", "refresh_token"]
        after = records(tmp_path / "headers.jsonl")[before:]
        assert all(h["authorization"] == "Bearer" for h in after)


async def test_a_token_the_server_stops_accepting_is_replaced(tmp_path: Path) -> None:
    with oauth_servers(tmp_path) as servers:
        oauth = client_credentials(servers.issuer, ["bookings:read", "bookings:write"])
        async with stack_for(servers, oauth) as stack:
            await stack.gateway.call(booking_request("bookings.slots", {"day": "d1"}))
            await servers.admin("/admin/expire", {})
            result = await stack.gateway.call(booking_request("bookings.slots", {"day": "d2"}))
            assert result.content["day"] == "d2"
        assert await servers.grants() == ["client_credentials", "client_credentials"]


async def test_a_revoked_client_fails_clearly_and_nothing_is_executed(tmp_path: Path) -> None:
    with oauth_servers(tmp_path) as servers:
        oauth = client_credentials(servers.issuer, ["bookings:read", "bookings:write"])
        async with stack_for(servers, oauth) as stack:
            await stack.gateway.call(booking_request("bookings.slots", {"day": "d1"}))
            await servers.admin("/admin/revoke", {"client": "vocero-gateway"})
            with pytest.raises(ServerAuthError) as caught:
                await stack.gateway.call(
                    booking_request("bookings.order", {"item": "x", "quantity": 1})
                )
            error = public_error(caught.value)
            assert error["code"] == ErrorCode.MCP_UNAVAILABLE.value
            assert error["reason_code"] == "server_auth_failed"
            assert error["possibly_executed"] is False
            assert calls(tmp_path / "bookings.jsonl", "place_order") == []
            conn = stack.connections.connection("bookings")
            assert conn is not None and conn.state == "connected"  # one request failed, not all
            assert [e["reason"] for e in stack.audit.of("mcp.oauth_failed")] == [
                "server_auth_failed"
            ]


async def _consent(server: str, url: str) -> ConsentResult:
    """Stands in for an operator approving in a browser (the fixture approves at once)."""
    async with httpx2.AsyncClient() as http:
        response = await http.get(url, follow_redirects=False)
    query = parse_qs(urlsplit(response.headers["location"]).query)
    return ConsentResult(code=query["code"][0], state=query["state"][0], iss=query["iss"][0])


async def test_authorization_code_with_pkce_needs_an_operators_consent(tmp_path: Path) -> None:
    with oauth_servers(tmp_path) as servers:
        oauth = McpOAuthSpec(
            grant="authorization_code",
            client_id="vocero-gateway",
            client_secret_env="BOOKINGS_CLIENT_SECRET",
            issuer=servers.issuer,
            scopes=["bookings:read", "bookings:write"],
        )
        async with stack_for(servers, oauth) as stack:  # no consent handler
            with pytest.raises(ServerAuthError) as caught:
                await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
            assert str(caught.value) == "server_authorization_required"
        async with stack_for(servers, oauth, consent=_consent) as stack:
            result = await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
            assert result.content["day"] == "d"
        assert await servers.grants() == ["authorization_code"]


def code_grant(issuer: str) -> McpOAuthSpec:
    return McpOAuthSpec(
        grant="authorization_code",
        client_id="vocero-gateway",
        client_secret_env="BOOKINGS_CLIENT_SECRET",
        issuer=issuer,
        scopes=["bookings:read", "bookings:write"],
    )


class WatchedConsents(InMemoryConsentRepository):
    """The consents, with an event per consent opened (what an operator would see listed)."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[anyio.Event] = [anyio.Event() for _ in range(4)]
        self.count = 0

    async def open(self, consent: PendingConsent, state_sha256: str) -> None:
        await super().open(consent, state_sha256)
        self.opened[self.count].set()
        self.count += 1

    async def nth(self, n: int) -> PendingConsent:
        with anyio.fail_after(20):
            await self.opened[n].wait()
        return list(self.rows.values())[n].consent


async def _browser(url: str, **override: str) -> dict[str, str]:
    """The operator's browser at the authorization server's page (the fixture approves at once):
    where it is sent back, as the callback's query."""
    async with httpx2.AsyncClient() as http:
        response = await http.get(url, follow_redirects=False)
    location = urlsplit(response.headers["location"])
    assert location.path == "/oauth/callback"  # the spec's redirect_uri
    return {**{k: v[0] for k, v in parse_qs(location.query).items()}, **override}


async def test_an_operator_authorizes_in_a_browser_while_calls_fail_fast(tmp_path: Path) -> None:
    consents = WatchedConsents()
    audited: list[tuple[str, dict[str, Any]]] = []

    async def audit(kind: str, data: dict[str, Any]) -> None:
        audited.append((kind, data))

    operator = OperatorConsent(consents, VaultCipher(KEY), audit=audit)
    with oauth_servers(tmp_path) as servers:
        async with stack_for(servers, code_grant(servers.issuer), operator=operator) as stack:
            pending = await consents.nth(0)
            assert [p.id for p in await operator.pending()] == [pending.id]
            with anyio.fail_after(3), pytest.raises(ServerAuthError) as caught:
                await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
            assert str(caught.value) == "server_authorization_required"  # nobody waits
            query = await _browser(pending.authorization_url)
            found = await operator.answer(query)
            assert found is not None and (found.id, found.server) == (pending.id, "bookings")
            assert await operator.answer(query) is None, "an answer is taken once"
            conn = stack.connections.connection("bookings")
            assert conn is not None
            with anyio.fail_after(20):
                await conn.wait_listed(1)  # connected with the operator's grant
            result = await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
            assert result.content["day"] == "d"
            assert await operator.pending() == []
        assert await servers.grants() == ["authorization_code"]
    assert [(k, d.get("status")) for k, d in audited] == [
        ("mcp.oauth_consent_requested", None),
        ("mcp.oauth_consent_answered", "answered"),
        ("mcp.oauth_consent_closed", "granted"),
    ]
    seen = json.dumps(audited)
    assert query["code"] not in seen and query["state"] not in seen


async def test_a_refused_or_expired_consent_grants_nothing_and_a_new_one_is_asked(
    tmp_path: Path,
) -> None:
    consents = WatchedConsents()
    operator = OperatorConsent(consents, VaultCipher(KEY), timeout_s=1.0)
    with oauth_servers(tmp_path) as servers:
        async with stack_for(servers, code_grant(servers.issuer), operator=operator) as stack:
            first = await consents.nth(0)
            refused = await _browser(first.authorization_url, error="access_denied")
            del refused["code"]
            assert await operator.answer(refused) is not None
            second = await consents.nth(1)  # the next failed request asks again
            assert consents.rows[first.id].consent.status == "refused"
            third = await consents.nth(2)  # nobody answered the second within its second
            assert consents.rows[second.id].consent.status == "expired"
            late = await _browser(second.authorization_url)
            assert await operator.answer(late) is None, "an expired consent takes no answer"
            assert third.id != second.id
            with pytest.raises(ServerAuthError):
                await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
        assert await servers.grants() == []
    # the node stopped while the third waited: nobody can take it any more
    assert consents.rows[third.id].consent.status == "expired"


async def test_an_answer_is_granted_only_once_its_tokens_are_stored(tmp_path: Path) -> None:
    """Issue 26, finding 3: a bogus ``code`` or a wrong ``iss`` was audited ``granted`` at the
    callback, before the token exchange refused it. Now the callback is ``answered``; the
    exchange decides: ``failed`` with its reason (and a new consent is asked), or ``granted``
    once the tokens are in the store."""
    consents = WatchedConsents()
    tokens = InMemoryOAuthTokenRepository()
    audited: list[tuple[str, dict[str, Any], bool]] = []

    async def audit(kind: str, data: dict[str, Any]) -> None:
        stored = await SealedTokenStorage("bookings", tokens, VaultCipher(KEY)).get_tokens()
        audited.append((kind, data, stored is not None))  # were the tokens stored by then?

    operator = OperatorConsent(consents, VaultCipher(KEY), audit=audit)
    with oauth_servers(tmp_path) as servers:
        oauth = code_grant(servers.issuer)
        async with stack_for(servers, oauth, operator=operator, repository=tokens) as stack:
            bogus = await _browser((await consents.nth(0)).authorization_url, code="bogus")
            assert await operator.answer(bogus) is not None
            wrong_iss = await _browser(
                (await consents.nth(1)).authorization_url, iss="https://login.example.com"
            )
            assert await operator.answer(wrong_iss) is not None
            last = await consents.nth(2)
            assert await operator.answer(await _browser(last.authorization_url)) is not None
            conn = stack.connections.connection("bookings")
            assert conn is not None
            with anyio.fail_after(20):
                await conn.wait_listed(1)
        assert await servers.grants() == ["authorization_code"]
    closed = [
        (kind, data.get("status"), data.get("reason_code"), stored)
        for kind, data, stored in audited
        if kind != "mcp.oauth_consent_requested"
    ]
    assert closed == [
        ("mcp.oauth_consent_answered", "answered", None, False),
        ("mcp.oauth_consent_closed", "failed", "invalid_grant", False),
        ("mcp.oauth_consent_answered", "answered", None, False),
        ("mcp.oauth_consent_closed", "failed", "issuer_mismatch", False),
        ("mcp.oauth_consent_answered", "answered", None, False),
        ("mcp.oauth_consent_closed", "granted", None, True),
    ]
    assert [consents.rows[c].consent.status for c in consents.rows] == [
        "failed", "failed", "granted"
    ]


async def test_a_pending_consent_is_waited_for_without_flooding_log_or_audit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 26, finding 4: left unanswered for 12.5 minutes, a consent cost 35,451 log lines,
    1,191 tracebacks and ~70 audit events a minute: the connection reconnected every few
    seconds, failed the same way and was audited each time. Now it waits for the consent; its
    failures are audited once and counted; a known OAuth failure is one line, no traceback.
    12.5 minutes pass on a virtual clock (the backoff and the consent's waits run on it)."""
    clock = VirtualClock()
    consents = WatchedConsents()
    operator = OperatorConsent(consents, VaultCipher(KEY), clock=clock)
    with oauth_servers(tmp_path) as servers, capture_logs() as logs:
        oauth = code_grant(servers.issuer)
        async with stack_for(servers, oauth, operator=operator, clock=clock) as stack:
            pending = await consents.nth(0)
            for _ in range(750):  # 12.5 minutes, a second at a time
                clock.advance(1.0)
                await anyio.wait_all_tasks_blocked()
            conn = stack.connections.connection("bookings")
            assert conn is not None
            assert (conn.attempts, conn.state) == (1, "awaiting_consent")
            assert await operator.answer(await _browser(pending.authorization_url)) is not None
            with anyio.fail_after(20):
                await conn.wait_listed(1)  # the consent ended the wait: connected at once
            assert conn.attempts == 2
            kinds = [kind for kind, _, _ in stack.audit.events]
    assert consents.count == 1
    assert kinds.count("mcp.oauth_failed") == 1
    assert kinds.count("mcp.server_connect_failed") == 1
    assert stack.audit.of("mcp.failures_coalesced") == [
        {"server": "bookings", "kind": "mcp.oauth_failed",
         "reason": "server_authorization_required", "count": 1},
    ]
    loud = [(e["event"], e["log_level"]) for e in logs if e["log_level"] in ("warning", "error")]
    assert sorted(loud) == [
        ("mcp.connection_ended", "warning"), ("mcp.oauth_failed", "warning")
    ]
    assert not [e for e in logs if "exc_info" in e or "exception" in e]
    assert not [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= 40]


async def test_any_node_takes_the_callback_and_every_node_uses_the_grant(tmp_path: Path) -> None:
    """Two nodes share the store: each waits on its own flow; the callback of the first
    reaches the second; the first completes its grant; the second sees it and uses it."""
    consents = WatchedConsents()
    tokens = InMemoryOAuthTokenRepository()
    nodes = [
        OperatorConsent(consents, VaultCipher(KEY), node_id=name, poll_s=0.05)
        for name in ("node_a", "node_b")
    ]
    with oauth_servers(tmp_path) as servers:
        oauth = code_grant(servers.issuer)
        async with (
            stack_for(servers, oauth, operator=nodes[0], repository=tokens) as first,
            stack_for(servers, oauth, operator=nodes[1], repository=tokens) as second,
        ):
            waiting = [await consents.nth(0), await consents.nth(1)]
            assert sorted(c.node_id for c in waiting) == ["node_a", "node_b"]
            mine = next(c for c in waiting if c.node_id == "node_a")
            found = await nodes[1].answer(await _browser(mine.authorization_url))  # on node_b
            assert found is not None and found.id == mine.id
            for stack in (first, second):
                conn = stack.connections.connection("bookings")
                assert conn is not None
                with anyio.fail_after(20):
                    await conn.wait_listed(1)
                result = await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
                assert result.content["day"] == "d"
        assert await servers.grants() == ["authorization_code"]  # one grant, for both
    other = next(c for c in waiting if c.node_id == "node_b")
    assert consents.rows[other.id].consent.status == "superseded"


async def test_oauth_settings_that_cannot_work_are_refused(tmp_path: Path) -> None:
    with oauth_servers(tmp_path) as servers:
        missing = McpOAuthSpec(
            client_id="vocero-gateway", client_secret_env="NOT_SET", issuer=servers.issuer
        )
        async with stack_for(servers, missing) as stack:
            assert stack.audit.of("mcp.server_refused") == [
                {"server": "bookings", "reason": "oauth_secret_missing"}
            ]
    assert calls(tmp_path / "bookings.jsonl", "find_slots") == []
