"""Lines of the blind Beacon suite (a driving school; tuning split), served on a profile in another
business: an airport shuttle no suite uses (issue 42).

Sans-IO, as :mod:`tests.inference.test_blind_library_dialogue`. Each test fails on the code
before it: "a 90-minute ride" and "a two-hour ride" filled no length; a booking that gave its
driver, day, time and passenger number was answered from the catalog; "pick me up from ...",
"collect me at ..." and a bare "from 14 Cabra Road" filled no pick-up field, which was asked
"What pickup should I use?"; a reason that names a time ("I've an exam that morning") was no
reason; "I want my money back" was proposed as a cancellation instead of refused; "What times
are free on Saturday?" was out of scope.
"""

from __future__ import annotations

import datetime as dt
from functools import cache

import pytest

from tests.support.tools import tool as _tool
from vocero.contracts.builtins import KNOWLEDGE_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ClaimTopic, LlmRequest, Message
from vocero.inference.dialogue import intents, questions, tool_choice
from vocero.inference.dialogue import manager as dialogue
from vocero.inference.dialogue.things import pickup_said

TODAY = dt.date(2026, 12, 7)  # a Monday
SYSTEM = Message(role="system", content="You answer the phone for Skylark Shuttles.")
PASSENGER = {"type": "string", "pattern": "^SK[0-9]{4}$", "description": "The passenger number"}
RIDE = {"type": "string", "pattern": "^RD[0-9]{4}$", "description": "The ride reference"}
DRIVER = {"type": "string", "enum": ["Tomas", "Greta", "Ines"]}


BOOK = _tool(
    "rides.book",
    "Book a shuttle ride for a passenger with a driver, and say where the driver should pick "
    "the passenger up.",
    {
        "passenger_no": PASSENGER,
        "driver": DRIVER,
        "start": {"type": "string", "format": "date-time"},
        "length": {
            "type": "integer",
            "description": "How long the ride is booked for, in minutes: 60, 90 or 120",
        },
        "pickup": {"type": "string"},
    },
    examples=["Book me a 90-minute ride with Greta on Thursday at 2pm, pick me up at home"],
)
OPEN = _tool(
    "rides.free_slots",
    "The free ride start times of one driver on one day.",
    {"driver": DRIVER, "day": {"type": "string", "format": "date"}},
    examples=["Has Greta anything free on Friday?"],
)
CANCEL = _tool(
    "rides.cancel",
    "Cancel a booked ride; why is the passenger's reason, in their words.",
    {"ride_ref": RIDE, "why": {"type": "string"}},
)
ANSWERS = ToolDefinition(
    name="shuttle.answers",
    builtin=KNOWLEDGE_TOOL,
    description="Skylark Shuttles' approved answers about fares, ride lengths and luggage.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
)
REFUND = ToolDefinition(
    name="fares.refund",
    description="Refund the fare of a ride to the card it was paid with.",
    input_schema={"type": "object", "properties": {}},
)
TOOLS = [BOOK, OPEN, CANCEL, ANSWERS]
CLAIMS = [
    ClaimTopic(key="fares", text="A 60-minute ride costs 40 euro.", topics=["fare", "price"]),
    ClaimTopic(key="luggage", text="Two bags each ride free.", topics=["luggage", "bags"]),
    ClaimTopic(key="booking", text="Book rides a day ahead.", topics=["book", "ahead"]),
]


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, CLAIMS, [REFUND]))


def decided(line: str) -> dialogue.Decision:
    request = LlmRequest(
        messages=[SYSTEM, Message(role="user", content=line)],
        tools=TOOLS,
        claims=CLAIMS,
        refused=[REFUND],
    )
    return dialogue.decide(request, today=TODAY, model=model())


def test_a_booking_with_its_values_is_no_catalog_question_and_its_length_is_asked() -> None:
    decision = decided("Can I book a ride with Greta on Friday at 4pm? I'm SK1234.")
    assert isinstance(decision, dialogue.Say), decision  # not the catalog's "book a day ahead"
    assert decision.text == "How long would you like it for?"


@pytest.mark.parametrize(("said", "length"), [("a 90-minute ride", 90), ("a two-hour ride", 120)])
def test_a_hyphenated_length_fills_the_length(said: str, length: int) -> None:
    decision = decided(
        f"I'd like to book {said} with Tomas on Thursday at 2 in the afternoon, pick me up from "
        "Quay Street Library. My passenger number is SK1234."
    )
    assert isinstance(decision, dialogue.Call), decision
    assert decision.intent.name == "rides.book"
    assert decision.intent.arguments == {
        "passenger_no": "SK1234",
        "driver": "Tomas",
        "start": "2026-12-10T14:00:00+00:00",
        "length": length,
        "pickup": "Quay Street Library",
    }
    assert decision.model_fill == ()  # the pick-up is the caller's words, not the model's


@pytest.mark.parametrize(
    ("line", "place"),
    [
        ("Collect me at Raheny Station. I'm SK1234.", "Raheny Station"),
        ("pick me up on Griffith Avenue by the Spar. My number", "Griffith Avenue by the Spar"),
        ("Book me in with Greta for an hour, pick-up at Tallaght Square.", "Tallaght Square"),
        ("at four in the afternoon, for an hour, from 14 Cabra Road? I'm SK1234.", "14 Cabra Road"),
        ("on Thursday at half seven, from the Luas stop. SK1234", "the Luas stop"),
        ("a ride from two in the afternoon", None),  # a time, not a place
        ("from Monday", None),
    ],
)
def test_where_to_be_picked_up_is_the_callers_words(line: str, place: str | None) -> None:
    assert pickup_said("pickup", line) == place
    assert pickup_said("destination", line) is None  # only a field named for a pick-up


