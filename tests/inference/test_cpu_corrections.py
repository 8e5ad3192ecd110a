"""Issue 42, "A correction is not heard as one": a changed value said during a read-back is a
correction of the pending proposal whatever its wording, on the CPU dialogue's rules (sans-IO,
:func:`vocero.inference.dialogue.corrections.correction`), for the three shapes a profile gives a
moment: a free-text ``when``, one ``date-time`` field, a ``date`` and a ``time`` field. Tool and
field names are ones the code has never seen.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ToolIntent
from vocero.inference.dialogue import corrections

TODAY = dt.date(2026, 12, 2)  # a Wednesday
NOW = dt.datetime(2026, 12, 2, 8, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))


def tool(name: str, **moment: dict[str, Any]) -> ToolDefinition:
    return ToolDefinition(
        name=name, description="Move one of the caller's reservations.",
        input_schema={"type": "object",
                      "properties": {"pass_ref": {"type": "string", "pattern": r"^PS-[0-9]{3}$"},
                                     **moment},
                      "required": ["pass_ref", *moment]},
    )  # fmt: skip


FREE = tool("passes.shift", when={"type": "string"})
INSTANT = tool("passes.retime", starts_at={"type": "string", "format": "date-time"})
SPLIT = tool("passes.move", day={"type": "string", "format": "date"},
             hour={"type": "string", "format": "time"})
PENDING = {
    FREE.name: {"pass_ref": "PS-101", "when": "Thursday at 9"},
    INSTANT.name: {"pass_ref": "PS-101", "starts_at": "2026-12-03T09:00:00+01:00"},
    SPLIT.name: {"pass_ref": "PS-101", "day": "2026-12-03", "hour": "09:00"},
}
# wording -> (free text, date-time, date + time) after the correction
CASES = {
    "no wait, make that Friday at 11": ("Friday at 11", "2026-12-04T11:00:00+01:00",
                                        ("2026-12-04", "11:00")),
    "actually Friday at 11": ("Friday at 11", "2026-12-04T11:00:00+01:00",
                              ("2026-12-04", "11:00")),
    "make that 11": ("Thursday at 11", "2026-12-03T11:00:00+01:00", ("2026-12-03", "11:00")),
    "actually, 11": ("Thursday at 11", "2026-12-03T11:00:00+01:00", ("2026-12-03", "11:00")),
    "change it to 11": ("Thursday at 11", "2026-12-03T11:00:00+01:00",
                        ("2026-12-03", "11:00")),
    "not 9, 11": ("Thursday at 11", "2026-12-03T11:00:00+01:00", ("2026-12-03", "11:00")),
    "yes, but make it 11": ("Thursday at 11", "2026-12-03T11:00:00+01:00",
                            ("2026-12-03", "11:00")),
    "the 14th instead?": ("the 14th at 9", "2026-12-14T09:00:00+01:00", ("2026-12-14", "09:00")),
    "Friday at 11 instead?": ("Friday at 11", "2026-12-04T11:00:00+01:00",
                              ("2026-12-04", "11:00")),
}  # fmt: skip


@pytest.mark.parametrize("line", CASES)
def test_a_changed_value_is_a_correction_whatever_its_wording(line: str) -> None:
    free, instant, (day, hour) = CASES[line]
    expected = {FREE.name: {"when": free}, INSTANT.name: {"starts_at": instant},
                SPLIT.name: {"day": day, "hour": hour}}
    for shape in (FREE, INSTANT, SPLIT):
        pending = ToolIntent(name=shape.name, arguments=PENDING[shape.name])
        corrected = corrections.correction(line, pending, [shape], TODAY, now=NOW)
        assert corrected is not None, (line, shape.name)
        assert corrected.arguments == {**PENDING[shape.name], **expected[shape.name]}, line


@pytest.mark.parametrize("line", ["yes", "yes please", "Priya Raman", "I guess so", "hmm"])
def test_a_line_without_a_changed_value_corrects_nothing(line: str) -> None:
    for shape in (FREE, INSTANT, SPLIT):
        pending = ToolIntent(name=shape.name, arguments=PENDING[shape.name])
        corrected = corrections.correction(line, pending, [shape], TODAY, now=NOW)
        assert corrected is None, (line, shape.name)
