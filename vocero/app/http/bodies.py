"""Operator request bodies (docs/operators.md "Operator bodies"): one decoder, one 400 shape, one
rule for dates.

Every operator route that reads a body decodes it with :func:`decode`; whatever is wrong with
it raises :class:`BodyError`, which :func:`rejected` turns into ``400 {"error": {"code",
"field", "reason"}}``. ``field`` is the JSON path of the offending member without its ``$.``
(``"usage_until"``, ``"languages[0]"``), or ``""`` when the body as a whole is wrong (not JSON,
not an object). ``reason`` says what was expected; it never quotes the submitted value.

Dates: where a body asks for a date-time, an RFC 3339 date-time with an offset is taken as it
is and a plain date (``2027-12-31``) means the end of that day in UTC
(``2027-12-31T23:59:59.999999Z``); see :func:`instant`.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import TypeVar

import msgspec
from starlette.responses import Response

T = TypeVar("T")

_PATH = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_NAMED = re.compile(r"(?:missing required|contains unknown) field `(?P<name>[^`]+)`")
_PLAIN_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$"
)


class BodyError(Exception):
    """A rejected body: ``code`` is stable (``invalid_json``, ``invalid_body``, or a route's
    own), ``field`` the member at fault (``""``: the whole body), ``reason`` what was wanted."""

    def __init__(self, code: str, field: str, reason: str) -> None:
        super().__init__(f"{code}: {field}: {reason}")
        self.code, self.field, self.reason = code, field, reason


def rejected(code: str, field: str, reason: str, status: int = 400) -> Response:
    """The operator API's 400 error body."""
    body = {"error": {"code": code, "field": field, "reason": reason}}
    return Response(msgspec.json.encode(body), status_code=status, media_type="application/json")


def from_error(error: BodyError, status: int = 400) -> Response:
    return rejected(error.code, error.field, error.reason, status)


def decode(raw: bytes, kind: type[T], *, empty: bytes | None = None) -> T:
    """Decode ``raw`` as ``kind``; ``empty`` stands in for an empty body (``b"{}"`` where every
    member is optional). Raises :class:`BodyError`."""
    if not raw.strip() and empty is not None:
        raw = empty
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.ValidationError as exc:
        field, reason = split_validation(exc)
        raise BodyError("invalid_body", field, reason) from None
    except msgspec.DecodeError:
        raise BodyError("invalid_json", "", "the body must be a JSON object") from None


def split_validation(exc: msgspec.ValidationError) -> tuple[str, str]:
    """``("languages[0]", "Expected `str`, got `int`")`` from msgspec's message; a missing or
    unknown member is the field itself (``"consent_ref"``, ``"inner.extra"``)."""
    text = str(exc)
    where = _PATH.search(text)
    path = where.group("path") if where is not None else ""
    reason = text[: where.start()] if where is not None else text
    named = _NAMED.search(reason)
    if named is not None:
        path = f"{path}.{named.group('name')}" if path else named.group("name")
    if reason.startswith("Expected `object`") and not path:
        reason = "the body must be a JSON object"
    return path, reason or "invalid value"


def instant(value: str, field: str) -> datetime:
    """An aware UTC datetime from an RFC 3339 date-time (offset required) or a plain date,
    which means the last instant of that day in UTC. Raises :class:`BodyError` naming
    ``field`` otherwise."""
    text = value.strip()
    try:
        if _PLAIN_DATE.match(text):
            return datetime.combine(date.fromisoformat(text), time.max, UTC)
        if _DATE_TIME.match(text):
            return datetime.fromisoformat(_iso(text)).astimezone(UTC)
    except ValueError:
        pass
    raise BodyError(
        "invalid_body", field, "an RFC 3339 date-time with an offset, or a date (YYYY-MM-DD)"
    )


def _iso(text: str) -> str:
    """Python's parser takes at most microseconds and wants ``+00:00`` spelled out."""
    text = text.replace(" ", "T").replace("t", "T")
    if text[-1] in "Zz":
        text = text[:-1] + "+00:00"
    head, dot, tail = text.partition(".")
    if dot:
        digits = re.match(r"\d*", tail).group()  # type: ignore[union-attr]
        text = f"{head}.{digits[:6].ljust(6, '0')}{tail[len(digits):]}"
    return text