def test_a_missing_pickup_is_asked_as_a_place() -> None:
    assert questions.ask(BOOK, "pickup") == "Where should we pick you up?"


def test_a_reason_that_names_a_time_is_a_reason() -> None:
    decision = decided("Please cancel my ride RD1001, I've a dentist appointment that morning.")
    assert isinstance(decision, dialogue.Call), decision
    assert decision.intent.arguments == {
        "ride_ref": "RD1001",
        "why": "I've a dentist appointment that morning",
    }
    asked = decided("Please cancel my ride RD1001, on Friday at 10.")  # a time alone is none
    assert isinstance(asked, dialogue.Say) and asked.text == "What is the reason?"


def test_money_back_is_what_only_the_prohibited_refund_does() -> None:
    decision = decided("I want my money back for ride RD1001, the driver was twenty minutes late.")
    assert isinstance(decision, dialogue.Say), decision  # refused: never a cancellation
    assert "can't help with that" in decision.text


class LeaningRanker:
    """The intent model as a richer profile leaves it: first, but under its confidence."""

    def __init__(self, ranked: list[tuple[str, float]]) -> None:
        self.ranked = ranked

    def rank(self, text: str) -> list[tuple[str, float]]:
        return self.ranked

    def decide(self, text: str) -> intents.Decision:
        raise AssertionError("only the ranking is read")


@pytest.mark.parametrize(
    ("line", "ranked", "taken"),
    [
        ("What times are free on Saturday?", [("rides.free_slots", 0.47), ("x", 0.3)], True),
        ("Has Greta any slot on Friday?", [("rides.free_slots", 0.40), ("x", 0.1)], True),
        ("What times on Saturday?", [("rides.free_slots", 0.47), ("x", 0.3)], False),  # no word
        ("What times are free?", [("rides.free_slots", 0.30), ("x", 0.1)], False),  # too low
        ("What times are free?", [("rides.free_slots", 0.45), ("x", 0.35)], False),  # not ahead
        ("Free on the 19th?", [("rides.free_slots", 0.43), ("x", 0.36)], True),  # a value of it
        ("What answers are free?", [("shuttle.answers", 0.6), ("x", 0.1)], False),  # built-in
    ],
)
def test_the_tool_the_model_leans_to_is_taken_when_the_line_says_its_action_word(
    line: str, ranked: list[tuple[str, float]], taken: bool
) -> None:
    """Beacon: "What times are free on Saturday the 19th?" ranked the free-slots tool first at
    0.43, under the 0.5 that opens a task, 0.07 ahead of the catalog, and was answered "I can't
    help with that"; the day it gives is the tool's own value."""
    found = tool_choice.named_by_own_word(line, [*TOOLS], LeaningRanker(ranked), TODAY)
    assert (found is not None) is taken
    assert found is None or found.name == ranked[0][0]


def test_a_free_times_question_asks_which_driver() -> None:
    decision = decided("What times are free on Saturday the 19th of December?")
    assert isinstance(decision, dialogue.Say), decision
    assert decision.text == "Would you like Tomas, Greta, or Ines?"


def test_the_runners_own_question_for_a_free_text_field_is_answered_by_the_next_line() -> None:
    """Beacon: after a booking whose pick-up the model could not find, the runner asked "Where
    should we pick you up?"; the answer "From my house, 14 Cabra Road." was taken for a request
    of its own ("I can't help with that"), and its 14 would have replaced the length."""
    first = "Book a 90-minute ride with Tomas on Friday at 9 am, passenger SK1234."
    served = decided(first)
    assert isinstance(served, dialogue.Call) and served.model_fill == ("pickup",), served
    request = LlmRequest(
        messages=[
            SYSTEM,
            Message(role="user", content=first),
            Message(role="assistant", content="Where should we pick you up?"),
            Message(role="user", content="From my house, 14 Cabra Road."),
        ],
        tools=TOOLS,
        claims=CLAIMS,
        refused=[REFUND],
    )
    decision = dialogue.decide(request, today=TODAY, model=model())
    assert isinstance(decision, dialogue.Call), decision
    assert decision.intent.arguments["pickup"] == "From my house, 14 Cabra Road"
    assert decision.intent.arguments["length"] == 90


def test_a_field_named_for_a_drop_off_that_takes_a_time_is_asked_as_a_time() -> None:
    """Kestrel's ``drop_off`` is an RFC 3339 date-time: a place's question would be wrong."""
    garage = _tool(
        "bays.reserve",
        "Reserve a bay; drop_off is when the car is left, as an RFC 3339 date-time.",
        {"drop_off": {"type": "string"}, "dropoff": {"type": "string", "format": "date-time"}},
    )
    assert questions.ask(garage, "drop_off") == "What day and time would suit you?"
    assert questions.ask(garage, "dropoff") == "What day and time would suit you?"
    assert questions.ask(BOOK, "pickup") == "Where should we pick you up?"
