"""Reading YAML configuration files into msgspec types, with errors that name file and field.

msgspec reports where validation failed as ``$.callers[2].timezone``; operators want
``callers[2].timezone``. Every failure here is a :class:`ConfigError` carrying the file path, the
field path and the problem, so a bad file is fixed in one look.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import yaml

from vocero.contracts import secrets
from vocero.contracts.errors import ConfigError

T = TypeVar("T")

ROOT = "(document)"
"""The field name used when the problem is the document as a whole."""

_AT = re.compile(r"^(?P<problem>.*) - at `\$(?P<path>.*)`$", re.DOTALL)
_NAMED_FIELD = re.compile(
    r"^Object (?P<what>missing required|contains unknown) field `(?P<name>.+)`$"
)


def read_yaml(path: Path) -> Any:
    """Parse one YAML file; unreadable or malformed files raise :class:`ConfigError`."""
    return parse_yaml(path, read_text(path))


def read_text(path: Path) -> str:
    """The text of one configuration file; an unreadable file raises :class:`ConfigError`."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), ROOT, f"cannot read file: {exc.strerror}") from exc


def parse_yaml(path: Path, text: str) -> Any:
    """Parse YAML ``text`` read from ``path``; malformed text raises :class:`ConfigError`."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(
            str(path), _yaml_location(exc), f"invalid YAML: {_yaml_problem(exc)}"
        ) from exc


def convert(data: Any, target: type[T], path: Path, prefix: str = "") -> T:
    """``msgspec.convert`` with its validation error translated into a :class:`ConfigError`."""
    try:
        return msgspec.convert(data, target, dec_hook=secrets.dec_hook)
    except msgspec.ValidationError as exc:
        field, problem = translate(str(exc))
        raise ConfigError(str(path), join(prefix, field) or ROOT, problem) from exc


def translate(message: str) -> tuple[str, str]:
    """Split a msgspec validation message into (field path, problem).

    >>> translate("Expected `str`, got `int` - at `$.callers[2].timezone`")
    ('callers[2].timezone', 'Expected `str`, got `int`')
    >>> translate("Object missing required field `token` - at `$.callers[0]`")
    ('callers[0].token', 'missing required field')
    """
    found = _AT.match(message)
    problem, field = (found["problem"], found["path"].lstrip(".")) if found else (message, "")
    named = _NAMED_FIELD.match(problem)
    if named:
        problem = (
            "missing required field" if named["what"] == "missing required" else "unknown field"
        )
        field = join(field, named["name"])
    return field, problem


def join(prefix: str, field: str) -> str:
    """Join two field paths: ``join("callers[0]", "token") == "callers[0].token"``."""
    if not prefix or not field:
        return prefix or field
    return prefix + field if field.startswith("[") else f"{prefix}.{field}"


def _yaml_location(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ROOT


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    return str(problem) if problem else type(exc).__name__
