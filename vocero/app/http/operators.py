"""Operator authentication for ``/v1/*`` (docs/operators.md): bearer tokens with roles and the
tenants they may see.

An operator is one of the ``--operators FILE`` entries (``token``, ``name``, ``roles``, optional
``tenants``: absent, every tenant), the single ``--operator-token`` admin (``platform_admin``), or
the bearer of a JWT from the identity provider (``--operator-jwks``; claims ``roles`` and
``tenants``, ``name`` or ``sub``). :attr:`Operator.scope` is what every route narrows its queries
with (:class:`~vocero.store.scope.OperatorScope`): role ``platform_admin`` or no ``tenants`` in the
file sees every tenant; a JWT without ``tenants`` sees none."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import msgspec
import structlog

from vocero.contracts.secrets import NO_SECRET, Secret
from vocero.identity.config_files import convert, read_yaml
from vocero.identity.operator_tokens import OperatorTokens, TokenDenied, looks_like_jwt
from vocero.store.scope import EVERY_TENANT, OperatorScope

PLATFORM_ADMIN = "platform_admin"
"""The role that sees and acts on every tenant."""

log = structlog.get_logger(__name__)


class Operator(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: Secret
    name: str
    roles: list[str]
    tenants: list[str] | None = None
    """The tenants this operator sees; ``None``: every tenant."""

    def __post_init__(self) -> None:
        if not isinstance(self.token, Secret):
            msgspec.structs.force_setattr(self, "token", Secret(self.token))

    @property
    def scope(self) -> OperatorScope:
        if PLATFORM_ADMIN in self.roles or self.tenants is None:
            return EVERY_TENANT
        return OperatorScope.of(self.tenants)


class OperatorDirectory:
    def __init__(self, operators: list[Operator], tokens: OperatorTokens | None = None) -> None:
        self._by_digest = {_digest(o.token.reveal()): o for o in operators if o.token}
        self._tokens = tokens

    def authenticate(self, token: str) -> Operator | None:
        """The operator of a static token (the operators file, ``--operator-token``)."""
        digest = _digest(token)
        for known, operator in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return operator
        return None

    async def identify(self, token: str) -> Operator | None:
        """The operator of ``token``: a static one, else a verified JWT; ``None`` for anything
        else (a refused JWT is logged by its reason code, never the token)."""
        operator = self.authenticate(token)
        if operator is not None or self._tokens is None or not looks_like_jwt(token):
            return operator
        try:
            claims = await self._tokens.verify(token)
        except TokenDenied as refused:
            log.warning("operator.token_refused", reason_code=refused.reason_code)
            return None
        return Operator(token=NO_SECRET, name=claims.name, roles=list(claims.roles),
                        tenants=list(claims.tenants))


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_operators(path: str, admin_token: Secret, *, jwks: str = "", issuer: str = "",
                   audience: str = "") -> OperatorDirectory:
    operators: list[Operator] = []
    if path:
        file = Path(path)
        operators = convert(read_yaml(file) or [], list[Operator], file)
    if admin_token:
        operators.append(Operator(token=admin_token, name="admin",
                                  roles=["admin", PLATFORM_ADMIN]))
    tokens = OperatorTokens.configured(jwks, issuer, audience) if jwks else None
    return OperatorDirectory(operators, tokens)
