"""Delegated credentials: a server's calls carry a token for the caller, not for Vocero
(SPEC §11 "Delegation to MCP servers", docs/adr/0027-delegated-credentials.md).

A server entry with ``auth: {token_exchange: ...}`` gets, for each caller, a token of its own:
the caller's JWT (kept by :class:`CallerCredentials` when the caller connected) is exchanged at
the identity provider (RFC 8693, ``client_secret_basic``) by :class:`TokenExchanger`, cached per
caller until shortly before it expires, and sent as ``Authorization: Bearer`` on that caller's
``tools/call`` requests only.

The connection to the server stays one shared SDK session. The bearer travels with the call, not
with the connection: :func:`delegated` binds it, for the duration of one call, to that call's
``io.vocero/operation_id`` in a context variable, and :class:`DelegatedBearer` (the HTTP
client's auth) writes it only on a request whose JSON-RPC body is a ``tools/call`` carrying that
same operation id. Every other request (listing, another caller's call, a request the SDK sends
from another task) goes without one; a static ``Authorization`` header configured for the
server is removed from ``tools/call`` requests, so there is never a fallback to a shared
credential.

Any failure (no JWT for the caller, the exchange refused or unreachable, a reply without a
token) raises :class:`DelegationUnavailable` (``authorization_unavailable``) before anything is
sent to the server. No token, subject token or client secret is logged, audited or put in an
error.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol
from urllib.parse import quote

import anyio
import httpx2
import structlog

from vocero.contracts.domain import Principal, TokenExchangeSpec
from vocero.contracts.secrets import Secret
from vocero.mcp_gateway.errors import ServerAuthError

log = structlog.get_logger("vocero.mcp_gateway")

AUTHORIZATION_UNAVAILABLE = "authorization_unavailable"
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
OPERATION_META = "io.vocero/operation_id"
MAX_CACHED = 10_000
"""Exchanged tokens (and subject tokens) kept at most; the oldest go first."""
EARLY_S = 30.0
"""An exchanged token is used until this long (at most a tenth of its life) before it expires."""


class DelegationUnavailable(ServerAuthError):
    """No token for this caller at this server: the call fails closed, nothing is sent."""

    def __init__(self) -> None:
        super().__init__(AUTHORIZATION_UNAVAILABLE)

    @property
    def reason_code(self) -> str:
        return AUTHORIZATION_UNAVAILABLE


class SubjectTokens(Protocol):
    """Where the gateway finds the caller's own JWT (the one it connected with)."""

    def subject_token(self, tenant: str, subject_ref: str) -> Secret | None: ...


class CallerCredentials:
    """The JWTs callers connected with, by (tenant, ``subject_ref``), in memory only and
    until each one's ``exp``: what a delegated call of that caller exchanges. A caller of the
    identities file has none here."""

    def __init__(self, *, max_entries: int = MAX_CACHED, now: Callable[[], float] = time.time):
        self._tokens: OrderedDict[tuple[str, str], tuple[Secret, float | None]] = OrderedDict()
        self._max = max_entries
        self._now = now

    def remember(
        self, tenant: str, subject_ref: str, token: Secret, expires_at: float | None
    ) -> None:
        key = (tenant, subject_ref)
        self._tokens.pop(key, None)
        self._tokens[key] = (token, expires_at)
        while len(self._tokens) > self._max:
            self._tokens.popitem(last=False)

    def subject_token(self, tenant: str, subject_ref: str) -> Secret | None:
        found = self._tokens.get((tenant, subject_ref))
        if found is None:
            return None
        token, expires_at = found
        if expires_at is not None and self._now() >= expires_at:
            del self._tokens[(tenant, subject_ref)]
            return None
        return token


@dataclass(frozen=True, slots=True)
class _Delegated:
    operation_id: str
    bearer: Secret


_CURRENT: ContextVar[_Delegated | None] = ContextVar("vocero_mcp_delegated", default=None)


@contextmanager
def delegated(operation_id: str, bearer: Secret | None) -> Iterator[None]:
    """While the call of ``operation_id`` is sent, its requests may carry ``bearer``."""
    token = _CURRENT.set(_Delegated(operation_id, bearer) if bearer is not None else None)
    try:
        yield
    finally:
        _CURRENT.reset(token)


class DelegatedBearer(httpx2.Auth):
    """The HTTP client's auth on a delegated server: the bound caller's bearer on that call's
    ``tools/call`` request, and no ``Authorization`` on any other ``tools/call``."""

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        method, operation_id = _call_of(request)
        if method == "tools/call":
            request.headers.pop("authorization", None)
            bound = _CURRENT.get()
            if bound is not None and operation_id and bound.operation_id == operation_id:
                request.headers["authorization"] = f"Bearer {bound.bearer.reveal()}"
        yield request


def _call_of(request: httpx2.Request) -> tuple[str, str]:
    """The JSON-RPC method of a request body and its ``io.vocero/operation_id`` (``""``)."""
    if request.method != "POST":
        return "", ""
    try:
        message = json.loads(request.content or b"{}")
    except (ValueError, UnicodeDecodeError, httpx2.RequestNotRead):
        return "", ""
    if not isinstance(message, dict):
        return "", ""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    operation = meta.get(OPERATION_META) if isinstance(meta, dict) else None
    return str(message.get("method", "")), operation if isinstance(operation, str) else ""


