"""Operator authentication for ``/v1/*`` (docs/operators.md): bearer tokens with roles."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import msgspec

from vocero.contracts.secrets import Secret
from vocero.identity.config_files import convert, read_yaml


class Operator(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: Secret
    name: str
    roles: list[str]

    def __post_init__(self) -> None:
        if not isinstance(self.token, Secret):
            msgspec.structs.force_setattr(self, "token", Secret(self.token))


class OperatorDirectory:
    def __init__(self, operators: list[Operator]) -> None:
        self._by_digest = {_digest(o.token.reveal()): o for o in operators if o.token}

    def authenticate(self, token: str) -> Operator | None:
        digest = _digest(token)
        for known, operator in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return operator
        return None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_operators(path: str, admin_token: Secret) -> OperatorDirectory:
    operators: list[Operator] = []
    if path:
        file = Path(path)
        operators = convert(read_yaml(file) or [], list[Operator], file)
    if admin_token:
        operators.append(Operator(token=admin_token, name="admin", roles=["admin"]))
    return OperatorDirectory(operators)
