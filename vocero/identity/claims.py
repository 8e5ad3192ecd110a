"""A profile's approved claim catalog (docs/grounding.md): read from a file or inline, validated at
load.

``claims:`` in a profile is either a path relative to the profile file (a YAML list of claims, or
a mapping with a ``claims`` list) or an inline list. Every problem raises :class:`ConfigError`
naming the file the claim was written in, the claim (by key once it has one, else by position)
and the field: ``claims[returns_opened].conditions[1]: 'unless damaged' does not appear in
text``. The checks are the catalog's approval boundary: a claim is spoken verbatim, so its
conditions must be in its own text, its wording must fit one answer, and every claim names the
evidence it rests on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from vocero.contracts.domain import Claim, ClaimSource
from vocero.contracts.errors import ConfigError
from vocero.identity.config_files import ROOT, convert, read_yaml
from vocero.store.knowledge import parse_valid_until

FIELD = "claims"


@dataclass(frozen=True, slots=True)
class RawCatalog:
    """The claims as written, and the file they were written in."""

    file: Path
    entries: list[Any]


def read_catalog(
    profile_file: Path, value: Any, reader: Callable[[Path], Any] = read_yaml
) -> RawCatalog:
    """The ``claims:`` value of a profile: inline, or the file it names (relative paths resolve
    against the profile's own directory), read with ``reader``."""
    if value is None:
        return RawCatalog(profile_file, [])
    if isinstance(value, list):
        return RawCatalog(profile_file, value)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(str(profile_file), FIELD, "expected a list of claims or a file path")
    path = Path(value)
    if not path.is_absolute():
        path = profile_file.parent / path
    if reader is read_yaml and not path.is_file():
        raise ConfigError(str(profile_file), FIELD, f"no such catalog file: {path.resolve()}")
    document = reader(path)
    if isinstance(document, dict) and set(document) == {FIELD}:
        document = document[FIELD]
    if document is None:
        document = []
    if not isinstance(document, list):
        raise ConfigError(str(path), ROOT, "expected a list of claims (or `claims:` with a list)")
    return RawCatalog(path, document)


def load_claims(raw: RawCatalog, *, word_budget: int) -> list[Claim]:
    """Decode and check every claim; the first problem raises naming file, claim and field."""
    claims: list[Claim] = []
    first_of: dict[str, int] = {}
    for index, entry in enumerate(raw.entries):
        where = _where(index, entry)
        claim = convert(_normalise(entry), Claim, raw.file, where)
        where = f"{FIELD}[{claim.key}]" if claim.key.strip() else where
        first = first_of.setdefault(claim.key, index)
        if first != index:
            raise ConfigError(str(raw.file), f"{where}.key", f"duplicate of {FIELD}[{first}]")
        _check_claim(raw.file, where, claim, word_budget)
        claims.append(claim)
    return claims


def words(text: str) -> int:
    return len(text.split())


def _where(index: int, entry: Any) -> str:
    key = entry.get("key") if isinstance(entry, dict) else None
    if isinstance(key, str) and key.strip():
        return f"{FIELD}[{key.strip()}]"
    return f"{FIELD}[{index}]"


def _normalise(entry: Any) -> Any:
    """YAML reads ``version: 3`` as an int and ``valid_until: 2027-12-31`` as a date."""
    if not isinstance(entry, dict):
        return entry
    entry = dict(entry)
    until = entry.get("valid_until")
    if isinstance(until, date | datetime):
        entry["valid_until"] = until.isoformat()
    sources = entry.get("sources")
    if isinstance(sources, list):
        entry["sources"] = [_normalise_source(s) for s in sources]
    return entry


def _normalise_source(source: Any) -> Any:
    if not isinstance(source, dict):
        return source
    version = source.get("version")
    if isinstance(version, int | float | date) and not isinstance(version, bool):
        return {**source, "version": str(version)}
    return source


_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def _check_claim(file: Path, where: str, claim: Claim, word_budget: int) -> None:
    path = str(file)
    if not _KEY.match(claim.key):
        raise ConfigError(path, f"{where}.key", "must be letters, digits, '_', '.' or '-'")
    if not claim.text.strip():
        raise ConfigError(path, f"{where}.text", "must not be empty")
    count = words(claim.text)
    if count > word_budget:
        raise ConfigError(
            path,
            f"{where}.text",
            f"{count} words, over the profile's word_budget of {word_budget}: split it into "
            "reviewed claims that each keep their conditions",
        )
    if not claim.sources:
        raise ConfigError(path, f"{where}.sources", "at least one evidence source is required")
    for j, source in enumerate(claim.sources):
        _check_source(path, f"{where}.sources[{j}]", source)
    for j, condition in enumerate(claim.conditions):
        _check_condition(path, f"{where}.conditions[{j}]", condition, claim.text)
    if claim.valid_until and parse_valid_until(claim.valid_until) is None:
        raise ConfigError(
            path, f"{where}.valid_until", f"not an RFC3339 date-time or date: {claim.valid_until!r}"
        )


def _check_source(path: str, where: str, source: ClaimSource) -> None:
    for field in ("id", "version", "passage"):
        if not getattr(source, field).strip():
            raise ConfigError(path, f"{where}.{field}", "must not be empty")


def _check_condition(path: str, where: str, condition: str, text: str) -> None:
    if not condition.strip():
        raise ConfigError(path, where, "must not be empty")
    if squash(condition) not in squash(text):
        raise ConfigError(path, where, f"{condition!r} does not appear in text")


def squash(text: str) -> str:
    """Case- and spacing-insensitive form used to find a condition inside a text."""
    return " ".join(text.casefold().split())
