"""Issue 42: a result's list of plain values (free times, dates, short names) is read value by
value, each as it is spoken, not only counted ("It has six open times." told the caller nothing
they asked for)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vocero.contracts.domain import ToolSpec
from vocero.speech.model import ToolEvidence
from vocero.speech.readout import ReadoutContext, read_out

NOW = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)  # Tuesday, December 1


def said(tool: str, result: dict[str, Any], **changes: Any) -> str:
    fields: dict[str, Any] = {"now": NOW, "timezone": "America/New_York", "caller_words": ""}
    call = ToolEvidence(tool_call_id="c1", tool=tool, result=result, arguments={})
    return read_out(None, call, ReadoutContext(**{**fields, **changes})).text


def test_a_list_of_clock_times_is_said_time_by_time() -> None:
    text = said(
        "rooms.free_hours", {"day": "2026-12-15", "free_hours": ["09:30", "13:00", "16:15"]}
    )
    assert "free hours are 9:30 AM, 1 PM, and 4:15 PM." in text, text
    assert "09:30" not in text and "three" not in text


def test_a_long_list_says_its_first_values_and_how_many_more() -> None:
    hours = [f"{h:02d}:00" for h in range(8, 18)]  # ten of them
    text = said("rooms.free_hours", {"free_hours": hours}, word_budget=80)
    assert text.endswith("free hours are 8 AM, 9 AM, 10 AM, 11 AM, 12 PM, 1 PM, and four more.")
    assert ", 2 PM" not in text and "5 PM" not in text


def test_one_value_and_short_words_are_said_too() -> None:
    assert said("paints.stock", {"colours": ["red", "blue"]}) == (
        "Your paint's colours are red and blue."
    )
    assert said("paints.sizes", {"sizes": ["large"]}) == "Your paint's size is large."


def test_records_and_long_texts_are_still_counted() -> None:
    record = {"status": "held", "tags": ["near the lift please", "quiet"], "extras": [{"a": 1}]}
    text = said("rooms.get", record, word_budget=80)
    assert text == "Your room is held. It has two tags. It has one extra.", text


def test_each_item_of_a_list_says_whom_it_is_with_when_a_field_names_a_titled_person() -> None:
    rows = [
        {"ref": "S1", "tutor": "Dr. Ada Byrne", "topic": "algebra",
         "starts": "2026-12-03T15:00:00Z", "state": "held"},
        {"ref": "S2", "tutor": "Mr Kwame", "topic": "essays",
         "starts": "2026-12-04T15:00:00Z", "state": "held"},
        {"ref": "S3", "tutor": "the duty tutor", "topic": "algebra",
         "starts": "2026-12-05T15:00:00Z", "state": "held"},
    ]  # fmt: skip
    text = said("lessons.mine", {"lessons": rows}, word_budget=80)
    assert text.startswith("You have three lessons: a lesson with Dr. Ada Byrne on Thursday"), text
    assert "a lesson with Mr Kwame on Friday" in text, text
    assert "with the duty tutor" not in text  # not a titled person's name


def test_a_template_placeholder_holding_a_list_of_values_says_the_values() -> None:
    """Beacon suite: "{coach} is free on {day} at {free_starts}." was read "... at four" (the
    list's count) where the caller asked which times."""
    spec = ToolSpec(
        name="coaches.free",
        server="s",
        resolves_to="t",
        action_class="read",
        readout="{coach} is free on {day} at {free_starts}.",
    )
    result = {"coach": "Ines", "day": "2026-12-17", "free_starts": ["09:00", "11:30", "16:00"]}
    call = ToolEvidence(tool_call_id="c1", tool="coaches.free", result=result, arguments={})
    context = ReadoutContext(now=NOW, timezone="America/New_York", caller_words="")
    text = read_out(spec, call, context).text
    assert text.endswith("at 9 AM, 11:30 AM, and 4 PM."), text
    assert "three" not in text
