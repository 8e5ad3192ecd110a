"""Lines of the Quarry Hill suite (a library; tuning split since stop 51), served on a profile in
another business: a rehearsal studio no suite uses (issue 42).

Sans-IO, as :mod:`tests.inference.test_blind_ferry_dialogue`. Each test fails on the code
before it: a length of time said in words ("an hour and a half", "two hours") filled no
minutes field; a line that took back its own hour ("at 2 pm, no sorry, make it 3 pm") kept the
first; a booking whose line said a room, a day, a length and a card listed the day's free rooms;
a day said in the request was lost when the time came in the answer; a bare field its tool's
line calls a number was not read as one; "reserve" booked a room instead of the hire the line's
values fill.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from zoneinfo import ZoneInfo

import pytest

from tests.support.tools import tool as _tool
from vocero.contracts import values
from vocero.contracts.ports import LlmRequest, Message
from vocero.followups.due import resolve_due
from vocero.inference.dialogue import intents
from vocero.inference.dialogue import manager as dialogue

TODAY = dt.date(2026, 12, 7)  # a Monday
SYSTEM = Message(role="system", content="You answer the phone for Tin Shed Rehearsal Studios.")
MEMBER = {"type": "string", "pattern": "^[0-9]{6}$", "description": "The membership number"}


FREE = _tool(
    "studios.free",
    "The rehearsal rooms and when each is free on a day.",
    {"day": {"type": "string", "format": "date"}},
    examples=["Is any room free on Saturday?"],
)
BOOK = _tool(
    "studios.reserve",
    "Book a rehearsal room from a start time for a length of time.",
    {
        "member_number": MEMBER,
        "room": {"type": "string", "enum": ["blue", "green", "booth-b"]},
        "start": {"type": "string", "format": "date-time"},
        "minutes": {
            "type": "integer",
            "minimum": 30,
            "maximum": 240,
            "multipleOf": 30,
            "description": "How long, in minutes",
        },
    },
    examples=["Reserve me a room on Friday at 3 for an hour"],
)
HIRE = _tool(
    "gear.hire",
    "Hire out a piece of gear for pick-up at a counter; gear is the name of the item.",
    {
        "member_number": MEMBER,
        "gear": {"type": "string"},
        "desk": {"type": "string", "enum": ["front", "annex"]},
    },
    examples=["Can I hire an amp?", "Put a bass amp aside for me"],
)
DUES = _tool(
    "account.dues",
    "The dues owed on a membership; member is the musician's membership number.",
    {"member": {"type": "string"}},
    examples=["How much do I owe?", "Are my dues paid up?"],
)
SESSIONS = _tool(
    "account.sessions",
    "The sessions booked on a membership, with their rooms and times.",
    {"member_number": MEMBER},
    examples=["What sessions do I have booked?"],
)
TOOLS = [FREE, BOOK, HIRE, DUES, SESSIONS]


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, []))


def decided(*lines: str) -> dialogue.Decision:
    messages = [SYSTEM]
    for line in lines:
        role = "assistant" if line.startswith("A:") else "user"
        messages.append(Message(role=role, content=line.removeprefix("A:")))
    request = LlmRequest(messages=messages, tools=TOOLS)
    return dialogue.decide(request, today=TODAY, model=model())


def called(decision: dialogue.Decision) -> tuple[str, dict[str, object]]:
    assert isinstance(decision, dialogue.Call), decision
    return decision.intent.name, dict(decision.intent.arguments)


@pytest.mark.parametrize(
    ("said", "minutes"),
    [
        ("for an hour and a half", 90),
        ("three quarters of an hour", 45),
        ("two hours", 120),
        ("one and a half hours", 90),
        ("an hour and 20 minutes", 80),
        ("half an hour", 30),
        ("ninety minutes", 90),
        ("for 1.5 hours", 90),
        ("at half past five", None),  # a clock time, not a length
        ("a quarter to three", None),
        ("two hours, no, three hours", None),  # two lengths: asked, never guessed
    ],
)
def test_a_length_of_time_is_read_in_minutes(said: str, minutes: int | None) -> None:
    assert values.duration_minutes(said) == minutes


def test_a_length_said_in_words_fills_a_minutes_field_within_its_bounds_and_steps() -> None:
    name, arguments = called(
        decided(
            "Could I book the Blue room on Wednesday from two in the afternoon for an hour and "
            "a half? My member number is 482910."
        )
    )
    assert name == "studios.reserve"
    assert arguments["minutes"] == 90
    assert arguments["start"] == "2026-12-09T14:00:00+00:00"
    # 45 minutes is no step of 30: asked, never rounded
    asked = decided("Book booth B on Friday at 4 pm for three quarters of an hour, member 482910.")
    assert isinstance(asked, dialogue.Say), asked


def test_a_line_that_takes_back_its_own_hour_keeps_the_day_at_the_new_hour() -> None:
    name, arguments = called(
        decided(
            "Please book the Green room tomorrow at 2 pm, no sorry, make it 3 pm, for two "
            "hours. Member 482910."
        )
    )
    assert name == "studios.reserve"
    assert arguments["start"] == "2026-12-08T15:00:00+00:00"
    assert arguments["minutes"] == 120


def test_a_line_naming_the_room_the_day_and_the_length_books_and_keeps_the_day() -> None:
    first = decided("I need the Green room on Thursday for one hour. Member number 482910.")
    # the time is asked, not the day the caller gave; the free rooms are not read out
    assert isinstance(first, dialogue.Say) and first.text == "What time on Thursday would suit you?"
    name, arguments = called(
        decided(
            "I need the Green room on Thursday for one hour. Member number 482910.",
            f"A:{first.text}",
            "Half past five in the evening.",
        )
    )
    assert name == "studios.reserve"
    assert arguments == {
        "member_number": "482910",
        "room": "green",
        "minutes": 60,
        "start": "2026-12-10T17:30:00+00:00",
    }


def test_a_bare_field_its_tool_calls_a_number_takes_the_number_said() -> None:
    assert called(decided("How much do I owe in dues? It's member 482910.")) == (
        "account.dues",
        {"member": "482910"},
    )


def test_reserve_goes_to_the_tool_the_lines_values_fill() -> None:
    decision = decided(
        "Can you reserve the Nord keyboard for me on 482910? I'll collect it at the front desk."
    )
    assert isinstance(decision, dialogue.Call), decision
    assert decision.intent.name == "gear.hire"
    assert decision.intent.arguments["desk"] == "front"


@pytest.mark.parametrize(
    ("when", "hour", "minute"),
    [
        ("Tomorrow at eleven fifteen in the morning", 11, 15),
        ("tomorrow at two thirty", 14, 30),
        ("tomorrow at eleven forty-five", 11, 45),
        ("tomorrow at four", 16, 0),
    ],
)
def test_a_call_back_time_said_with_its_minutes_in_words_keeps_the_minutes(
    when: str, hour: int, minute: int
) -> None:
    zone = ZoneInfo("America/Chicago")
    now = dt.datetime(2026, 12, 7, 10, 0, tzinfo=zone)
    assert resolve_due(when, now, "America/Chicago").at == dt.datetime(
        2026, 12, 8, hour, minute, tzinfo=zone
    )


def test_a_length_is_asked_as_one() -> None:
    asked = decided("Book the Blue room tomorrow at 4 pm, member 482910.")
    assert isinstance(asked, dialogue.Say) and asked.text == "How long would you like it for?"
    name, arguments = called(
        decided(
            "Book the Blue room tomorrow at 4 pm, member 482910.",
            f"A:{asked.text}",
            "An hour and a half.",
        )
    )
    assert (name, arguments["minutes"]) == ("studios.reserve", 90)
