"""Newest-first pages of a table, by keyset: ``(at, id)`` descending, resumed after a cursor.

A page is read with one more row than it holds: when that row exists, the last row of the page
is the cursor of the next one (:class:`Page.next`). The cursor names a position, not an offset,
so rows added while an operator pages never shift what the next page shows, and the query stays
an ordered range scan however deep the page. Operators see it as an opaque token
(:meth:`Cursor.token`); a token that does not parse raises ``ValueError``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, and_, or_
from sqlalchemy.orm import InstrumentedAttribute

T = TypeVar("T")
S = TypeVar("S", bound="Select[Any]")

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_TOKEN = 128
_TOKEN = re.compile(r"[A-Za-z0-9_-]{4,128}")
_INSIDE = re.compile(r"(?P<micros>[0-9]{1,17}):(?P<id>[A-Za-z0-9_]{1,64})")


@dataclass(frozen=True, slots=True)
class Cursor:
    """The last row of a page: the next page starts strictly before it."""

    at: datetime
    id: str

    def token(self) -> str:
        micros = (self.at - EPOCH) // timedelta(microseconds=1)
        raw = f"{micros}:{self.id}".encode("ascii")
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")

    @classmethod
    def parse(cls, token: str) -> Cursor:
        """The cursor a :meth:`token` names; ``ValueError`` for anything else."""
        if not _TOKEN.fullmatch(token):
            raise ValueError("not a cursor")
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError("not a cursor") from None
        found = _INSIDE.fullmatch(raw)
        if found is None:
            raise ValueError("not a cursor")
        try:
            at = EPOCH + timedelta(microseconds=int(found["micros"]))
        except OverflowError:
            raise ValueError("not a cursor") from None
        return cls(at=at, id=found["id"])


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next: Cursor | None = None
    """Where the next page starts; ``None`` when this one is the last."""


def newest_first(
    query: S,
    at: InstrumentedAttribute[datetime],
    ident: InstrumentedAttribute[str],
    cursor: Cursor | None,
    limit: int,
) -> S:
    """``query`` ordered by ``(at, ident)`` descending, after ``cursor``, one row past ``limit``
    (so :func:`page_of` can tell whether another page follows)."""
    if cursor is not None:
        query = query.where(or_(at < cursor.at, and_(at == cursor.at, ident < cursor.id)))
    return query.order_by(at.desc(), ident.desc()).limit(limit + 1)


def page_of(
    rows: Sequence[Any], limit: int, convert: Callable[[Any], T], key: Callable[[T], Cursor]
) -> Page[T]:
    """The page of ``rows`` read by :func:`newest_first` with ``limit``."""
    items = [convert(row) for row in rows[:limit]]
    more = len(rows) > limit and bool(items)
    return Page(items, key(items[-1]) if more else None)
