"""An identifier without a pattern keeps the separator its description shows (issue 42).

A bare string field whose only rule is the tool's line ("four digits, a dash and a letter, like
4410-K") gets the caller's identifier grouped that way, whether the caller said the dash or
not; without such an example the identifier stays as found. A library's locker desk, with
names no suite uses.
"""

from __future__ import annotations

import datetime as dt

from vocero.contracts.domain import ToolDefinition
from vocero.inference.dialogue import router

TODAY = dt.date(2026, 5, 4)
LOCKER = ToolDefinition(
    name="lockers.rental",
    description="Where a member's locker rental stands; tag_no is the number on the key tag: "
    "four digits, a dash and a letter, like 4410-K.",
    input_schema={"type": "object", "properties": {"tag_no": {"type": "string"}},
                  "required": ["tag_no"]},
)  # fmt: skip
PLAIN = ToolDefinition(
    name="lockers.plain",
    description="Where a member's locker rental stands, by the number on the key tag.",
    input_schema=LOCKER.input_schema,
)


def tag(line: str, tool: ToolDefinition = LOCKER) -> object:
    return router.fill_arguments(tool, line, TODAY)[0].get("tag_no")


def test_the_callers_dash_is_kept_where_the_description_shows_one() -> None:
    assert tag("Is my locker still mine? The key tag says tag 5521-Q.") == "5521-Q"
    assert tag("It's tag number 5521 Q.") == "5521-Q"


def test_without_an_example_the_identifier_is_as_found() -> None:
    assert tag("The key tag says tag 5521-Q.", PLAIN) == "5521Q"


def test_an_example_of_another_shape_changes_nothing() -> None:
    assert router.shaped_as_shown("55210", "like 4410-K") == "55210"
    assert router.shaped_as_shown("AB1234", "a code such as ab/1234") == "AB/1234"
