"""``vocero serve --print-config``: the settings ``serve`` would run with, each with where its
value came from (``flag``, ``env`` ``VOCERO_*``, or ``default``), as JSON on standard output.

An operator checks a configuration rollback with it: the value and its source both show which
change is in effect. Secrets never appear: the operator token and keys show only whether they
are set, and a database URL loses its password.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from vocero.app.settings import Settings
from vocero.contracts.secrets import Secret

REDACTED = "[redacted]"
SECRET_ENV = ("VOCERO_LLM_API_KEY", "VOCERO_STT_API_KEY", "VOCERO_TTS_API_KEY",
              "VOCERO_VAULT_KEY")
"""Keys read from the environment only: shown as set or not, never their value."""


def effective_config(settings: Settings, argv: Sequence[str]) -> dict[str, Any]:
    """Every setting as ``{"value", "source"}``, plus the resolved profile and identity paths."""
    given = _flags(argv)
    out: dict[str, Any] = {}
    for item in dataclasses.fields(Settings):
        name = item.name
        env = f"VOCERO_{name.upper()}"
        source = "flag" if name in given else "env" if env in os.environ else "default"
        entry: dict[str, Any] = {"value": _shown(name, getattr(settings, name)),
                                 "source": source}
        if source == "env":
            entry["env"] = env
        out[name] = entry
    out["profiles"]["resolved"] = str(settings.profiles_dir.resolve())
    out["identities"]["resolved"] = str(settings.identities_file.resolve())
    for env in SECRET_ENV:
        out[env.removeprefix("VOCERO_").lower()] = {
            "value": REDACTED if os.environ.get(env) else None,
            "source": "env" if env in os.environ else "default"}
    return out


def print_config(settings: Settings, argv: Sequence[str]) -> int:
    print(json.dumps(effective_config(settings, argv), indent=2, sort_keys=True), flush=True)
    return 0


def _flags(argv: Sequence[str]) -> set[str]:
    """Setting names given as ``--flag value`` or ``--flag=value`` on the command line."""
    names = set()
    for word in argv:
        if word.startswith("--"):
            names.add(word[2:].split("=", 1)[0].replace("-", "_"))
    return names


def _shown(name: str, value: Any) -> Any:
    if isinstance(value, Secret):
        return REDACTED if value.reveal() else None
    if name == "db":
        return redact_url(str(value))
    return value


def redact_url(url: str) -> str:
    """A database URL without its password (``postgresql://u:***@host/db``)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return REDACTED
