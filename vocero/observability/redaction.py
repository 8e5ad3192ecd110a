"""The structlog processor that keeps secrets, credentials and raw speech out of logs.

A value is redacted by the name of its key, at any depth of dicts, lists, tuples and msgspec
Structs: ``token``, ``resume_token``, ``operator_token``, ``password``, ``secret``,
``credential(s)``, ``authorization``, ``api_key``, ``audio``, ``pcm``, ``ref_audio``,
``ref_text``, ``arguments``, ``tool_arguments``, and any key starting with ``sensitive_``.
Matching is on the last ``_``/``-`` separated word, so ``audio_ms`` or ``token_count`` stay.
A :class:`~vocero.contracts.secrets.Secret` is redacted under any key.

A request target in a log line (the access log's ``GET /path?query``) keeps its path; its query
is redacted whole on a *private* path (an OAuth redirect carries a code and a state), and on
any other path each parameter whose name may carry a credential (:func:`redact_target`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, MutableMapping
from typing import Any
from urllib.parse import unquote_plus

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


_CREDENTIAL_PARAMETER = re.compile(
    r"(?:^|[_-])(?:token|password|passwd|secret|credentials?|authorization|api[_-]?key|key"
    r"|code|state|sig|signature|assertion|session)$",
    re.IGNORECASE,
)


def redact_target(target: str, private_paths: Collection[str] = ()) -> str:
    """``/path?query`` with the query redacted: whole on a path of ``private_paths``, else
    the value of each parameter whose name may carry a credential (``code``, ``state``,
    ``access_token``, ``api_key`` …)."""
    path, mark, query = target.partition("?")
    if not mark:
        return target
    if path in private_paths:
        return f"{path}?{REDACTED}"
    kept = []
    for pair in query.split("&"):
        name, equals, _ = pair.partition("=")
        secret = equals and _CREDENTIAL_PARAMETER.search(unquote_plus(name))
        kept.append(f"{name}={REDACTED}" if secret else pair)
    return f"{path}?{'&'.join(kept)}"


def redact_event(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: redact the event dict in place (its top-level keys and below)."""
    for key, value in event_dict.items():
        if key not in _PASS_THROUGH:
            event_dict[key] = REDACTED if is_sensitive(key) else redact(value)
    return event_dict
