"""Exceptions in logs: the traceback as plain text, without local variables, scrubbed of secrets.

Rich and better-exceptions tracebacks print every frame's local variables; a relay frame holds
the caller, the session handle and the settings, so such a traceback would print their tokens.
Every format renders exceptions with this processor instead: standard-library formatting (code
lines only, chained causes included), then every live :class:`~vocero.contracts.secrets.Secret`
value that appears in the text (an exception message may quote one) is replaced. A message
never spans lines: its control characters are escaped (:mod:`vocero.observability.escaping`).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import MutableMapping
from types import TracebackType
from typing import Any

from vocero.contracts.secrets import scrub
from vocero.observability.escaping import escape_messages

ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


def render_exception(
    _logger: object, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: ``exc_info`` becomes a scrubbed ``exception`` string."""
    info = _exc_info(event_dict.pop("exc_info", None))
    if info is not None:
        event_dict["exception"] = format_exception(info)
    elif isinstance(event_dict.get("exception"), str):
        event_dict["exception"] = scrub(event_dict["exception"])
    for key in ("stack", "exception"):
        if isinstance(event_dict.get(key), str):
            event_dict[key] = scrub(event_dict[key])
    return event_dict


def format_exception(info: ExcInfo) -> str:
    """The traceback as the interpreter prints it (no locals), each exception's message on one
    line (:func:`~vocero.observability.escaping.escape_messages`), with secrets scrubbed."""
    text = "".join(traceback.format_exception(*info)).rstrip("\n")
    return scrub(escape_messages(text, info[1]))


def plain_traceback(sio: Any, exc_info: ExcInfo) -> None:
    """``ConsoleRenderer`` exception formatter, in case an ``exc_info`` ever reaches it."""
    sio.write("\n" + format_exception(exc_info))


def _exc_info(value: Any) -> ExcInfo | None:
    if not value:
        return None
    if isinstance(value, BaseException):
        return (type(value), value, value.__traceback__)
    if isinstance(value, tuple) and len(value) == 3 and value[0] is not None:
        return value
    current = sys.exc_info()
    return current if current[0] is not None else None
