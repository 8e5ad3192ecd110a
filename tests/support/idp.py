"""A local identity provider for the tests (SPEC §11): real keys (cryptography through joserfc),
a JWKS published over HTTP, tokens signed with RS256, ES256 or EdDSA, key rotation, and the
RFC 8693 token-exchange endpoint with ``client_secret_basic`` plus RFC 7662 introspection of
the tokens it issued (what the delegated MCP server checks). It can be told to fail.

For enterprise-managed authorization (SEP-990) the same endpoint issues an ID-JAG when asked
for ``urn:ietf:params:oauth:token-type:id-jag``, and ``/as/token`` plays the MCP server's
authorization server (issuer :data:`AS_ISSUER`): the RFC 7523 jwt-bearer grant, the ID-JAG
checked (signature, ``typ``, ``aud``, ``resource``, ``client_id``), an access token issued that
introspection knows. What it saw is in ``grants``.

It runs in a thread of the test process (a standard-library HTTP server), so tests read what it
saw directly: ``jwks_fetches``, ``exchanges``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

from cryptography.hazmat.primitives import serialization
from joserfc import jwt
from joserfc.errors import JoseError, SecurityWarning
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

ISSUER = "https://idp.test.example/realms/vocero"
AUDIENCE = "vocero-realtime"
CLIENT_ID = "vocero-gateway"
CLIENT_SECRET = "exchange-s3cret-value"
ALGORITHMS = {"RS256": "RSA", "ES256": "EC", "EdDSA": "OKP"}
AS_ISSUER = "https://as.mcp.test.example"
AS_CLIENT_ID = "vocero-at-mcp-as"
AS_CLIENT_SECRET = "as-s3cret-value"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def new_key(alg: str, kid: str) -> RSAKey | ECKey | OKPKey:
    parameters = {"kid": kid, "use": "sig"}
    if alg == "RS256":
        return RSAKey.generate_key(2048, parameters=parameters, private=True)
    if alg == "ES256":
        return ECKey.generate_key("P-256", parameters=parameters, private=True)
    return OKPKey.generate_key("Ed25519", parameters=parameters, private=True)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class Exchange:
    """One token-exchange request as the provider saw it."""

    client: tuple[str, str] | None
    """(client id, secret) of its ``client_secret_basic`` authorization; ``None`` without one."""
    form: dict[str, str]
    issued: str = ""


@dataclass
class IdentityProvider:
    keys: dict[str, RSAKey | ECKey | OKPKey] = field(default_factory=dict)
    """Published keys by kid (private halves kept here to sign)."""
    jwks_fetches: int = 0
    exchanges: list[Exchange] = field(default_factory=list)
    issued: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Exchanged access tokens -> what they were issued for (introspection reads it)."""
    fail_exchange: str = ""
    """``""``: answer; ``http_error`` (503), ``bad_json``, ``no_token``: fail that way."""
    grants: list[Exchange] = field(default_factory=list)
    """jwt-bearer requests at ``/as/token``."""
    fail_grant: str = ""
    """``""``: answer; ``invalid_grant``: refuse every jwt-bearer grant."""
    expires_in: int = 300
    port: int = 0

    def __post_init__(self) -> None:
        for alg in ALGORITHMS:
            self.add_key(alg, f"{alg.lower()}-1")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    @property
    def as_token_url(self) -> str:
        return f"{self.url}/as/token"

    @property
    def introspection_url(self) -> str:
        return f"{self.url}/introspect"

    def add_key(self, alg: str, kid: str) -> str:
        self.keys[kid] = new_key(alg, kid)
        return kid

    def rotate(self, alg: str = "RS256") -> str:
        """A new key of ``alg`` replaces every published one of that type; its kid."""
        kty = ALGORITHMS[alg]
        kid = f"{alg.lower()}-{secrets.token_hex(4)}"
        self.keys = {k: v for k, v in self.keys.items() if v.key_type != kty}
        return self.add_key(alg, kid)

    def kid_of(self, alg: str) -> str:
        return next(k for k, v in self.keys.items() if v.key_type == ALGORITHMS[alg])

    def jwks(self) -> dict[str, Any]:
        return KeySet(list(self.keys.values())).as_dict(private=False)

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        base: dict[str, Any] = {
            "iss": ISSUER, "aud": AUDIENCE, "sub": "user-1", "tenant": "acme",
            "roles": ["customer"], "scope": "orders:read orders:write", "locale": "en-US",
            "zoneinfo": "Europe/Madrid", "phone_number": "+34600000001",
            "iat": now, "nbf": now, "exp": now + 600,
        }
        base.update(overrides)
        return {k: v for k, v in base.items() if v is not None}

    def token(self, alg: str = "RS256", *, kid: str | None = None,
              key: RSAKey | ECKey | OKPKey | None = None, **claims: Any) -> str:
        """A JWT of ``claims`` over :meth:`claims`, signed with the published key of ``alg``
        (or ``key``), its header naming ``kid``."""
        kid = kid or self.kid_of(alg)
        signer = key or self.keys[kid]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SecurityWarning)
            return jwt.encode({"alg": alg, "kid": kid}, self.claims(**claims), signer,
                              algorithms=[alg])

    def unsigned(self, **claims: Any) -> str:
        """``alg: none``."""
        header = b64(json.dumps({"alg": "none", "kid": self.kid_of("RS256")}).encode())
        return f"{header}.{b64(json.dumps(self.claims(**claims)).encode())}."

    def hmac_with_public_key(self, **claims: Any) -> str:
        """HS256 keyed with the RSA public key's PEM (key confusion)."""
        kid = self.kid_of("RS256")
        public = self.keys[kid].get_op_key("verify")
        pem = public.public_bytes(serialization.Encoding.PEM,  # type: ignore[union-attr]
                                  serialization.PublicFormat.SubjectPublicKeyInfo)
        header = b64(json.dumps({"alg": "HS256", "kid": kid}).encode())
        body = b64(json.dumps(self.claims(**claims)).encode())
        signature = hmac.new(pem, f"{header}.{body}".encode(), hashlib.sha256).digest()
        return f"{header}.{body}.{b64(signature)}"

    # ------------------------------------------------------------------- the HTTP side

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, Any]:
        if method == "GET" and path == "/jwks":
            self.jwks_fetches += 1
            return 200, self.jwks()
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if method == "POST" and path == "/token":
            return self._exchange(headers.get("authorization", ""), form)
        if method == "POST" and path == "/as/token":
            return self._jwt_bearer(headers.get("authorization", ""), form)
        if method == "POST" and path == "/introspect":
            info = self.issued.get(form.get("token", ""))
            return 200, ({"active": True, **info} if info else {"active": False})
        return 404, {"error": "not_found"}

    def _exchange(self, authorization: str, form: dict[str, str]) -> tuple[int, Any]:
        record = _received(self.exchanges, authorization, form)
        if record.client != (CLIENT_ID, CLIENT_SECRET):
            return 401, {"error": "invalid_client"}
        if form.get("requested_token_type") == ID_JAG:
            return self._id_jag(record, form)
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" or \
                form.get("subject_token_type") != "urn:ietf:params:oauth:token-type:jwt":
            return 400, {"error": "invalid_request"}
        subject = self._verified(form.get("subject_token", ""))
        if subject is None:
            return 400, {"error": "invalid_grant"}
        if self.fail_exchange == "http_error":
            return 503, {"error": "temporarily_unavailable"}
        if self.fail_exchange == "bad_json":
            return 200, b"<html>not json</html>"
        if self.fail_exchange == "no_token":
            return 200, {"token_type": "Bearer", "expires_in": 300}
        answer = self._access_token(record, "xt_", subject["sub"], form.get("audience", ""))
        return 200, {**answer, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}

    def _id_jag(self, record: Exchange, form: dict[str, str]) -> tuple[int, Any]:
        """SEP-990 leg 1: an ID-JAG for the authorization server ``audience`` names."""
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" or \
                form.get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token" or \
                not form.get("audience") or not form.get("resource"):
            return 400, {"error": "invalid_request"}
        subject = self._verified(form.get("subject_token", ""))
        if subject is None:
            return 400, {"error": "invalid_grant"}
        if self.fail_exchange == "http_error":
            return 503, {"error": "temporarily_unavailable"}
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": subject["sub"], "aud": form["audience"],
                  "resource": form["resource"], "client_id": AS_CLIENT_ID,
                  "jti": secrets.token_hex(8), "iat": now, "exp": now + 300}  # fmt: skip
        kid = self.kid_of("ES256")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SecurityWarning)
            grant = jwt.encode({"alg": "ES256", "kid": kid, "typ": "oauth-id-jag+jwt"}, claims,
                               self.keys[kid], algorithms=["ES256"])  # fmt: skip
        record.issued = grant
        return 200, {"access_token": grant, "issued_token_type": ID_JAG, "token_type": "N_A",
                     "expires_in": 300}  # fmt: skip

    def _jwt_bearer(self, authorization: str, form: dict[str, str]) -> tuple[int, Any]:
        """SEP-990 leg 2 at the MCP server's authorization server (RFC 7523 §2.1)."""
        record = _received(self.grants, authorization, form)
        if record.client != (AS_CLIENT_ID, AS_CLIENT_SECRET):
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != JWT_BEARER:
            return 400, {"error": "unsupported_grant_type"}
        assertion = form.get("assertion", "")
        claims = self._verified(assertion)
        try:
            header = json.loads(base64.urlsafe_b64decode(assertion.split(".")[0] + "=="))
        except (ValueError, IndexError):
            header = {}
        if claims is None or header.get("typ") != "oauth-id-jag+jwt" or \
                claims.get("aud") != AS_ISSUER or claims.get("client_id") != AS_CLIENT_ID or \
                claims.get("resource") != form.get("resource") or self.fail_grant:
            return 400, {"error": "invalid_grant"}
        return 200, self._access_token(record, "at_", claims["sub"], claims["resource"])

    def _access_token(self, record: Exchange, prefix: str, sub: str, aud: str) -> dict[str, Any]:
        """A new access token for ``record``'s request, known to introspection (for ``sub``, at
        ``aud``, with the scope the request asked for); the token endpoint's answer."""
        issued = prefix + secrets.token_urlsafe(24)
        record.issued = issued
        self.issued[issued] = {"sub": sub, "aud": aud, "scope": record.form.get("scope", "")}
        return {"access_token": issued, "token_type": "Bearer", "expires_in": self.expires_in}

    def _verified(self, token: str) -> dict[str, Any] | None:
        try:
            header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
            key = self.keys[header["kid"]]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SecurityWarning)
                return dict(jwt.decode(token, key, algorithms=[header["alg"]]).claims)
        except (JoseError, KeyError, ValueError, IndexError):
            return None


def _received(seen: list[Exchange], authorization: str, form: dict[str, str]) -> Exchange:
    """A token-endpoint request, kept in ``seen`` whether or not its client is the right one."""
    record = Exchange(_basic_client(authorization), form)
    seen.append(record)
    return record


def _basic_client(authorization: str) -> tuple[str, str] | None:
    if not authorization.startswith("Basic "):
        return None
    decoded = base64.b64decode(authorization[6:]).decode()
    client, _, secret = decoded.partition(":")
    return unquote(client), unquote(secret)


@contextmanager
def identity_provider(**options: Any) -> Iterator[IdentityProvider]:
    """The provider, listening on a free loopback port until the block ends."""
    idp = IdentityProvider(**options)

    class Handler(BaseHTTPRequestHandler):
        def _serve(self, method: str) -> None:
            length = int(self.headers.get("content-length") or 0)
            status, document = idp.handle(
                method, self.path, {k.lower(): v for k, v in self.headers.items()},
                self.rfile.read(length),
            )
            payload = document if isinstance(document, bytes) else json.dumps(document).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    idp.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield idp
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
