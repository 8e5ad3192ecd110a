"""Callers from the team's identity provider: ``session.connect.v1`` tokens that are JWTs
(SPEC §11, docs/security.md "Caller tokens from an identity provider").

A token of three dot-separated base64url parts is a JWT (:func:`looks_like_jwt`). It is accepted
only when its ``alg`` is RS256, ES256 or EdDSA, its ``kid`` names a key of the provider's JWKS
(:class:`~vocero.identity.jwks.KeySource`), the signature verifies with that key, ``iss`` and
``aud`` are the configured ones and ``exp`` / ``nbf`` hold within :data:`SKEW_S`. Every refusal
raises :class:`TokenDenied` with one reason code of :data:`REASONS`; the token itself is never
logged, audited or put in an exception message. The claims become a
:class:`~vocero.contracts.domain.Caller` through a :class:`ClaimNames` mapping (claim names are
configurable; a dotted name such as ``realm_access.roles`` reads a nested claim).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import structlog
from joserfc import jws
from joserfc.errors import BadSignatureError, JoseError, SecurityWarning
from joserfc.jwk import ECKey, OKPKey, RSAKey

from vocero.contracts.domain import Caller
from vocero.contracts.errors import AuthError, ConfigError
from vocero.contracts.secrets import Secret
from vocero.identity.identities import check_timezone
from vocero.identity.jwks import KeySource, PublicKey

log = structlog.get_logger("vocero.identity")

SKEW_S = 60.0
ALGORITHMS: dict[str, type[PublicKey]] = {"RS256": RSAKey, "ES256": ECKey, "EdDSA": OKPKey}
"""The accepted algorithms and the key type each needs. ``none`` and every HMAC algorithm are
refused before any key is looked at (an HS256 token "signed" with the public key is the classic
key-confusion attack)."""

REASONS = (
    "token_expired",
    "not_yet_valid",
    "bad_signature",
    "wrong_issuer",
    "wrong_audience",
    "unknown_key",
    "unsupported_algorithm",
    "malformed_token",
)

_B64URL = r"[A-Za-z0-9_-]+"
_JWT = re.compile(rf"^{_B64URL}\.{_B64URL}\.[A-Za-z0-9_-]*$")


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated base64url parts (the signature may be empty: ``alg: none``)."""
    return bool(_JWT.match(token))


class TokenDenied(AuthError):
    """A caller JWT refused; ``str(exc)`` is its reason code (one of :data:`REASONS`)."""

    def __init__(self, reason_code: str) -> None:
        super().__init__(reason_code)
        self.reason_code = reason_code


@dataclass(frozen=True, slots=True)
class ClaimNames:
    """Which claim fills which caller field (``--caller-claims field=claim,...``)."""

    subject: str = "sub"
    tenant: str = "tenant"
    roles: str = "roles"
    scopes: str = "scope"
    locale: str = "locale"
    timezone: str = "zoneinfo"
    phone: str = "phone_number"

    @classmethod
    def parse(cls, text: str) -> ClaimNames:
        """``"tenant=org_id,roles=realm_access.roles"`` over the defaults; a bad entry raises
        :class:`ConfigError`."""
        names = cls()
        known = {f.name for f in fields(cls)}
        for entry in filter(None, (part.strip() for part in text.split(","))):
            field, sep, claim = (s.strip() for s in entry.partition("="))
            if not sep or field not in known or not claim:
                raise ConfigError(
                    "--caller-claims", entry, f"expected FIELD=CLAIM with FIELD one of "
                    f"{', '.join(sorted(known))}",
                )
            names = replace(names, **{field: claim})
        return names


@dataclass(frozen=True, slots=True)
class CallerJwtSettings:
    jwks: str
    issuer: str
    audience: str
    claims: ClaimNames = ClaimNames()
    skew_s: float = SKEW_S