Failure = Callable[[str, Principal], Awaitable[None]]
"""Told why an exchange failed (a cause such as ``exchange_refused``, never a token)."""


class PerCallerTokens:
    """One server's per-caller tokens: the caller's JWT turned into a token for the server by
    :meth:`_exchange` (a subclass), cached per caller and subject token, never shared."""

    def __init__(
        self,
        server: str,
        subjects: SubjectTokens | None,
        *,
        environ: Mapping[str, str],
        on_failure: Failure,
        transport: httpx2.AsyncBaseTransport | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        timeout_s: float = 5.0,
        max_entries: int = MAX_CACHED,
    ) -> None:
        self.server = server
        self._subjects = subjects
        self._environ = environ
        self._on_failure = on_failure
        self._transport = transport
        self._monotonic = monotonic
        self._timeout_s = timeout_s
        self._max = max_entries
        self._cache: OrderedDict[tuple[str, str, str], tuple[Secret, float]] = OrderedDict()
        self.exchanges = 0
        """Exchanges attempted (tests, the benchmark)."""

    async def bearer_for(self, principal: Principal) -> Secret:
        """The token this caller's calls to the server carry; :class:`DelegationUnavailable`
        when there is none to be had."""
        subject = (
            self._subjects.subject_token(principal.tenant_id, principal.subject_ref)
            if self._subjects is not None and principal.subject_ref
            else None
        )
        if subject is None:
            await self._failed("no_caller_jwt", principal)
        digest = hashlib.sha256(subject.reveal().encode()).hexdigest()
        key = (principal.tenant_id, principal.subject_ref, digest)
        cached = self._cache.get(key)
        if cached is not None and self._monotonic() < cached[1]:
            return cached[0]
        bearer, lifetime = await self._exchange(subject, principal)
        if lifetime > 0:
            self._cache.pop(key, None)
            self._cache[key] = (bearer, self._monotonic() + lifetime - min(EARLY_S, lifetime / 10))
            while len(self._cache) > self._max:
                self._cache.popitem(last=False)
        return bearer

    async def _exchange(self, subject: Secret, principal: Principal) -> tuple[Secret, float]:
        raise NotImplementedError

    async def _post(
        self,
        url: str,
        form: dict[str, str],
        auth: httpx2.BasicAuth | None,
        principal: Principal,
        step: str,
    ) -> dict[str, Any]:
        """One token-endpoint request; its JSON body, or the call fails closed with a cause
        (``<step>_unreachable``, ``<step>_refused``, ``<step>_without_token``)."""
        self.exchanges += 1
        try:
            async with httpx2.AsyncClient(
                transport=self._transport, timeout=httpx2.Timeout(self._timeout_s),
                follow_redirects=False,
            ) as client:
                with anyio.fail_after(self._timeout_s):
                    response = await client.post(
                        url, data=form, auth=auth or httpx2.USE_CLIENT_DEFAULT
                    )
        except (TimeoutError, httpx2.HTTPError):
            await self._failed(f"{step}_unreachable", principal)
        if response.status_code != httpx2.codes.OK:
            await self._failed(f"{step}_refused", principal, status=response.status_code)
        try:
            body = response.json()
        except ValueError:
            body = None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(token, str) or not token:
            await self._failed(f"{step}_without_token", principal)
        return body

    async def _failed(self, cause: str, principal: Principal, **details: Any) -> NoReturn:
        log.warning("mcp.delegation_failed", server=self.server, cause=cause, **details)
        await self._on_failure(cause, principal)
        raise DelegationUnavailable()


def client_auth(client_id: str, secret: str) -> httpx2.BasicAuth:
    """``client_secret_basic``: id and secret form-encoded, then Basic (RFC 6749 §2.3.1)."""
    return httpx2.BasicAuth(quote(client_id, safe=""), quote(secret, safe=""))


def lifetime_of(body: Mapping[str, Any]) -> float:
    expires_in = body.get("expires_in")
    return max(0.0, float(expires_in)) if isinstance(expires_in, int | float) else 0.0


class TokenExchanger(PerCallerTokens):
    """One server's RFC 8693 exchanges: per caller, cached, never shared."""

    def __init__(
        self,
        server: str,
        spec: TokenExchangeSpec,
        subjects: SubjectTokens | None,
        **options: Any,
    ) -> None:
        super().__init__(server, subjects, **options)
        self.spec = spec

    async def _exchange(self, subject: Secret, principal: Principal) -> tuple[Secret, float]:
        spec = self.spec
        secret = self._environ.get(spec.client_secret_env, "")
        if not secret:
            await self._failed("client_secret_missing", principal)
        form = {
            "grant_type": GRANT_TYPE,
            "subject_token": subject.reveal(),
            "subject_token_type": JWT_TOKEN_TYPE,
            "requested_token_type": ACCESS_TOKEN_TYPE,
        }
        if spec.audience:
            form["audience"] = spec.audience
        if spec.scope:
            form["scope"] = spec.scope
        body = await self._post(
            spec.token_url, form, client_auth(spec.client_id, secret), principal, "exchange"
        )
        return Secret(str(body["access_token"])), lifetime_of(body)
