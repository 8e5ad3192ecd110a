"""A typed secret value: credentials that cannot be printed by accident.

``Secret("…")`` holds a caller token, a resume token, an operator token or a key. Its ``repr``,
``str`` and ``format`` are ``[redacted]``, so a secret inside a dataclass, a Struct, a log event
or a traceback frame renders as ``[redacted]``; the value itself comes out only through an
explicit :meth:`Secret.reveal`. It is not a ``str`` (concatenation, JSON encoding and ``in``
refuse it), so code that needs the value has to say so.

Every secret Vocero holds (configured or issued) that is long enough to be recognisable
(:data:`SCRUB_MIN_CHARS`) is remembered, weakly, while it is alive, so that text which may quote
one (a rendered exception) can be scrubbed with :func:`scrub` before it is written anywhere.
Values a client merely presented are wrapped with ``remember=False``: a client must not be able
to choose words that get cut out of the log.
"""

from __future__ import annotations

import hmac
import weakref
from typing import Any

REDACTED = "[redacted]"
SCRUB_MIN_CHARS = 6
"""Shorter values are not scrubbed from text (they would match ordinary words)."""

_live: weakref.WeakSet[Secret] = weakref.WeakSet()


class Secret:
    """A secret string; see the module docstring."""

    __slots__ = ("__weakref__", "_value")

    def __init__(self, value: str, *, remember: bool = True) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            raise TypeError(f"a Secret holds a str, not {type(value).__name__}")
        self._value = value
        if remember and len(value) >= SCRUB_MIN_CHARS:
            _live.add(self)

    def reveal(self) -> str:
        """The secret itself, for the one place that needs it (a digest, a comparison)."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({REDACTED!r})"

    def __str__(self) -> str:
        return REDACTED

    def __format__(self, spec: str) -> str:
        return REDACTED

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        """Equal to the same secret or to its plain value, compared in constant time."""
        if isinstance(other, Secret):
            other = other._value
        if not isinstance(other, str):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other.encode())

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> Any:
        raise TypeError("a Secret is not pickled")


NO_SECRET = Secret("")
"""The empty secret (a default for optional secret fields)."""


def scrub(text: str) -> str:
    """``text`` with every live secret's value replaced by ``[redacted]``."""
    for secret in list(_live):
        value = secret.reveal()
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def dec_hook(type_: type, obj: Any) -> Any:
    """msgspec ``dec_hook``: decode a configuration string into a :class:`Secret` field."""
    if type_ is Secret and isinstance(obj, str):
        return Secret(obj)
    raise NotImplementedError(f"cannot decode {type_!r}")