class CallerJwtVerifier:
    """Verifies caller JWTs against the provider's keys and maps their claims to a caller."""

    def __init__(
        self,
        settings: CallerJwtSettings,
        keys: KeySource,
        *,
        now: Callable[[], float] = time.time,
    ) -> None:
        if not settings.issuer or not settings.audience:
            raise ConfigError(
                "--caller-jwks", "caller_issuer", "--caller-issuer and --caller-audience are "
                "required with --caller-jwks",
            )
        self.settings = settings
        self.keys = keys
        self._now = now

    async def verify(self, token: str) -> Caller:
        """The caller the token names; :class:`TokenDenied` with the reason otherwise."""
        return self._caller(token, await self.verified_claims(token))

    async def verified_claims(self, token: str) -> dict[str, Any]:
        """The claims of a token whose algorithm, key, signature, ``iss``, ``aud``, ``exp`` and
        ``nbf`` hold; :class:`TokenDenied` with the reason otherwise. Operator JWTs
        (:mod:`vocero.identity.operator_tokens`) are verified by this same method."""
        header, claims = _decode(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in ALGORITHMS:
            raise TokenDenied("unsupported_algorithm")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise TokenDenied("unknown_key")
        key = await self.keys.key(kid)
        if key is None:
            raise TokenDenied("unknown_key")
        _check_signature(token, key, alg)
        self._check_claims(claims)
        return claims

    def _check_claims(self, claims: Mapping[str, Any]) -> None:
        settings = self.settings
        if claims.get("iss") != settings.issuer:
            raise TokenDenied("wrong_issuer")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if settings.audience not in audiences:
            raise TokenDenied("wrong_audience")
        now = self._now()
        exp, nbf = claims.get("exp"), claims.get("nbf", None)
        if not isinstance(exp, int | float) or isinstance(exp, bool):
            raise TokenDenied("malformed_token")
        if nbf is not None and (not isinstance(nbf, int | float) or isinstance(nbf, bool)):
            raise TokenDenied("malformed_token")
        if now > float(exp) + settings.skew_s:
            raise TokenDenied("token_expired")
        if nbf is not None and now < float(nbf) - settings.skew_s:
            raise TokenDenied("not_yet_valid")

    def _caller(self, token: str, claims: Mapping[str, Any]) -> Caller:
        names = self.settings.claims
        subject, tenant = _claim(claims, names.subject), _claim(claims, names.tenant)
        if not isinstance(subject, str) or not subject.strip():
            raise TokenDenied("malformed_token")
        if not isinstance(tenant, str) or not tenant.strip():
            raise TokenDenied("malformed_token")
        timezone = _text(_claim(claims, names.timezone)) or "UTC"
        if check_timezone(timezone):
            timezone = "UTC"
        return Caller(
            token=Secret(token, remember=False),
            subject=subject,
            tenant=tenant,
            roles=_words(_claim(claims, names.roles)),
            scopes=_words(_claim(claims, names.scopes)),
            locale=_text(_claim(claims, names.locale)) or "en-US",
            timezone=timezone,
            phone=_text(_claim(claims, names.phone)),
        )


def expires_at(token: str) -> float | None:
    """The ``exp`` of a token already verified (``None`` when it has none)."""
    try:
        exp = _decode(token)[1].get("exp")
    except TokenDenied:
        return None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


def _decode(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    parts = token.split(".")
    if len(parts) != 3 or not looks_like_jwt(token):
        raise TokenDenied("malformed_token")
    header, claims = _json_part(parts[0]), _json_part(parts[1])
    return header, claims


def _json_part(part: str) -> dict[str, Any]:
    try:
        value = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise TokenDenied("malformed_token") from None
    if not isinstance(value, dict):
        raise TokenDenied("malformed_token")
    return value


def _check_signature(token: str, key: PublicKey, alg: str) -> None:
    if not isinstance(key, ALGORITHMS[alg]):
        raise TokenDenied("bad_signature")  # the kid names a key of another type
    if alg == "ES256" and isinstance(key, ECKey) and key.curve_name != "P-256":
        raise TokenDenied("bad_signature")
    try:
        with warnings.catch_warnings():
            # joserfc flags "EdDSA" as superseded by "Ed25519" (RFC 9864); SPEC §11 names EdDSA.
            warnings.simplefilter("ignore", SecurityWarning)
            jws.deserialize_compact(token, key, algorithms=[alg])
    except BadSignatureError:
        raise TokenDenied("bad_signature") from None
    except (JoseError, ValueError, TypeError):
        raise TokenDenied("malformed_token") from None


def _claim(claims: Mapping[str, Any], name: str) -> Any:
    """The claim ``name``; when absent and ``name`` is dotted, the nested one it names
    (``realm_access.roles``). URL-named claims (Auth0's ``https://x.example/tenant``) are read
    whole first."""
    if name in claims:
        return claims[name]
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _words(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int) and not isinstance(v, bool)]
    return []


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
