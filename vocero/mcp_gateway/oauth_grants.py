"""Which SDK provider each OAuth grant of a server spec gets (docs/mcp.md "OAuth"):
:func:`build_auth` wraps it in :class:`~vocero.mcp_gateway.oauth.AuthGuard`.

* ``client_credentials``: a client secret (Basic or POST) or a signed JWT (``private_key_jwt``);
* ``jwt_bearer``: Vocero's workload JWT is the grant (RFC 7523 §2.1, SEP-1933);
* ``identity_assertion``: an ID-JAG from the IdP, then the jwt-bearer grant (SEP-990);
* ``authorization_code``: the operator's consent
  (:func:`~vocero.mcp_gateway.oauth.authorize`, the storage and the guard stay in
  :mod:`vocero.mcp_gateway.oauth`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any, Literal, TypeVar
from urllib.parse import parse_qsl

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import OAuthTokenError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE

from vocero.contracts.domain import McpOAuthSpec, McpServerSpec
from vocero.mcp_gateway.enterprise import id_jag_provider, read_assertion
from vocero.mcp_gateway.errors import ServerRefusedError
from vocero.mcp_gateway.oauth import (
    AuthGuard,
    Consent,
    SealedTokenStorage,
    _consent_provider,
    _quiet_known_flow_errors,
    _RestoresExpiry,
    client_secret,
)


class _ClientCredentials(_RestoresExpiry, ClientCredentialsOAuthProvider):
    pass


class _PrivateKeyJwt(_RestoresExpiry, PrivateKeyJWTOAuthProvider):
    pass


_Flow = TypeVar("_Flow", bound=_ClientCredentials)


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
        provider = _with_secret(_ClientCredentials, spec, oauth, storage, secret, method, scope)
    provider._storage = storage
    return provider


def _with_secret(
    flow: type[_Flow],
    spec: McpServerSpec,
    oauth: McpOAuthSpec,
    storage: SealedTokenStorage,
    secret: str,
    method: Literal["client_secret_basic", "client_secret_post", "none"],
    scope: str | None,
) -> _Flow:
    """The SDK's client-credentials ``flow`` as ``oauth.client_id``, authenticated with
    ``secret`` by ``method`` (``none``: a public client), at the configured issuer only."""
    return flow(
        server_url=spec.url,
        storage=storage,
        client_id=oauth.client_id,
        client_secret=secret,
        token_endpoint_auth_method=method,  # type: ignore[arg-type]  # "none" works too
        scope=scope,
        issuer=oauth.issuer,
    )


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
    provider = _with_secret(_JwtBearerGrant, spec, oauth, storage, secret, method, scope)
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
