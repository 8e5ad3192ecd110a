"""OAuth 2.1 for streamable-HTTP servers against a local authorization server fixture
(``fixtures/mcp_servers/oauth_server.py``) and the bookings server as resource server: client
credentials, step-up, expiry and refresh, a revoked client, the authorization-code grant with
PKCE, tokens sealed at rest and never in audit or logs."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from bookings_support import booking_request, booking_tools, calls
from gateway_support import HttpServer, Stack, gateway_stack, records

from vocero.contracts.domain import McpOAuthSpec
from vocero.contracts.errors import ErrorCode
from vocero.mcp_gateway import (
    AuthOptions,
    ConsentResult,
    InMemoryOAuthTokenRepository,
    ServerAuthError,
    public_error,
)
from vocero.mcp_gateway.oauth import SealedTokenStorage
from vocero.voice_vault import VaultCipher

pytestmark = pytest.mark.anyio
KEY = secrets.token_bytes(32)
ENV = {"BOOKINGS_CLIENT_SECRET": "s3cret"}


@dataclass
class Servers:
    issuer: str
    bookings: HttpServer
    folder: Path

    async def admin(self, path: str, body: dict[str, Any] | None = None) -> Any:
        async with httpx2.AsyncClient() as http:
            if body is None:
                return (await http.get(f"{self.issuer}{path}")).json()
            return (await http.post(f"{self.issuer}{path}", json=body)).json()

    async def grants(self) -> list[str]:
        return [g["grant"] for g in await self.admin("/admin/grants")]


@contextmanager
def oauth_servers(folder: Path, *, expires_in: str = "3600") -> Iterator[Servers]:
    authority = HttpServer("oauth_server.py", {"VOCERO_AS_EXPIRES_IN": expires_in})
    authority.start()
    try:
        authority.wait_ready()
        issuer = f"http://127.0.0.1:{authority.port}"
        env = {
            "VOCERO_MCP_RECORD": str(folder / "bookings.jsonl"),
            "VOCERO_MCP_STATE": str(folder / "bookings.json"),
            "VOCERO_MCP_HEADERS": str(folder / "headers.jsonl"),
        }
        resource = HttpServer("bookings_server.py", env, ["--auth-server", issuer])
        resource.start()
        try:
            resource.wait_ready()
            yield Servers(issuer, resource, folder)
        finally:
            resource.stop()
    finally:
        authority.stop()


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
) -> AsyncIterator[Stack]:
    auth = AuthOptions(
        sealer=VaultCipher(KEY),
        repository=repository if repository is not None else InMemoryOAuthTokenRepository(),
        consent=consent,
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
