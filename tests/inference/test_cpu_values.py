"""Values from words: what the caller said, as the recogniser prints it, into typed arguments.

The profile here is not the demo's: its names (``booking_ref``, ``starts_at``, ``visit_day``,
``slot``, ``contact``, ``mode``) appear nowhere in the rules, which read only the JSON Schema
(``pattern``, ``format``, ``enum``). Utterances are written the way Whisper prints speech:
numbers often as words, lower-case letters, "o'clock", no a.m./p.m. where none was said.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.inference import corpus
from vocero.contracts import values
from vocero.inference.dialogue import router

MADRID = ZoneInfo("Europe/Madrid")
NOW = dt.datetime(2026, 12, 1, 10, 0, tzinfo=MADRID)  # a Tuesday
TODAY = NOW.date()
BOOKING_REF = {"type": "string", "pattern": "^BK-[0-9]{4}$"}


def visits() -> Any:
    return corpus.tool(
        "visits.book",
        {
            "booking_ref": BOOKING_REF,
            "starts_at": {"type": "string", "format": "date-time"},
            "visit_day": {"type": "string", "format": "date"},
            "slot": {"type": "string", "enum": ["morning", "afternoon"]},
            "contact": {"type": "string", "enum": ["phone", "sms", "email"]},
            "mode": {"type": "string", "enum": ["in_person", "video"]},
            "note": {"type": "string"},
        },
        ["booking_ref", "starts_at"],
    )


def filled(utterance: str, **kwargs: Any) -> dict[str, Any]:
    arguments, _, _ = router.fill_arguments(visits(), utterance, TODAY, **kwargs)
    return arguments


# ------------------------------------------------------------------ identifiers


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("Has order C nineteen shipped?", None, "C19"),
        ("order A one two three please", None, "A123"),
        ("order a one two four", r"^[A-Z][0-9]{3}$", "A124"),  # lower case from the recogniser
        ("order a one two four", None, "124"),  # "a" may be the article: no pattern, no letter
        ("order c nineteen", None, "C19"),  # a lone lower-case letter that is no word is one
        ("order B as in bravo 5 2", None, "B52"),
        ("order one oh one", None, "101"),
        ("order twenty one", None, "21"),
        ("order nineteen eighty four", None, "1984"),
        ("order one thousand and one", None, "1001"),
        ("order two hundred and four", None, "204"),
        ("order double five eight two", None, "5582"),
        ("order five five eight two", r"^[0-9]{4}$", "5582"),
    ],
)
def test_identifiers_said_in_words(text: str, pattern: str | None, expected: str) -> None:
    assert values.identifier_in(text, "order", pattern) == expected


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("Cancel appointment APT-1001", None, "APT-1001"),  # no pattern: the hyphen as said
        ("Cancel appointment APT-1001", r"^APT-[0-9]+$", "APT-1001"),
        ("Cancel appointment APT 1001", r"^APT-[0-9]+$", "APT-1001"),
        ("Cancel appointment 1001", r"^APT-[0-9]+$", "APT-1001"),
        # Whisper prints Piper's "A P T one thousand one" as "APT 1000 1".
        ("Move appointment APT 1000 1 to Friday", r"^APT-[0-9]{1,8}$", "APT-1001"),
        ("Cancel appointment 20 1", None, "21"),
        ("Cancel appointment APT-1001", r"^[A-Z0-9-]+$", "APT-1001"),  # the caller's first
        ("Cancel appointment APT-1001", r"^[A-Z]+[0-9]+$", "APT1001"),
    ],
)
def test_a_hyphen_is_kept_unless_the_pattern_wants_none(
    text: str, pattern: str | None, expected: str
) -> None:
    assert values.identifier_in(text, "appointment", pattern) == expected


@pytest.mark.parametrize(
    ("text", "noun", "pattern", "expected"),
    [
        # Whisper writes Piper's "I N J 1" and "R X 78": letters said alone, as words.
        ("What is the status of order i and j1?", "order", r"^[A-Z0-9-]{1,32}$", "INJ1"),
        ("What's the status of prescription or X78?", "prescription", r"^RX[0-9]{2,4}$",
         "RX78"),
        ("booking bee kay 1234", "booking", None, "BK1234"),
        # Not a run of letters right after the noun: read as before.
        ("order A123 or B45", "order", r"^[A-Z0-9-]{1,32}$", "A123"),
    ],
)
def test_letters_written_as_words_before_an_identifier_are_its_letters(
    text: str, noun: str, pattern: str | None, expected: str
) -> None:
    assert values.identifier_in(text, noun, pattern) == expected


def test_a_bare_identifier_takes_letters_written_as_words_only_where_its_pattern_needs_them(
) -> None:
    assert values.bare_identifier("It's or X78.", r"^RX[0-9]{2,4}$") == "RX78"
    assert values.bare_identifier("It's or X78.", r"^X[0-9]{2,4}$") == "X78"
    assert values.bare_identifier("It's or X78.", None) == "X78"


def test_a_pattern_checked_identifier_is_found_without_its_noun() -> None:
    assert values.identifier_in("booking b k one two three four", "booking", None) == "BK1234"
    assert filled("Please move BK-1234")["booking_ref"] == "BK-1234"
    assert filled("Please move booking 1234")["booking_ref"] == "BK-1234"
    assert "booking_ref" not in filled("Please move it to the 14th at 3 pm")


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("It's A124", None, "A124"),
        ("A one two four", None, "A124"),
        ("a one two four", r"^[A-Z][0-9]{3}$", "A124"),
        ("number 5582", None, "5582"),
        ("it's five five eight two", None, "5582"),
        ("APT 1001", None, "APT1001"),
        ("APT 1001", r"^APT-[0-9]{1,8}$", "APT-1001"),
        ("It's BK-1234, thanks", BOOKING_REF["pattern"], "BK-1234"),
        ("I think it's 1234", BOOKING_REF["pattern"], "BK-1234"),  # the pattern's prefix
        ("It's A124", r"^[0-9]+$", None),  # with a pattern, only what matches it
    ],
)
def test_a_bare_identifier(text: str, pattern: str | None, expected: str | None) -> None:
    assert values.bare_identifier(text, pattern) == expected


@pytest.mark.parametrize(
    "text",
    [
        "at 3",
        "at three",
        "at 3 pm",
        "the 14th",
        "on the fourteenth",
        "2 items",
        "two items",
        "in 3 days",
        "March 10",
        "$40",
        "It's the one on Friday",
        "yes please",
    ],
)
def test_times_dates_and_counts_are_not_identifiers(text: str) -> None:
    assert values.bare_identifier(text, None) is None


# ------------------------------------------------------------------ times and dates


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("at eleven", "11:00"),
        ("eleven am", "11:00"),
        ("two thirty pm", "14:30"),
        ("at two thirty", "14:30"),  # a small hour without a.m./p.m.: office hours
        ("half past three", "15:30"),
        ("quarter to four", "15:45"),
        ("quarter past nine in the morning", "09:15"),
        ("ten to twelve", "11:50"),
        ("three o'clock", "15:00"),
        ("at eleven in the morning", "11:00"),
        ("at 9 tonight", "21:00"),
        ("Friday morning at 7", "07:00"),
        ("at 7 on Friday morning", "07:00"),
        ("I called this morning. Can we do Friday at 4?", "16:00"),  # not the 4 it names
        ("at 3:30", "15:30"),
        ("at one of the branches", None),
        ("Friday afternoon", None),  # a part of day is not a clock time
        # British "half seven" is half past seven, never half an hour or half of something
        ("Thursday's yoga at half seven in the evening", "19:30"),
        ("half six in the morning", "06:30"),
        ("at half ten", "10:30"),
        ("can you call back in half an hour", None),
        ("about half of them", None),
    ],
)
def test_times_in_words(text: str, expected: str | None) -> None:
    assert values.time_in(text) == expected


@pytest.mark.parametrize("text", ["27 pm", "13 pm", "at 25:00", "at 23:75", "0 am"])
def test_a_time_that_is_not_one_is_none_never_wrapped(text: str) -> None:
    assert values.time_in(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Friday morning", "2026-12-04"),
        ("next Tuesday at 2 pm", "2026-12-08"),
        ("the fourteenth of December", "2026-12-14"),
        ("December eighth", "2026-12-08"),
        ("on the twenty first", "2026-12-21"),
        ("the 14th, please", "2026-12-14"),
        ("the 1st", "2026-12-01"),  # today
        ("this afternoon", "2026-12-01"),
        ("the 2nd one", None),  # an ordinal that picks an item is not a day
        ("wait a second", None),
    ],
)
def test_dates_in_words(text: str, expected: str | None) -> None:
    assert values.date_in(text, TODAY) == expected


def test_a_day_of_the_month_already_past_is_next_months() -> None:
    assert values.date_in("the 1st", TODAY + dt.timedelta(days=1)) == "2027-01-01"
    assert values.date_in("on the thirtieth", dt.date(2027, 1, 31)) == "2027-03-30"  # no Feb 30


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("next Tuesday at 2 pm", "2026-12-08T14:00:00+01:00"),
        ("December eighth at two thirty pm", "2026-12-08T14:30:00+01:00"),
        ("Friday morning", "2026-12-04T09:00:00+01:00"),  # documented default hours
        ("Friday afternoon", "2026-12-04T15:00:00+01:00"),
        ("Friday evening", "2026-12-04T18:00:00+01:00"),
        ("tonight", "2026-12-01T18:00:00+01:00"),
        ("Friday evening at 7", "2026-12-04T19:00:00+01:00"),
        ("June 3 at 2 pm", "2027-06-03T14:00:00+02:00"),  # summer time in that zone
        ("Friday", None),  # a day alone is not a moment
        ("at 3 pm", None),  # nor a time alone
        ("Friday at 27 pm", None),  # nor a wrong time, not even as "Friday"'s default
    ],
)
def test_moments_carry_the_callers_offset(text: str, expected: str | None) -> None:
    assert values.moment_in(text, NOW) == expected


def test_a_moment_in_a_skipped_hour_moves_forward() -> None:
    before_the_change = dt.datetime(2026, 3, 2, 9, 0, tzinfo=MADRID)
    assert values.moment_in("March 29 at 2:30 am", before_the_change) == "2026-03-29T03:30:00+02:00"


# ------------------------------------------------------------------ the schema decides


@pytest.mark.parametrize(
    ("name", "schema", "kind"),
    [
        ("booking_ref", BOOKING_REF, "id"),
        ("code", {"type": "string", "pattern": "^[A-Z0-9]{6}$"}, "id"),
        ("starts_at", {"type": "string", "format": "date-time"}, "datetime"),
        ("begins", {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}.*$"}, "datetime"),
        ("visit_day", {"type": "string", "format": "date"}, "date"),
        ("slot", {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"}, "time"),
        ("slot", {"type": "string", "enum": ["morning", "afternoon"]}, "enum"),
        ("full_name", {"type": "string", "pattern": "^[A-Za-z ]+$"}, "text"),  # words fit it
        ("note", {"type": "string"}, "text"),
    ],
)
def test_the_schema_decides_the_kind(name: str, schema: dict[str, Any], kind: str) -> None:
    assert router.field_kind(name, schema) == kind


def test_a_profile_with_other_names_is_filled_from_its_schema() -> None:
    said = "Can you move booking b k 1234? Next Tuesday at two pm, in person, and text me."
    arguments, missing, model_fill = router.fill_arguments(visits(), said, TODAY, now=NOW)
    assert arguments == {
        "booking_ref": "BK-1234",
        "starts_at": "2026-12-08T14:00:00+01:00",
        "visit_day": "2026-12-08",
        "contact": "sms",
        "mode": "in_person",
    }
    assert (missing, model_fill) == ([], [])


def test_without_the_callers_clock_a_moment_is_written_in_utc() -> None:
    assert filled("booking 1234 on Friday at 9 am")["starts_at"] == "2026-12-04T09:00:00+00:00"


def test_a_moment_not_said_is_asked_for() -> None:
    _, missing, model_fill = router.fill_arguments(visits(), "booking 1234", TODAY, now=NOW)
    assert missing == ["starts_at"]
    assert model_fill == []


# ------------------------------------------------------------------ enums


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        ("text me when it's done", "contact", "sms"),
        ("an email is best", "contact", "email"),
        ("in the afternoon if possible", "slot", "afternoon"),
        ("mornings suit me", "slot", "morning"),
        ("the afternoon, not the morning", "slot", "afternoon"),
        ("after lunch", "slot", "afternoon"),  # a synonym
        ("morning or afternoon, either", "slot", None),  # two values said: asked, not guessed
        ("I'll come in person", "mode", "in_person"),
        ("face to face please", "mode", "in_person"),
        ("by video", "mode", "video"),
    ],
)
def test_enum_values_by_their_words(text: str, field: str, expected: str | None) -> None:
    assert filled(text).get(field) == expected


# ------------------------------------------------------------------ free text as said


def test_free_timing_and_reasons_keep_the_callers_words() -> None:
    tool = corpus.tool(
        "callbacks.add",
        {"when": {"type": "string"}, "reason": {"type": "string"}, "note": {"type": "string"}},
        ["when", "reason", "note"],
    )
    said = "Call me next Tuesday at 2 pm about my invoice"
    arguments, missing, model_fill = router.fill_arguments(tool, said, TODAY)
    assert arguments == {"when": "next Tuesday at 2 pm", "reason": "my invoice"}
    assert (missing, model_fill) == ([], ["note"])
    spoken, _, _ = router.fill_arguments(tool, "Call me next Tuesday at half past two", TODAY)
    assert spoken["when"] == "next Tuesday at half past two"


def test_a_reason_given_with_because_is_the_callers_words() -> None:
    said = "I need to call off visit VX-2043 because we are moving away"
    assert values.reason_phrase(said) == "we are moving away"
    assert values.reason_phrase("Call me back about my refund tomorrow") == "my refund"


def test_a_time_the_recogniser_misspelt_is_read_as_the_time_said() -> None:
    """Issue 42, by voice: Whisper wrote "Make that half past ten." as "Make that half pass
    then.", so the correction was not heard and the old hour was booked."""
    from vocero.contracts import values

    assert values.time_in("Make that half pass then.") == "10:30"
    assert values.time_in("at a quarter passed four pm") == "16:15"
    assert values.when_phrase("Tomorrow at half pass then") == "Tomorrow at half past ten"
    assert values.time_in("I passed then the exam") is None  # no time word, nothing mended
