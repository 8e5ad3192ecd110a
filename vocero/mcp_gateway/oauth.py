"""OAuth 2.1 for streamable-HTTP servers, on the SDK's client auth (docs/mcp.md "OAuth").

The SDK's providers do the protocol: protected-resource and authorization-server metadata
discovery (RFC 9728 / RFC 8414), PKCE, pre-registered or dynamically registered clients, the
scope a ``WWW-Authenticate`` challenge names (and step-up on ``insufficient_scope``), refresh.
The gateway adds what a shared, long-lived service needs:

* :class:`SealedTokenStorage`: the tokens and client record of one server, held in memory and
  persisted *sealed* (AES-GCM with the vault key, through the :class:`Sealer` port) in the
  store's ``mcp_oauth_tokens`` table; the expiry survives a restart, so a stored token is
  refreshed ahead of time instead of failing first;
* :class:`AuthGuard`: an OAuth failure (revoked client, refused refresh, consent needed) would
  crash the SDK's HTTP transport and every call on it; the guard ends the flow with the
  server's refusal instead, so that one request fails with a stable reason
  (``server_auth_failed`` / ``server_authorization_required``) and nothing is executed;
* client secrets come from the environment variable the server spec names, never from a
  profile; no token, code or secret is ever logged, audited, put in ``_meta`` or arguments.

Which provider each grant gets (:func:`~vocero.mcp_gateway.oauth_grants.build_auth`) is
:mod:`vocero.mcp_gateway.oauth_grants`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2
import msgspec
import structlog
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from vocero.contracts.domain import McpOAuthSpec, McpServerSpec
from vocero.mcp_gateway.errors import ServerRefusedError, auth_reason
from vocero.mcp_gateway.questions import CURRENT_ROUTE

log = structlog.get_logger("vocero.mcp_gateway")

_OAUTH_ERRORS = (OAuthFlowError, OAuthTokenError, OAuthRegistrationError)


class Sealer(Protocol):
    """Encryption at rest (the voice vault's cipher satisfies it)."""

    def seal_text(self, text: str, context: str) -> str: ...

    def open_text(self, sealed: str, context: str) -> str: ...


class OAuthTokenRepository(Protocol):
    """Where sealed token records outlive the process (the store's ``mcp_oauth_tokens``)."""

    async def load(self, server: str) -> str | None: ...

    async def save(self, server: str, sealed: str) -> None: ...

    async def delete(self, server: str) -> None: ...


class InMemoryOAuthTokenRepository:
    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    async def load(self, server: str) -> str | None:
        return self.rows.get(server)

    async def save(self, server: str, sealed: str) -> None:
        self.rows[server] = sealed

    async def delete(self, server: str) -> None:
        self.rows.pop(server, None)


@dataclass(frozen=True, slots=True)
class ConsentResult:
    """What an operator's consent returned (the authorization response's parameters)."""

    code: str
    state: str | None = None
    iss: str | None = None


Consent = Callable[[str, str], Awaitable[ConsentResult]]
"""``(server, authorization_url) -> result``: an operator approves the gateway's access (the
authorization-code grant), inside the request that asks."""
Granted = Callable[[str], Awaitable[bool]]
"""``(server) -> bool``: whether another node's grant has landed since a wait began."""
ConsentWait = Callable[[str, str, Granted], Awaitable[ConsentResult]]
"""``(server, authorization_url, granted) -> result``: a consent an operator gives later, in a
browser (:meth:`vocero.mcp_gateway.consent.OperatorConsent.wait`)."""


class _Record(msgspec.Struct, kw_only=True):
    tokens: dict[str, Any] | None = None
    expires_at: float | None = None
    client: dict[str, Any] | None = None


class SealedTokenStorage:
    """The SDK's ``TokenStorage`` for one server, sealed at rest."""

    def __init__(
        self,
        server: str,
        repository: OAuthTokenRepository,
        sealer: Sealer,
        *,
        on_grant: Callable[[str | None], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.server = server
        self._repository = repository
        self._sealer = sealer
        self._on_grant = on_grant
        self._clock = clock
        self._record: _Record | None = None

    @property
    def context(self) -> str:
        return f"mcp-oauth:{self.server}"

    async def _load(self) -> _Record:
        if self._record is None:
            self._record = await self._read()
        return self._record

    async def _read(self) -> _Record:
        sealed = await self._repository.load(self.server)
        if not sealed:
            return _Record()
        try:
            return msgspec.json.decode(self._sealer.open_text(sealed, self.context), type=_Record)
        except Exception as exc:  # boundary: a record we cannot open is no record
            log.warning("mcp.oauth_record_unreadable", server=self.server, error=type(exc).__name__)
            return _Record()

    async def _save(self) -> None:
        assert self._record is not None
        plain = msgspec.json.encode(self._record).decode()
        await self._repository.save(self.server, self._sealer.seal_text(plain, self.context))

    async def get_tokens(self) -> OAuthToken | None:
        record = await self._load()
        return OAuthToken.model_validate(record.tokens) if record.tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = await self._load()
        before = (record.tokens or {}).get("scope")
        record.tokens = tokens.model_dump(mode="json", exclude_none=True)
        record.expires_at = (
            self._clock() + tokens.expires_in if tokens.expires_in is not None else None
        )
        await self._save()
        if self._on_grant is not None and (before is None or before != tokens.scope):
            self._on_grant(tokens.scope)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        record = await self._load()
        return OAuthClientInformationFull.model_validate(record.client) if record.client else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        record = await self._load()
        record.client = client_info.model_dump(mode="json", exclude_none=True)
        await self._save()

    async def expires_at(self) -> float | None:
        return (await self._load()).expires_at

    def reload(self) -> None:
        """Read the record from the repository again at the next use."""
        self._record = None

    async def fresh_access_token(self) -> str | None:
        """The access token as the repository holds it now, not as loaded (another node may
        have stored a new grant); ``None`` without one."""
        token = ((await self._read()).tokens or {}).get("access_token")
        return str(token) if token else None

    async def forget_tokens(self) -> None:
        """Drop the tokens (a revocation): the next request authorizes afresh."""
        record = await self._load()
        record.tokens = None
        record.expires_at = None
        await self._save()


class _RestoresExpiry:
    """Mixin: the SDK forgets a stored token's expiry across restarts; put it back, so an
    expired token is refreshed before it is sent instead of failing first."""

    context: Any
    _storage: SealedTokenStorage

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]
        expires_at = await self._storage.expires_at()
        if expires_at is not None and self.context.current_tokens is not None:
            self.context.token_expiry_time = expires_at


class _AuthorizationCode(_RestoresExpiry, OAuthClientProvider):
    pass


class _KnownFlowErrors(logging.Filter):
    """The SDK logs every failed OAuth flow with its traceback (``OAuth flow error``); Vocero
    logs each of these failures itself, as one line with its reason (``mcp.oauth_failed``,
    ``mcp.oauth_consent_failed``), so the SDK's record of a known OAuth error is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (record.getMessage() == "OAuth flow error" and isinstance(error, _OAUTH_ERRORS))


_SDK_FLOW_LOG = logging.getLogger("mcp.client.auth.oauth2")
_KNOWN_FLOW_ERRORS = _KnownFlowErrors()


def _quiet_known_flow_errors() -> None:
    _SDK_FLOW_LOG.addFilter(_KNOWN_FLOW_ERRORS)  # once: the same filter is never added twice


class AuthGuard(httpx2.Auth):
    """Runs the SDK's OAuth flow; turns an OAuth failure into the server's refusal."""

    requires_response_body = True

    def __init__(
        self,
        server: str,
        inner: OAuthClientProvider | IdentityAssertionOAuthProvider,
        on_failure: Callable[[str], None],
    ) -> None:
        self.server = server
        self._inner = inner
        self._on_failure = on_failure
        self.last_failure = ""

    def reload(self) -> None:
        """New tokens in the storage (an operator's consent): the provider reads them at its
        next request instead of keeping what it loaded."""
        self._inner._initialized = False

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self._inner.async_auth_flow(request)
        response: httpx2.Response | None = None
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            self.last_failure = ""
            return
        except _OAUTH_ERRORS as exc:
            # The last response goes back to the transport as this request's answer: the
            # request fails, the connection lives on. It may be the authorization server's
            # metadata (a 200, when the flow stopped at the consent), which the transport would
            # parse as JSON-RPC and log with a traceback: the answer says "not authorized".
            if response is not None and response.status_code < 400:
                response.status_code = 401
            reason = auth_reason(exc)
            repeated = reason == self.last_failure  # nothing succeeded since the same failure
            self.last_failure = reason
            route = CURRENT_ROUTE.get()
            if route is not None:
                route.auth_failure = reason
            logged = log.debug if repeated else log.warning  # one line, never a traceback
            logged("mcp.oauth_failed", server=self.server, reason=reason, error=type(exc).__name__)
            self._on_failure(reason)
            return
        finally:
            # Closed here, in this task: a request cancelled mid-flow would otherwise leave the
            # SDK's flow to the generator finalizer, which releases its lock from another task.
            await flow.aclose()


def client_secret(oauth: McpOAuthSpec, environ: Any = os.environ) -> str:
    if not oauth.client_secret_env:
        return ""
    secret = environ.get(oauth.client_secret_env, "")
    if not secret:
        raise ServerRefusedError("oauth_secret_missing")
    return str(secret)


def _consent_provider(
    server: str,
    spec: McpServerSpec,
    oauth: McpOAuthSpec,
    storage: SealedTokenStorage,
    secret: str,
    scope: str | None,
    consent: Consent | None,
) -> OAuthClientProvider:
    """The authorization-code grant with PKCE; the operator's consent is the redirect."""
    metadata = OAuthClientMetadata(
        client_name="vocero-gateway",
        redirect_uris=[AnyUrl(oauth.redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=scope,
    )
    results: list[ConsentResult] = []

    async def redirect_handler(url: str) -> None:
        if consent is None:
            raise OAuthFlowError("no consent handler: an operator must authorize this server")
        results.append(await consent(server, url))

    async def callback_handler() -> AuthorizationCodeResult:
        found = results.pop()
        return AuthorizationCodeResult(code=found.code, state=found.state, iss=found.iss)

    provider = _AuthorizationCode(
        server_url=spec.url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=oauth.client_metadata_url or None,
    )
    provider._storage = storage
    return provider


async def authorize(
    server: str,
    spec: McpServerSpec,
    storage: SealedTokenStorage,
    wait: ConsentWait,
    environ: Any = os.environ,
) -> bool:
    """One authorization-code grant on an operator's consent, run apart from every caller's
    call (their requests keep failing fast meanwhile). A request to the server starts the
    SDK's flow; its redirect waits (``wait``) for the operator's callback; the tokens land in
    ``storage``. Whether tokens are there at the end. Raises the flow's OAuth error
    (:class:`~vocero.mcp_gateway.consent.ConsentRefused`, ``GrantedElsewhere`` ...)."""
    oauth = spec.oauth
    assert oauth is not None and oauth.grant == "authorization_code"
    _quiet_known_flow_errors()
    scope = " ".join(oauth.scopes) or None
    before: list[str | None] = []

    async def granted(_server: str) -> bool:
        return await storage.fresh_access_token() not in before

    async def consent(name: str, url: str) -> ConsentResult:
        before.append(await storage.fresh_access_token())
        return await wait(name, url, granted)

    provider = _consent_provider(
        server, spec, oauth, storage, client_secret(oauth, environ), scope, consent
    )
    ping = {"jsonrpc": "2.0", "id": "vocero-authorize", "method": "ping"}
    headers = {"accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(auth=provider, timeout=30.0) as http:
        await http.post(spec.url, json=ping, headers=headers)
    return await storage.get_tokens() is not None


async def preregister(storage: SealedTokenStorage, spec: McpServerSpec, environ: Any) -> None:
    """A pre-registered authorization-code client goes in the storage as its client record."""
    oauth = spec.oauth
    if oauth is None or oauth.grant != "authorization_code" or not oauth.client_id:
        return
    if await storage.get_client_info() is not None:
        return
    secret = client_secret(oauth, environ) or None
    method = oauth.token_endpoint_auth if secret else "none"
    info = OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=secret,
        redirect_uris=[AnyUrl(oauth.redirect_uri)],
        token_endpoint_auth_method="none" if method == "private_key_jwt" else method,
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        issuer=oauth.issuer or None,
    )
    await storage.set_client_info(info)
