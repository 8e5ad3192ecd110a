"""Enterprise-managed authorization (SEP-990) and the jwt-bearer grant (RFC 7523), per caller
and per server (docs/mcp.md "Enterprise-managed authorization", docs/adr/0027 addendum).

SEP-990 has two legs. Leg 1, at the enterprise IdP: an identity assertion (an ID token) is
exchanged (RFC 8693) for an Identity Assertion JWT Authorization Grant (ID-JAG) whose audience is
the MCP server's authorization server and whose ``resource`` is the MCP server. Leg 2, at that
authorization server: the ID-JAG is the ``assertion`` of a ``jwt-bearer`` grant; the answer is
the access token for the MCP server.

* :class:`EnterpriseExchanger` (``auth: {enterprise: ...}``): both legs for each caller, with
  the caller's own JWT as the identity assertion, cached per caller like
  :class:`~vocero.mcp_gateway.delegation.TokenExchanger` and sent on that caller's calls only;
  any failure fails the call closed (``authorization_unavailable``), nothing is sent.
* :func:`id_jag_provider`: leg 1 for a server-level ``oauth: {grant: identity_assertion}``,
  whose leg 2 is the SDK's ``IdentityAssertionOAuthProvider``.

The forms are built here (sans-IO); no token, assertion or secret is logged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.auth import OAuthTokenError
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE
from mcp.shared.auth_utils import resource_url_from_server_url

from vocero.contracts.domain import EnterpriseAuthSpec, McpOAuthSpec, Principal
from vocero.contracts.secrets import Secret
from vocero.mcp_gateway.delegation import (
    GRANT_TYPE,
    PerCallerTokens,
    SubjectTokens,
    client_auth,
    lifetime_of,
)
from vocero.mcp_gateway.errors import ServerRefusedError

ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
SUBJECT_TOKEN_TYPES = {
    "id_token": "urn:ietf:params:oauth:token-type:id_token",
    "jwt": "urn:ietf:params:oauth:token-type:jwt",
}


def id_jag_form(
    subject: str,
    *,
    subject_token_type: str,
    audience: str,
    resource: str,
    scope: str = "",
    client_id: str = "",
) -> dict[str, str]:
    """Leg 1: the RFC 8693 request for an ID-JAG (``client_id`` for a public IdP client)."""
    form = {
        "grant_type": GRANT_TYPE,
        "requested_token_type": ID_JAG_TOKEN_TYPE,
        "subject_token": subject,
        "subject_token_type": SUBJECT_TOKEN_TYPES[subject_token_type],
        "audience": audience,
        "resource": resource,
    }
    if scope:
        form["scope"] = scope
    if client_id:
        form["client_id"] = client_id
    return form


def jwt_bearer_form(assertion: str, *, resource: str, scope: str = "") -> dict[str, str]:
    """Leg 2 (and the workload grant): RFC 7523 §2.1, the JWT as the grant."""
    form = {"grant_type": JWT_BEARER_GRANT_TYPE, "assertion": assertion, "resource": resource}
    if scope:
        form["scope"] = scope
    return form


def idp_client(
    client_id: str, secret_env: str, environ: Mapping[str, str]
) -> tuple[httpx2.BasicAuth | None, str]:
    """How Vocero authenticates at the IdP: Basic with the secret, or a public ``client_id``."""
    if not secret_env:
        return None, client_id
    secret = environ.get(secret_env, "")
    if not secret:
        raise ServerRefusedError("idp_secret_missing")
    return client_auth(client_id, secret), ""


class EnterpriseExchanger(PerCallerTokens):
    """One server's SEP-990 flow per caller: the caller's JWT -> ID-JAG -> access token."""

    def __init__(
        self,
        server: str,
        spec: EnterpriseAuthSpec,
        server_url: str,
        subjects: SubjectTokens | None,
        **options: Any,
    ) -> None:
        super().__init__(server, subjects, **options)
        self.spec = spec
        self.resource = spec.resource or resource_url_from_server_url(server_url)

    async def _exchange(self, subject: Secret, principal: Principal) -> tuple[Secret, float]:
        spec = self.spec
        secret = self._environ.get(spec.client_secret_env, "")
        if not secret:
            await self._failed("client_secret_missing", principal)
        try:
            idp_auth, public_id = idp_client(
                spec.idp_client_id, spec.idp_client_secret_env, self._environ
            )
        except ServerRefusedError:
            await self._failed("idp_secret_missing", principal)
        leg1 = id_jag_form(
            subject.reveal(),
            subject_token_type=spec.subject_token_type,
            audience=spec.issuer,
            resource=self.resource,
            scope=spec.scope,
            client_id=public_id,
        )
        grant = await self._post(spec.idp_token_url, leg1, idp_auth, principal, "id_jag")
        issued_type = grant.get("issued_token_type")
        if issued_type is not None and issued_type != ID_JAG_TOKEN_TYPE:
            await self._failed("id_jag_wrong_type", principal)
        leg2 = jwt_bearer_form(str(grant["access_token"]), resource=self.resource,
                               scope=spec.scope)
        body = await self._post(
            spec.token_url, leg2, client_auth(spec.client_id, secret), principal, "jwt_bearer"
        )
        return Secret(str(body["access_token"])), lifetime_of(body)


def read_assertion(oauth: McpOAuthSpec, environ: Mapping[str, str]) -> str:
    """The JWT a server-level grant presents: from ``assertion_file`` (read at each request,
    so a rotated token is picked up) or ``assertion_env``; :class:`ServerRefusedError` when
    there is none."""
    if oauth.assertion_file:
        try:
            text = Path(oauth.assertion_file).read_text().strip()
        except OSError:
            text = ""
    else:
        text = str(environ.get(oauth.assertion_env, "")) if oauth.assertion_env else ""
    if not text:
        raise ServerRefusedError("oauth_assertion_missing")
    return text


def id_jag_provider(
    oauth: McpOAuthSpec,
    environ: Mapping[str, str],
    *,
    transport: httpx2.AsyncBaseTransport | None = None,
    timeout_s: float = 10.0,
) -> Callable[[str, str], Awaitable[str]]:
    """Leg 1 for the SDK's ``IdentityAssertionOAuthProvider``: ``(audience, resource) ->
    ID-JAG``, exchanging Vocero's own ID token (``assertion_env``/``assertion_file``)."""
    if not oauth.idp_token_url:
        raise ServerRefusedError("oauth_idp_required")
    idp_auth, public_id = idp_client(oauth.idp_client_id, oauth.idp_client_secret_env, environ)

    async def provide(audience: str, resource: str) -> str:
        try:
            form = id_jag_form(
                read_assertion(oauth, environ),
                subject_token_type="id_token",
                audience=audience,
                resource=resource,
                scope=" ".join(oauth.scopes),
                client_id=public_id,
            )
            async with httpx2.AsyncClient(
                transport=transport, timeout=httpx2.Timeout(timeout_s), follow_redirects=False
            ) as client:
                response = await client.post(
                    oauth.idp_token_url, data=form, auth=idp_auth or httpx2.USE_CLIENT_DEFAULT
                )
            body = response.json() if response.status_code == httpx2.codes.OK else None
        except (ServerRefusedError, httpx2.HTTPError, ValueError) as exc:
            raise OAuthTokenError(f"id_jag_unavailable ({type(exc).__name__})") from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise OAuthTokenError(f"id_jag_refused ({response.status_code})")
        return token

    return provide
