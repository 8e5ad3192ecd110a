"""Lines of the Tamarind suite (a council's kerbside waste line; opened for tuning in stop 52),
served on a profile in another business: a marina no suite uses (issue 42).

Sans-IO, as :mod:`tests.inference.test_blind_shuttle_dialogue`. Each test fails on the code
before it: a wh-question after a "G'day" (or naming only a write tool's domain) opened the write
that takes more of its values instead of the lookup; a count was asked "What count should I
use?" and "Just the one." did not answer it; "Yes, that's all good" ended the call; "can you
book a storage collection?" was answered from the catalog; the gear to collect ("for an old
outboard") was left to the model; "make that the shower fob, the gate one ..." was no
correction; "what time am I meant to ...?" opened a tool; "nicked" and "snapped" chose the wrong
tool and no reason; a four-value choice was asked "What fob should I use?". (Cases marked as
controls, and the lines that must stay no value, passed there too.)
"""

from __future__ import annotations

import datetime as dt
from functools import cache

import pytest

from tests.support.tools import called, conversation
from tests.support.tools import tool as _tool
from vocero.contracts import values
from vocero.contracts.builtins import KNOWLEDGE_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.english import capability
from vocero.contracts.ports import ClaimTopic, LlmRequest, Message, ToolIntent
from vocero.inference.dialogue import corrections, intents, questions, router, small_talk
from vocero.inference.dialogue import manager as dialogue

TODAY = dt.date(2026, 12, 7)  # a Monday
SYSTEM = Message(role="system", content="You answer the phone for Pelican Quay Marina.")
BERTH = {"type": "string", "pattern": "^PQ[0-9]{4}$", "description": "The berth number"}
LIFT = {"type": "string", "enum": ["haul-out", "launch", "wash", "mast"]}
FOB = {"type": "string", "enum": ["gate", "shower", "pontoon", "dinghy"]}

SCHEDULE = _tool(
    "crane.dates",
    "The next crane dates (haul-out, launch, wash and mast) for a berth, by its berth number.",
    {"berth": BERTH},
)
MISSED = _tool(
    "lifts.report_missed",
    "Report a crane lift that did not happen; when is the day it was due (a date or a weekday).",
    {"berth": BERTH, "lift": LIFT, "when": {"type": "string"}},
    examples=["My haul-out didn't happen on Tuesday", "They skipped our launch this week"],
)
STORE = _tool(
    "storage.book",
    "Book a storage collection: gear is what will be taken to the store, count how many pieces "
    "(at most 3), collect_on a weekday at least 2 working days away.",
    {
        "berth": BERTH,
        "gear": {"type": "string"},
        "collect_on": {"type": "string", "format": "date"},
        "count": {"type": "integer", "minimum": 1, "maximum": 3},
    },
)
KEYS = _tool(
    "keys.order",
    "Order a replacement or extra key fob for a berth; reason says why (damaged, stolen, or "
    "wanting an extra one).",
    {"berth": BERTH, "fob": FOB, "reason": {"type": "string"}},
)
ANSWERS = ToolDefinition(
    name="marina.answers",
    builtin=KNOWLEDGE_TOOL,
    description="Pelican Quay's approved answers about lifts, cradles, holidays and fuel.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
)
TOOLS = [SCHEDULE, MISSED, STORE, KEYS, ANSWERS]
CLAIMS = [
    ClaimTopic(key="lift.day", text="Be at the crane with the boat by 7 am on lift day.",
               topics=["lift day", "what time", "crane"]),
    ClaimTopic(key="storage", text="A storage collection takes up to 3 pieces.",
               topics=["storage", "how many", "pieces"]),
    ClaimTopic(key="fuel", text="Old fuel and oil go to the fuel dock, never in storage.",
               topics=["fuel", "oil", "drop off"]),
    ClaimTopic(key="disposal", text="Old engines and batteries go to the recycling yard.",
               topics=["get rid of", "dispose", "old engine"]),
]  # fmt: skip


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, CLAIMS, []))


def decided(*lines: str) -> dialogue.Decision:
    request = LlmRequest(messages=conversation(SYSTEM, lines), tools=TOOLS, claims=CLAIMS)
    return dialogue.decide(request, today=TODAY, model=model())


@pytest.mark.parametrize(
    "line",
    [
        "G'day, when's my boat getting lifted this week? The berth is PQ1042.",  # a control
        "Kia ora, what day are my lifts? It's PQ 10 42.",
        "Hi there, when is my haul-out? Berth PQ1042.",  # a control
    ],
)
def test_a_when_question_looks_the_record_up_and_reports_nothing(line: str) -> None:
    """Tamarind: "Kia ora, when's my rubbish getting picked up this week? ..." was proposed as
    a missed-bin report "due out this week"; "what day do my bins go out?" asked which bin."""
    assert called(decided(line)) == ToolIntent(name="crane.dates", arguments={"berth": "PQ1042"})


def test_a_report_said_as_one_is_still_a_report() -> None:
    intent = called(decided("They skipped our launch on Tuesday, berth PQ1042."))
    assert intent.name == "lifts.report_missed"
    assert intent.arguments["lift"] == "launch"


def test_a_count_is_asked_how_many_of_what_the_tool_counts() -> None:
    assert questions.ask(STORE, "count") == "How many pieces?"
    passengers = _tool("seats.book", "Book seats.", {"passengers": {"type": "integer"}})
    assert questions.ask(passengers, "passengers") == "How many passengers?"
    bare = _tool("seats.book", "Book seats.", {"count": {"type": "integer"}})
    assert questions.ask(bare, "count") == "How many would you like?"
    reading = _tool("meters.submit", "Submit a meter reading.", {"reading": {"type": "integer"}})
    assert questions.ask(reading, "reading") == "What reading should I use?"  # counts nothing


