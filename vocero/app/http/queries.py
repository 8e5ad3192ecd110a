"""Query parameters of the operator HTTP API (docs/operators.md "Paging"): one parser for every
integer and cursor.

Every integer a route reads from its query string goes through :func:`integer`: ASCII digits
only (no sign, no blanks, none of the Unicode digits ``str.isdigit`` also accepts, such as
``²``), at most :data:`MAX_DIGITS` of them (so nothing near Python's 4,300-digit conversion limit
is ever converted), and within the route's bounds. A list paged newest-first reads its ``limit``
and ``cursor`` through :func:`page`. Whatever is wrong raises :class:`QueryError`, which
:func:`vocero.app.http.operator_api.guarded` answers with ``400 {"error": {"code": "invalid_query",
"field", "reason"}}`` before the route does anything; ``reason`` never quotes the value.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request

from vocero.store.paging import Cursor, Page

MAX_DIGITS = 19
"""Enough for any 64-bit value; a longer string is refused before it is converted."""
_DIGITS = re.compile(r"[0-9]{1,19}")
PAGE, PAGE_MAX = 100, 500
"""Rows of a newest-first list when ``limit`` is not given, and the most one page holds."""


class QueryError(Exception):
    """A rejected query parameter: ``field`` is its name, ``reason`` what was wanted."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


def integer(request: Request, name: str, *, default: int, low: int, high: int) -> int:
    """The integer query parameter ``name`` (``default`` when absent or empty)."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    if not _DIGITS.fullmatch(text) or not low <= int(text) <= high:
        raise QueryError(name, f"must be an integer from {low} to {high}")
    return int(text)


def page(request: Request, *, default: int = PAGE, high: int = PAGE_MAX) -> tuple[Cursor | None,
                                                                                   int]:
    """``cursor`` (a list's ``next``, when given) and ``limit`` of a newest-first list."""
    limit = integer(request, "limit", default=default, low=1, high=high)
    token = request.query_params.get("cursor") or ""
    if not token:
        return None, limit
    try:
        return Cursor.parse(token), limit
    except ValueError:
        raise QueryError("cursor", "must be the next of a previous page of this list") from None


def paged(page: Page[Any], items: list[Any]) -> dict[str, Any]:
    """``{"items": [...]}``, plus ``next`` (the cursor of the next page) when more remain."""
    body: dict[str, Any] = {"items": items}
    if page.next is not None:
        body["next"] = page.next.token()
    return body
