"""The identities file (docs/operators.md "Callers") and the directory that authenticates callers
against it."""

from __future__ import annotations

import hashlib
import hmac
import re
import zoneinfo
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from vocero.contracts.domain import Caller
from vocero.contracts.errors import ConfigError
from vocero.identity.config_files import ROOT, convert, read_yaml


class _IdentitiesFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    callers: list[Caller]


class IdentityDirectory:
    """Callers by credential and by phone number.

    Tokens are held only as SHA-256 digests keyed in a dict: looking one up hashes the presented
    token first, so the time taken does not depend on how much of it matches a real one.
    """

    def __init__(self, callers: Iterable[Caller]) -> None:
        self._by_digest: dict[bytes, Caller] = {}
        self._by_phone: dict[str, Caller] = {}
        self._by_subject: dict[tuple[str, str], Caller] = {}
        for caller in callers:
            self._by_subject.setdefault((caller.tenant, caller.subject_ref), caller)
            digest = _digest(caller.token.reveal())
            if digest in self._by_digest:
                raise ValueError("duplicate caller token")
            self._by_digest[digest] = caller
            if caller.phone:
                self._by_phone.setdefault(normalize_phone(caller.phone), caller)

    def __len__(self) -> int:
        return len(self._by_digest)

    def authenticate(self, token: str) -> Caller | None:
        """The caller holding ``token``, or ``None``: an unknown token is denied."""
        if not token:
            return None
        caller = self._by_digest.get(_digest(token))
        if caller is None:
            return None
        if not hmac.compare_digest(caller.token.reveal().encode(), token.encode()):
            return None
        return caller

    def caller(self, tenant: str, subject_ref: str) -> Caller | None:
        """The caller behind an opaque ``subject_ref`` of ``tenant`` (the follow-up queue rings
        the number on file, never one a model supplied), or ``None``."""
        return self._by_subject.get((tenant, subject_ref))

    def by_phone(self, phone: str) -> Caller | None:
        """The first caller listed with this phone number (punctuation ignored), or ``None``."""
        key = normalize_phone(phone)
        return self._by_phone.get(key) if key else None


def load_identities(path: str | Path) -> IdentityDirectory:
    """Load and validate an identities file; problems raise ``ConfigError`` naming the field."""
    file = Path(path)
    data = read_yaml(file)
    if not isinstance(data, dict):
        raise ConfigError(str(file), ROOT, "expected a mapping with a `callers` list")
    _check_phone_types(file, data)
    callers = convert(data, _IdentitiesFile, file).callers
    _check_callers(file, callers)
    return IdentityDirectory(callers)


def check_timezone(name: str) -> str | None:
    """The problem with an IANA time zone name, or ``None`` when ``zoneinfo`` knows it."""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown IANA time zone {name!r}"
    return None


def normalize_phone(phone: str) -> str:
    """Keep a leading ``+`` and the digits: ``"+34 600-000-001"`` -> ``"+34600000001"``."""
    digits = re.sub(r"\D", "", phone)
    return "+" + digits if phone.strip().startswith("+") and digits else digits


def _check_callers(file: Path, callers: list[Caller]) -> None:
    seen: dict[bytes, int] = {}
    for index, caller in enumerate(callers):
        where = f"callers[{index}]"
        named = {"token": caller.token.reveal(), "subject": caller.subject, "tenant": caller.tenant}
        for name, value in named.items():
            if not value.strip():
                raise ConfigError(str(file), f"{where}.{name}", "must not be empty")
        problem = check_timezone(caller.timezone)
        if problem:
            raise ConfigError(str(file), f"{where}.timezone", problem)
        first = seen.setdefault(_digest(caller.token.reveal()), index)
        if first != index:
            raise ConfigError(str(file), f"{where}.token", f"duplicate of callers[{first}].token")


def _check_phone_types(file: Path, data: dict[str, Any]) -> None:
    """YAML reads an unquoted ``+34600000001`` as an integer; say so instead of a type error."""
    callers = data.get("callers")
    for index, entry in enumerate(callers if isinstance(callers, list) else []):
        if isinstance(entry, dict) and isinstance(entry.get("phone"), int):
            raise ConfigError(
                str(file), f"callers[{index}].phone", "must be a string: quote phone numbers"
            )


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
