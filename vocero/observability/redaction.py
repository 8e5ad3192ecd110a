"""The structlog processor that keeps secrets, credentials and raw speech out of logs.

A value is redacted by the name of its key, at any depth of dicts, lists, tuples and msgspec
Structs: ``token``, ``resume_token``, ``operator_token``, ``password``, ``secret``,
``credential(s)``, ``authorization``, ``api_key``, ``audio``, ``pcm``, ``ref_audio``,
``ref_text``, ``arguments``, ``tool_arguments``, and any key starting with ``sensitive_``.
Matching is on the last ``_``/``-`` separated word, so ``audio_ms`` or ``token_count`` stay.
A :class:`~vocero.contracts.secrets.Secret` is redacted under any key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from typing import Any

import msgspec

from vocero.contracts.secrets import Secret

REDACTED = "[redacted]"

_SENSITIVE_KEY = re.compile(
    r"(?:^|[_-])(?:audio|pcm|token|password|passwd|secret|credentials?|authorization"
    r"|api[_-]?key|arguments|ref_text)$"
    r"|^sensitive_",
    re.IGNORECASE,
)
_MAX_DEPTH = 16
_PASS_THROUGH = frozenset({"exc_info", "stack_info", "_record", "_from_structlog"})
"""structlog's own keys whose values later processors expect untouched."""


def is_sensitive(key: object) -> bool:
    """Whether a value stored under ``key`` must never be logged."""
    return isinstance(key, str) and _SENSITIVE_KEY.search(key) is not None


def redact(value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` with every sensitive key's value replaced by ``[redacted]``."""
    if depth > _MAX_DEPTH or isinstance(value, Secret):
        return REDACTED
    if isinstance(value, msgspec.Struct):
        value = msgspec.structs.asdict(value)
    if isinstance(value, Mapping):
        return {k: REDACTED if is_sensitive(k) else redact(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [redact(v, depth + 1) for v in value]
    return value


def redact_event(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: redact the event dict in place (its top-level keys and below)."""
    for key, value in event_dict.items():
        if key not in _PASS_THROUGH:
            event_dict[key] = REDACTED if is_sensitive(key) else redact(value)
    return event_dict