@pytest.mark.parametrize(
    ("answer", "count"),
    [
        ("Just the one.", 1),
        ("one", 1),
        ("Just the outboard, so one.", 1),
        ("Yes, one please.", 1),
        ("two", 2),
        ("The shower one.", None),  # names a thing
        ("Can I get a new one?", None),
        ("the one on Friday", None),
    ],
)
def test_one_said_as_a_count_is_a_count(answer: str, count: int | None) -> None:
    assert router.fill_arguments(STORE, answer, TODAY)[0].get("count") == count


def test_the_count_question_is_answered_by_the_one() -> None:
    first = "I'd like to book a storage collection for an old outboard on Thursday the 14th of "
    first += "January. Berth PQ1042."
    asked = decided(first)
    assert isinstance(asked, dialogue.Say) and asked.text == "How many pieces?"
    intent = called(decided(first, "How many pieces?", "Just the one."))
    assert intent.arguments == {
        "berth": "PQ1042",
        "gear": "old outboard",
        "collect_on": "2027-01-14",
        "count": 1,
    }


def test_all_good_is_no_goodbye() -> None:
    """(That it is a yes to a read-back: tests/inference/test_restating_yes.py.)"""
    assert small_talk.act("Yes, that's all good.") is None
    assert small_talk.act("That's all, thanks.") == "goodbye"


def test_a_request_for_the_tools_own_action_is_no_catalog_question() -> None:
    """Tamarind: "I've got an old couch to get rid of, can you book an inorganic collection?"
    was answered with the catalog's pickup limits."""
    decision = decided(
        "I've got an old outboard to get rid of, can you book a storage collection? Berth PQ1042."
    )
    assert isinstance(decision, dialogue.Say), decision
    assert decision.text == "What day would you like?"


@pytest.mark.parametrize(
    ("line", "gear"),
    [
        ("Can I book a storage collection for two old sails on the 13th of January?", "old sails"),
        ("I've got an old outboard to get rid of.", "old outboard"),
        ("Book a collection for next week.", None),  # a day, not a thing
        ("Book a collection for berth PQ1042.", None),
    ],
)
def test_the_gear_is_what_the_request_is_for(line: str, gear: str | None) -> None:
    assert router.fill_arguments(STORE, line, TODAY)[0].get("gear") == gear


def test_a_weekday_with_a_day_of_the_month_agrees() -> None:
    assert values.date_in("Friday the 15th", TODAY) == "2027-01-15"  # not Tuesday the 15th
    assert values.date_in("the 15th", TODAY) == "2026-12-15"


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("Oh sorry, actually make that the shower fob, the gate one works fine.", "shower"),
        ("No wait, change it to the dinghy fob, the pontoon one is fine.", "dinghy"),
    ],
)
def test_the_value_after_make_that_is_the_new_one(line: str, key: str) -> None:
    pending = ToolIntent(
        name="keys.order", arguments={"berth": "PQ1042", "fob": "gate", "reason": "damaged"}
    )
    changed = corrections.correction(line, pending, TOOLS, TODAY)
    assert changed is not None and changed.arguments["fob"] == key


def test_what_the_caller_is_meant_to_do_asks_the_catalog() -> None:
    """Tamarind: "Hang on, what time am I meant to have the bin out by anyway?" asked which
    property to report a missed bin for (every topic of the answer is also a tool's word)."""
    assert called(decided("Hang on, what time am I meant to be at the lift by?")).name == (
        "marina.answers"
    )
    intent = called(decided("Hang on, am I meant to be on board for the haul-out?"))
    assert intent.name == "marina.answers"  # a value said, and still a question of the terms
    unrouted = decided("Sorry, am I supposed to be there for the lift?")
    assert called(unrouted).name == "marina.answers"  # not "I can't help with that"


def test_what_a_tool_does_is_said_without_its_fields() -> None:
    """"I can ... book a storage collection: gear is what will be taken to the store, count
    how many pieces, collect_on a weekday ..." read the tool's field notes out."""
    assert capability(STORE.description) == "book a storage collection"


@pytest.mark.parametrize(
    ("line", "arguments"),
    [
        (
            "Someone's nicked our gate fob off the boat. Can I get a new one? Berth PQ1042.",
            {"berth": "PQ1042", "fob": "gate", "reason": "stolen"},
        ),
        (
            "Could I order another shower fob for PQ1043? There's six of us on board.",
            {"berth": "PQ1043", "fob": "shower", "reason": "wanting an extra one"},
        ),
    ],
)
def test_everyday_words_for_the_tools_own_reasons(line: str, arguments: dict[str, str]) -> None:
    assert called(decided(line)) == ToolIntent(name="keys.order", arguments=arguments)


def test_a_snapped_fob_is_a_replacement_and_which_key_is_asked_with_its_choices() -> None:
    decision = decided("The fob's snapped clean off, I need a replacement. It's berth PQ1044.")
    assert isinstance(decision, dialogue.Say), decision
    assert decision.text == "Which fob: gate, shower, pontoon, or dinghy?"


@pytest.mark.parametrize(
    ("line", "requested"),
    [
        ("can you book a storage collection?", True),
        ("I need to book a storage collection for Friday", True),
        ("If I need to book a storage collection, how much notice do I give?", False),
        ("When I want to book a storage collection, what do I bring?", False),
        ("How much is a storage collection?", False),
    ],
)
def test_a_request_in_so_many_words_is_not_one_inside_a_supposition(
    line: str, requested: bool
) -> None:
    """Beacon: "If I need to cancel a lesson, how much notice do I have to give you?" asks the
    catalog; it opened a cancellation."""
    assert router.action_requested(STORE, line) is requested
