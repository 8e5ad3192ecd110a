"""Operator bearer JWTs from the team's identity provider (SPEC §11 "Operators",
docs/operators.md "Operators from the identity provider").

``--operator-jwks URL|FILE --operator-issuer ISS --operator-audience AUD``: a bearer token that
looks like a JWT is verified by the same verifier as callers' JWTs
(:meth:`~vocero.identity.caller_jwt.CallerJwtVerifier.verified_claims`: RS256, ES256 or EdDSA
only, ``kid`` in the JWKS, signature, ``iss``, ``aud``, ``exp``/``nbf`` within 60 s, a JWKS URL
refetched on an unknown ``kid`` at most once a minute), against the operators' own keys, issuer
and audience. Its claims name the operator: ``name`` (else ``sub``), ``roles`` and ``tenants``
(lists of strings, or space-separated strings; absent: none). A refusal raises
:class:`~vocero.identity.caller_jwt.TokenDenied` with its reason code; the token is never part of
an error, a log line or an audit event.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vocero.contracts.errors import ConfigError
from vocero.identity.caller_jwt import (
    CallerJwtSettings,
    CallerJwtVerifier,
    TokenDenied,
    looks_like_jwt,
)
from vocero.identity.jwks import KeySource

__all__ = ["OperatorClaims", "OperatorTokens", "TokenDenied", "looks_like_jwt"]

MAX_NAME = 128


@dataclass(frozen=True, slots=True)
class OperatorClaims:
    """Who a verified operator JWT names."""

    name: str
    roles: tuple[str, ...]
    tenants: tuple[str, ...]


class OperatorTokens:
    """Operator JWTs: :meth:`verify` returns :class:`OperatorClaims` or raises
    :class:`TokenDenied`."""

    def __init__(self, verifier: CallerJwtVerifier) -> None:
        self._verifier = verifier

    @classmethod
    def configured(cls, jwks: str, issuer: str, audience: str) -> OperatorTokens:
        """From the ``--operator-*`` flags; a missing flag or JWKS file raises
        :class:`ConfigError` naming the operator flag."""
        for field, value in (("operator_issuer", issuer), ("operator_audience", audience)):
            if not value:
                raise ConfigError("--operator-jwks", field, "required with --operator-jwks")
        if not jwks.startswith(("http://", "https://")) and not Path(jwks).is_file():
            raise ConfigError(jwks, "operator_jwks", "no such file (or give an http(s) URL)")
        settings = CallerJwtSettings(jwks=jwks, issuer=issuer, audience=audience)
        return cls(CallerJwtVerifier(settings, KeySource(jwks)))

    async def verify(self, token: str) -> OperatorClaims:
        claims = await self._verifier.verified_claims(token)
        name = claims.get("name") or claims.get("sub")
        if not isinstance(name, str) or not name.strip():
            raise TokenDenied("malformed_token")
        return OperatorClaims(name=name.strip()[:MAX_NAME], roles=_strings(claims.get("roles")),
                              tenants=_strings(claims.get("tenants")))


def _strings(value: Any) -> tuple[str, ...]:
    """A list-of-strings claim, or a space-separated string (a provider's single-valued claim);
    absent: empty. Anything else refuses the token."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TokenDenied("malformed_token")
    return tuple(value)
