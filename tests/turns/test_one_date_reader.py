"""One reader of spoken dates and times (ADR-0039): the same phrase reads as the same day and the
same clock time wherever it is read - the dialogue's slots, the orchestrator's spoken answers,
policy's canonical arguments, the follow-ups' due time and the grounding check of what the agent
says. Before, each had its own weekday, month and clock arithmetic, so a day the agent read back
could reach the server as another one; "next Friday" was next week's to four of them and this
week's to the follow-ups (ADR-0040), and to the grounding check any Friday; "on the 14th" and
"March the 3rd" were no day to the follow-ups (a call-back asked for them was due 11:00 the next
day).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from vocero.contracts import values
from vocero.contracts.builtins import Context
from vocero.contracts.domain import ToolDefinition
from vocero.followups.due import resolve_due
from vocero.inference.dialogue import router
from vocero.orchestrator.spoken_answers import values_in
from vocero.policy.canonical import canonicalize
from vocero.speech.values import critical_values, evidence_values, supported

ZONE = "Europe/Madrid"
NOW = dt.datetime(2026, 12, 7, 8, 0, tzinfo=dt.UTC)
"""A Monday morning in the caller's zone."""
TODAY = NOW.date()
CTX = Context(tenant="t", timezone=ZONE, now=NOW)
DATE = {"type": "string", "format": "date"}
TIME = {"type": "string", "format": "time"}


def _dialogue(prop: dict[str, Any], key: str) -> Callable[[str], Any]:
    tool = ToolDefinition(
        name="things.arrange", description="Arrange a thing.",
        input_schema={"type": "object", "properties": {key: prop}, "required": [key]},
    )
    return lambda said: router.fill_arguments(tool, said, TODAY)[0].get(key)


def _policy(key: str) -> Callable[[str], Any]:
    schema = {"type": "object", "properties": {key: {"type": "string"}}}
    return lambda said: canonicalize({key: said}, schema, CTX).arguments[key]


def _supporting_days(said: str, days: int) -> list[dt.date]:
    """The days after today whose evidence (a tool result naming the day) supports every
    critical value the agent says in ``said``."""
    found = critical_values(said, today=TODAY)
    assert found, said
    return [
        day for day in (TODAY + dt.timedelta(days=ahead) for ahead in range(1, days + 1))
        if all(supported(v, evidence_values({"day": day.isoformat()}, today=TODAY)) for v in found)
    ]


def _grounding(said: str) -> str | None:
    """The day the grounding check reads: the first after today whose evidence supports what the
    agent said (a weekday alone, like "Friday, December 11", is any Friday's: the first)."""
    days = _supporting_days(said, 800)
    return days[0].isoformat() if days else None


DATE_READERS: dict[str, Callable[[str], Any]] = {
    "slots": lambda said: values.date_in(said, TODAY),
    "dialogue": _dialogue(DATE, "day"),
    "spoken answers": lambda said: values_in({"day": DATE}, said, TODAY).get("day"),
    "canonical arguments": _policy("visit_date"),
    "follow-up due time": lambda said: resolve_due(said, NOW, ZONE).at.date().isoformat(),
    "grounding check": _grounding,
}
TIME_READERS: dict[str, Callable[[str], Any]] = {
    "slots": values.time_in,
    "dialogue": _dialogue(TIME, "at"),
    "spoken answers": lambda said: values_in({"at": TIME}, said, TODAY).get("at"),
    "canonical arguments": _policy("start_time"),
    "follow-up due time": (
        lambda said: resolve_due(f"tomorrow {said}", NOW, ZONE).at.strftime("%H:%M")
    ),
}

