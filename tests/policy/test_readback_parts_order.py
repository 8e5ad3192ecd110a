"""A generic read-back's consequential parts are in the order the caller hears them, so that a
read-back played to its end counts as heard (delivery looks for them in order): the details of a
tool without a ``readback`` template are said in their own order (a reason before an enum's
setting), not in the order they were put into words. Generic names, no profile's."""

from __future__ import annotations

import datetime as dt

import pytest

from vocero.policy.delivery import _heard_in_order
from vocero.policy.readback import readback

TODAY = dt.date(2026, 12, 7)


@pytest.mark.parametrize("arguments", [
    {"start": "2026-12-10T16:15:00-07:00", "tutor": "byrne", "reason": "algebra practice"},
    {"tutor": "byrne", "start": "2026-12-10T16:15:00-07:00", "reason": "algebra practice"},
    {"reason": "algebra practice", "tutor": "byrne", "start": "2026-12-10T16:15:00-07:00"},
    {"seats": 3, "level": "upper", "note": "near the aisle", "day": "2026-12-11"},
])  # fmt: skip
def test_the_parts_of_a_generic_read_back_are_heard_in_order_when_it_is_all_heard(
    arguments: dict[str, object],
) -> None:
    said = readback("hold_lesson", arguments, today=TODAY)
    assert len(said.parts) >= 2
    positions = [said.text.find(p) for p in said.parts]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), said
    assert _heard_in_order(said.parts, said.text), "the whole read-back heard is delivered"
    cut = said.text[: said.text.find(said.parts[-1])]  # cut before its last value
    assert not _heard_in_order(said.parts, cut), "a read-back cut before a value is not"
