"""Control characters never reach a rendered log line as themselves.

A value a client chose (an OAuth ``iss``, a request path, an exception message quoting either)
may hold a newline: printed as is, the text after it reads as a record of its own (``… [info]
operator.login name=admin``). Every string field is escaped before rendering, in both formats:
C0 and C1 controls, DEL, the Unicode line and paragraph separators and the bidirectional
overrides become ``\\n``, ``\\x1b``, ``\\u2028`` … A traceback keeps its own line breaks, but the
messages in it are escaped (:func:`escape_messages`). The console renderer's line is escaped
once more as a whole (:class:`OneLine`), so nothing but the record's own traceback follows it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_CONTROL_BUT_NEWLINE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BLOCKS = ("stack", "exception")
"""Fields that are several lines by design: their own line breaks stay."""
_PASS_THROUGH = frozenset({"exc_info", "stack_info", "_record", "_from_structlog"})
_MAX_DEPTH = 16


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """``text`` on one line: every control character written as its escape."""
    return _CONTROL.sub(_escaped, text) if _CONTROL.search(text) else text


def escape_block(text: str) -> str:
    """A block of lines (a traceback): every control character but the newline escaped."""
    return _CONTROL_BUT_NEWLINE.sub(_escaped, text)


def escape_value(value: Any, depth: int = 0) -> Any:
    """``value`` with every string in it escaped (dict keys too), at any depth."""
    if isinstance(value, str):
        return escape(value)
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {escape_value(k, depth + 1): escape_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escape_value(v, depth + 1) for v in value]
    return value


def escape_event(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: every field (and its name) escaped; tracebacks keep their line
    breaks only."""
    for key in [k for k in event_dict if isinstance(k, str) and _CONTROL.search(k)]:
        event_dict[escape(key)] = event_dict.pop(key)
    for key, value in event_dict.items():
        if key in _PASS_THROUGH:
            continue
        if key in _BLOCKS and isinstance(value, str):
            event_dict[key] = escape_block(value)
        else:
            event_dict[key] = escape_value(value)
    return event_dict


def escape_messages(text: str, exc: BaseException) -> str:
    """A formatted traceback of ``exc`` whose exception messages (and notes) are each on one
    line: a message with a line break in it would print a line that reads as a record."""
    for part in sorted(set(_messages(exc)), key=len, reverse=True):
        text = text.replace(part, escape(part))
    return escape_block(text)


def _messages(exc: BaseException, seen: set[int] | None = None) -> Iterator[str]:
    seen = set() if seen is None else seen
    if id(exc) in seen:
        return
    seen.add(id(exc))
    for part in (_text(exc), *(str(n) for n in getattr(exc, "__notes__", ()) or ())):
        if _CONTROL.search(part):
            yield part
    inner = list(getattr(exc, "exceptions", ()) or ())
    for linked in (exc.__cause__, exc.__context__, *inner):
        if isinstance(linked, BaseException):
            yield from _messages(linked, seen)


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # boundary: a broken __str__ is the traceback module's problem
        return ""


class OneLine:
    """Wraps the console renderer: the record's line is escaped as a whole (a value's ``repr``
    may hold a raw newline too); only the traceback, escaped as a block, follows it."""

    def __init__(self, inner: Callable[[Any, str, MutableMapping[str, Any]], str]) -> None:
        self._inner = inner

    def __call__(self, logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> str:
        blocks = [event_dict.pop(k) for k in _BLOCKS if isinstance(event_dict.get(k), str)]
        line = escape(self._inner(logger, method, event_dict))
        return "\n".join([line, *(escape_block(b) for b in blocks)])
