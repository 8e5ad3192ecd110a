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
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import parse_qsl

import httpx2
import msgspec
import structlog
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.shared.auth import (
    JWT_BEARER_GRANT_TYPE,
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from vocero.contracts.domain import McpOAuthSpec, McpServerSpec
from vocero.mcp_gateway.enterprise import id_jag_provider, read_assertion
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


class _ClientCredentials(_RestoresExpiry, ClientCredentialsOAuthProvider):
    pass


class _PrivateKeyJwt(_RestoresExpiry, PrivateKeyJWTOAuthProvider):
    pass


class _AuthorizationCode(_RestoresExpiry, OAuthClientProvider):
    pass


class _JwtBearerGrant(_ClientCredentials):
    """The workload-identity grant (RFC 7523 §2.1, SEP-1933): the SDK's client-credentials
    flow (discovery, the configured issuer only, resource, scope), with Vocero's workload JWT
    as the grant instead of ``client_credentials``. A refused grant is not retried nor
    replaced by another grant type (the flow fails; :class:`AuthGuard` says why)."""

    _assertion: Callable[[], str]
    _presented = ""
    _refused = ""
    """Digest of the assertion the authorization server last refused (4xx): it is not
    presented again (a reconnect would otherwise repeat the refused grant); a rotated one is."""

    async def _exchange_token_client_credentials(self) -> httpx2.Request:
        request = await super()._exchange_token_client_credentials()
        form = dict(parse_qsl(request.content.decode()))
        try:
            assertion = self._assertion()
        except ServerRefusedError as exc:
            raise OAuthTokenError(f"jwt_bearer_assertion_missing ({exc})") from None
        digest = hashlib.sha256(assertion.encode()).hexdigest()
        if digest == self._refused:
            raise OAuthTokenError("jwt_bearer_assertion_refused (not presented again)")
        self._presented = digest
        form.update(grant_type=JWT_BEARER_GRANT_TYPE, assertion=assertion)
        client_id = self._fixed_client_info.client_id
        if client_id and "authorization" not in request.headers:
            form.setdefault("client_id", client_id)  # a public client names itself
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        return httpx2.Request("POST", request.url, data=form, headers=headers)

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        if 400 <= response.status_code < 500:
            self._refused = self._presented
        await super()._handle_token_response(response)


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


def build_auth(
    server: str,
    spec: McpServerSpec,
    storage: SealedTokenStorage,
    *,
    consent: Consent | None,
    on_failure: Callable[[str], None],
    environ: Any = os.environ,
    idp_transport: httpx2.AsyncBaseTransport | None = None,
) -> AuthGuard:
    """The guarded SDK provider for ``spec.oauth``; :class:`ServerRefusedError` for a
    configuration that cannot work (no secret, client credentials without issuer...)."""
    oauth = spec.oauth
    assert oauth is not None
    _quiet_known_flow_errors()
    secret = client_secret(oauth, environ)
    scope = " ".join(oauth.scopes) or None
    provider: OAuthClientProvider | IdentityAssertionOAuthProvider
    if oauth.grant == "client_credentials":
        provider = _machine_provider(spec, oauth, storage, secret, scope, environ)
    elif oauth.grant == "jwt_bearer":
        provider = _jwt_bearer_provider(spec, oauth, storage, secret, scope, environ)
    elif oauth.grant == "identity_assertion":
        provider = _identity_assertion_provider(
            spec, oauth, storage, secret, scope, environ, idp_transport
        )
    else:
        provider = _consent_provider(server, spec, oauth, storage, secret, scope, consent)
    return AuthGuard(server, provider, on_failure)


def _machine_provider(
    spec: McpServerSpec,
    oauth: McpOAuthSpec,
    storage: SealedTokenStorage,
    secret: str,
    scope: str | None,
    environ: Any,
) -> OAuthClientProvider:
    """Client credentials: a client secret (Basic or POST) or a signed JWT assertion."""
    if not oauth.client_id:
        raise ServerRefusedError("oauth_client_required")
    if not oauth.issuer:
        raise ServerRefusedError("oauth_issuer_required")
    provider: _ClientCredentials | _PrivateKeyJwt
    if oauth.token_endpoint_auth == "private_key_jwt":
        key = environ.get(oauth.private_key_env, "") if oauth.private_key_env else ""
        if not key:
            raise ServerRefusedError("oauth_key_missing")
        assertion = SignedJWTParameters(
            issuer=oauth.client_id,
            subject=oauth.client_id,
            signing_key=str(key),
            signing_algorithm=oauth.signing_algorithm,
        )
        provider = _PrivateKeyJwt(
            server_url=spec.url,
            storage=storage,
            client_id=oauth.client_id,
            assertion_provider=assertion.create_assertion_provider(),
            scope=scope,
            issuer=oauth.issuer,
        )
    else:
        if not secret:
            raise ServerRefusedError("oauth_client_required")
        if oauth.token_endpoint_auth == "none":
            raise ServerRefusedError("oauth_auth_method_unsupported")
        method: Literal["client_secret_basic", "client_secret_post"] = oauth.token_endpoint_auth
        provider = _ClientCredentials(
            server_url=spec.url,
            storage=storage,
            client_id=oauth.client_id,
            client_secret=secret,
            token_endpoint_auth_method=method,
            scope=scope,
            issuer=oauth.issuer,
        )
    provider._storage = storage
    return provider


def _jwt_bearer_provider(
    spec: McpServerSpec,
    oauth: McpOAuthSpec,
    storage: SealedTokenStorage,
    secret: str,
    scope: str | None,
    environ: Any,
) -> OAuthClientProvider:
    """Workload identity: the JWT (``assertion_env``/``assertion_file``) is the grant; the
    client authenticates with its secret when it has one, else it is public (``none``)."""
    if not oauth.issuer:
        raise ServerRefusedError("oauth_issuer_required")
    if not (oauth.assertion_env or oauth.assertion_file):
        raise ServerRefusedError("oauth_assertion_missing")
    method = oauth.token_endpoint_auth if secret else "none"
    if method == "private_key_jwt":
        raise ServerRefusedError("oauth_auth_method_unsupported")
    provider = _JwtBearerGrant(
        server_url=spec.url,
        storage=storage,
        client_id=oauth.client_id,
        client_secret=secret,
        token_endpoint_auth_method=method,  # type: ignore[arg-type]  # "none" works too
        scope=scope,
        issuer=oauth.issuer,
    )
    provider._assertion = lambda: read_assertion(oauth, environ)
    provider._storage = storage
    return provider


def _identity_assertion_provider(
    spec: McpServerSpec,
    oauth: McpOAuthSpec,
    storage: SealedTokenStorage,
    secret: str,
    scope: str | None,
    environ: Any,
    idp_transport: httpx2.AsyncBaseTransport | None,
) -> IdentityAssertionOAuthProvider:
    """SEP-990 for Vocero's own identity: the SDK's provider does leg 2 at the configured
    issuer; leg 1 (the ID-JAG from the IdP) is :func:`id_jag_provider`."""
    if not oauth.issuer:
        raise ServerRefusedError("oauth_issuer_required")
    if not (oauth.client_id and secret):
        raise ServerRefusedError("oauth_client_required")
    if oauth.token_endpoint_auth not in ("client_secret_basic", "client_secret_post"):
        raise ServerRefusedError("oauth_auth_method_unsupported")
    method: Literal["client_secret_basic", "client_secret_post"] = oauth.token_endpoint_auth
    return IdentityAssertionOAuthProvider(
        server_url=spec.url,
        storage=storage,
        client_id=oauth.client_id,
        client_secret=secret,
        issuer=oauth.issuer,
        assertion_provider=id_jag_provider(oauth, environ, transport=idp_transport),
        scope=scope,
        token_endpoint_auth_method=method,
    )


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