DATES = [
    ("friday", "2026-12-11"),
    ("on Wednesday", "2026-12-09"),
    ("Monday", "2026-12-14"),  # today's weekday: next week's
    ("tomorrow", "2026-12-08"),
    ("day after tomorrow", "2026-12-09"),
    ("December 24", "2026-12-24"),
    ("the 5th of January", "2027-01-05"),  # already past this year: next year's
    ("March 3, 2027", "2027-03-03"),
    ("2026-12-21", "2026-12-21"),
    ("next friday", "2026-12-18"),  # on a Monday: next week's (ADR-0040; follow-ups: the 11th)
    ("next Tuesday", "2026-12-15"),
    ("next Monday", "2026-12-14"),  # today's weekday: next week's, and no week more
    ("March 3rd", "2027-03-03"),
    ("on the 14th", "2026-12-14"),  # a day of the month alone: the next one
    ("the 5th, please", "2027-01-05"),  # this month's is past: next month's
    ("March the 3rd", "2027-03-03"),
    ("December 14th", "2026-12-14"),
]
TIMES = [
    ("3pm", "15:00"),
    ("at 4", "16:00"),  # an hour 1-7 without am/pm: the afternoon
    ("at 10", "10:00"),
    ("10:30", "10:30"),
    ("4:30 pm", "16:30"),
    ("9 in the morning", "09:00"),
    ("noon", "12:00"),
    ("at half seven in the evening", "19:30"),  # British: half past seven
    ("half past seven in the evening", "19:30"),
]


@pytest.mark.parametrize("reader", sorted(DATE_READERS))
@pytest.mark.parametrize(("said", "day"), DATES)
def test_a_spoken_date_is_the_same_day_to_every_reader(reader: str, said: str, day: str) -> None:
    assert DATE_READERS[reader](said) == day


@pytest.mark.parametrize("reader", sorted(TIME_READERS))
@pytest.mark.parametrize(("said", "clock"), TIMES)
def test_a_spoken_time_is_the_same_clock_time_to_every_reader(
    reader: str, said: str, clock: str
) -> None:
    assert TIME_READERS[reader](said) == clock


@pytest.mark.parametrize("reader", sorted(set(DATE_READERS) - {"follow-up due time"}))
@pytest.mark.parametrize(
    ("said", "day"),
    [
        ("March 3, 2028", "2028-03-03"),  # the year said is kept (slots read the next March 3rd)
    ],
)
def test_what_a_call_back_cannot_be_reads_the_same_to_the_other_readers(
    reader: str, said: str, day: str
) -> None:
    """A follow-up is never due a year ahead (its due time has its own horizon), so this phrase
    is checked on the other readers; to the follow-ups it is a date that gives no usable time,
    which the call-back rule asks about rather than booking."""
    assert DATE_READERS[reader](said) == day


def test_a_date_more_than_a_year_ahead_is_no_call_back_day() -> None:
    assert resolve_due("March 3, 2028", NOW, ZONE).date_unusable


DAY_NAMING = [
    (said, day) for said, day in DATES
    if said not in ("friday", "on Wednesday", "Monday")  # a weekday alone: any such day
]


@pytest.mark.parametrize(("said", "day"), DAY_NAMING)
def test_the_grounding_check_takes_a_named_day_for_that_day_only(said: str, day: str) -> None:
    """What the agent says of one day is supported by the evidence of that day and of no other
    day of the year ahead: "next friday" is not this Friday's, "the 14th" no 14 but a date."""
    assert [d.isoformat() for d in _supporting_days(said, 366)] == [day]


@pytest.mark.parametrize(
    "said", ["friday at 4:30 pm", "on the 14th at 3 pm", "March the 3rd at 10am",
             "December 14th at 4pm", "the 5th, at 9 am"],
)
def test_a_day_and_time_is_one_moment_to_policy_and_the_follow_ups(said: str) -> None:
    now = NOW.astimezone(CTX.zone)
    moment = values.moment_in(said, now)
    assert moment is not None
    assert resolve_due(said, NOW, ZONE).at.isoformat() == moment


def test_a_day_and_time_is_one_moment_to_the_dialogue_and_to_policy() -> None:
    now = NOW.astimezone(CTX.zone)
    said = "friday at 4:30 pm"
    moment = {"type": "string", "format": "date-time"}
    schema = {"type": "object", "properties": {"starts": moment}}
    assert values.moment_in(said, now) == "2026-12-11T16:30:00+01:00"
    assert canonicalize({"starts": said}, schema, CTX).arguments["starts"] == (
        "2026-12-11T16:30:00+01:00"
    )
