"""Operator authentication for ``/v1/*`` (SPEC §3): bearer tokens with roles."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import msgspec
import yaml

from vocero.contracts.errors import ConfigError


class Operator(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    token: str
    name: str
    roles: list[str]


class OperatorDirectory:
    def __init__(self, operators: list[Operator]) -> None:
        self._by_digest = {_digest(o.token): o for o in operators if o.token}

    def authenticate(self, token: str) -> Operator | None:
        digest = _digest(token)
        for known, operator in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return operator
        return None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_operators(path: str, admin_token: str) -> OperatorDirectory:
    operators: list[Operator] = []
    if path:
        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or []
            operators = msgspec.convert(raw, list[Operator])
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(path, "$", str(exc)) from None
        except msgspec.ValidationError as exc:
            raise ConfigError(path, str(exc).rsplit("at `", 1)[-1].rstrip("`"), str(exc)) from None
    if admin_token:
        operators.append(Operator(token=admin_token, name="admin", roles=["admin"]))
    return OperatorDirectory(operators)
