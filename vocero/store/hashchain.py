"""The audit hash chain, sans IO: canonical JSON, entry hashes and the redaction guard.

An entry's hash is ``sha256(prev_hash + canonical_json(payload))`` in lowercase hex, where the
payload is ``{seq, chain, session_id, kind, actor, at, data}``, ``at`` is UTC written
``YYYY-MM-DDTHH:MM:SS.ffffffZ``, and canonical JSON has sorted keys, ``,``/``:`` separators and
UTF-8 text. The first entry of a chain has ``prev_hash`` :data:`GENESIS_HASH`. Anyone holding the
events from ``GET /v1/audit`` can recompute the chain with these rules alone.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

GENESIS_HASH = "0" * 64

SENSITIVE_WORDS = frozenset(
    {
        "token", "password", "passwd", "secret", "credential", "credentials", "authorization",
        "cookie", "apikey", "audio", "transcript", "transcription",
    }
)
"""Key words that mark a secret or raw speech."""
OPAQUE_SUFFIXES = frozenset({"ref", "id", "hash", "sha256", "ms", "count", "bytes", "rate"})
"""A key ending in one of these names a reference or a measure, not the value itself
(``resume_token_hash``, ``transcript_ref``, ``audio_ms``)."""
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")


def canonical_json(value: Any) -> str:
    """Sorted keys, compact separators, no NaN; raises ``TypeError`` for non-JSON values."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def format_at(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def entry_hash(
    prev_hash: str,
    *,
    seq: int,
    chain: str,
    session_id: str,
    kind: str,
    actor: str,
    at: datetime,
    data: Mapping[str, Any],
) -> str:
    payload = {
        "seq": seq,
        "chain": chain,
        "session_id": session_id,
        "kind": kind,
        "actor": actor,
        "at": format_at(at),
        "data": data,
    }
    return hashlib.sha256((prev_hash + canonical_json(payload)).encode("utf-8")).hexdigest()


def key_words(key: str) -> list[str]:
    """``"refAudio"``, ``"ref-audio"`` and ``"REF_AUDIO"`` all give ``["ref", "audio"]``."""
    return [word for word in _NON_WORD.split(_CAMEL_HUMP.sub("_", key).lower()) if word]


def is_sensitive_key(key: str) -> bool:
    words = key_words(key)
    if not words or words[-1] in OPAQUE_SUFFIXES:
        return False
    return bool(SENSITIVE_WORDS.intersection(words)) or {"api", "key"} <= set(words)


def sensitive_paths(value: Any, path: str = "$") -> list[str]:
    """JSON paths of every key in ``value`` (recursively) that looks like a secret or speech."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            child = f"{path}.{key}"
            if is_sensitive_key(str(key)):
                found.append(child)
            found.extend(sensitive_paths(item, child))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found.extend(sensitive_paths(item, f"{path}[{index}]"))
    return found
