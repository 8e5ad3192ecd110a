"""Lines of the blind Juniper suite (a theatre box office; tuning split, written this stop),
served on a profile in another business: a cookery school no suite uses (issue 42).

Sans-IO, as :mod:`tests.inference.test_blind_marina_dialogue`. Each test fails on the code
before it (c160c1c; the lines that must stay no value, and "4 places", pass there too): "two
places" and "so four altogether" filled no count; "the Saturday morning" filled no bare field
its tool defines by a day; "under Rosie Whitworth" filled no name; "the Taste of Kerala" was no
"A Taste of Kerala"; a line that fills a booking whole was taken for the class times lookup;
"book us a table for dinner" opened the booking; "a call about ..., Thursday about quarter past
four" took the time for the reason; "I'll ring back ... Ta-ra!" asked when to call back; "If I
need to change ..., is there a charge?" opened a change; the lookup's bare ``course`` did not
know the courses the booking tool lists.
"""

from __future__ import annotations

import datetime as dt
from functools import cache

import pytest

from tests.support.tools import called, conversation
from tests.support.tools import tool as _tool
from vocero.contracts import values
from vocero.contracts.builtins import FOLLOWUPS_TOOL, KNOWLEDGE_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ClaimTopic, LlmRequest, Message, ToolIntent
from vocero.inference.dialogue import intents, router, small_talk
from vocero.inference.dialogue import manager as dialogue
from vocero.speech import answering

TODAY = dt.date(2026, 12, 7)  # a Monday
SYSTEM = Message(role="system", content="You answer the phone for Saffron Lane Cookery School.")
COURSE = {"type": "string", "enum": ["The Bread Masterclass", "Knife Skills", "A Taste of Kerala"]}
PLACE_REF = {"type": "string", "pattern": "^SL[0-9]{5}$", "description": "The place reference"}

TIMES = _tool(
    "timetable.sessions",
    "The session times of a course on a day, and how many places are left; course is the "
    "course's name as the caller says it.",
    {"course": {"type": "string"}, "day": {"type": "string", "format": "date"}},
)
BOOK = _tool(
    "places.book",
    "Book places on a course, paid by the card on the caller's account; session is which one "
    "in the caller's words (like 'Saturday morning' or a date and time) and name is who signs "
    "in at the door.",
    {
        "course": COURSE,
        "session": {"type": "string"},
        "places": {"type": "integer", "minimum": 1, "maximum": 8},
        "kitchen": {"type": "string", "enum": ["main", "demo", "garden"]},
        "name": {"type": "string"},
    },
)
SWAP = _tool(
    "places.exchange",
    "Exchange a booking to another session of the same course (a £5 fee a place).",
    {"place_ref": PLACE_REF, "session": {"type": "string"}},
)
CALL = ToolDefinition(
    name="school.call_back",
    builtin=FOLLOWUPS_TOOL,
    description="Have someone from the school ring the caller back.",
    input_schema={"type": "object", "required": ["when", "reason"],
                  "properties": {"when": {"type": "string"}, "reason": {"type": "string"}}},
)  # fmt: skip
ANSWERS = ToolDefinition(
    name="school.answers",
    builtin=KNOWLEDGE_TOOL,
    description="Saffron Lane's approved answers about courses, aprons, allergies and parking.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
)
TOOLS = [TIMES, BOOK, SWAP, CALL, ANSWERS]
CLAIMS = [
    ClaimTopic(key="exchange.fee", text="Changing to another session costs £5 a place.",
               topics=["exchange", "swap sessions"]),
    ClaimTopic(key="aprons", text="Aprons and knives are provided.", topics=["apron", "knife"]),
]  # fmt: skip


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, CLAIMS, []))


def decided(*lines: str) -> dialogue.Decision:
    request = LlmRequest(messages=conversation(SYSTEM, lines), tools=TOOLS, claims=CLAIMS)
    return dialogue.decide(request, today=TODAY, model=model())


@pytest.mark.parametrize(
    ("line", "places"),
    [
        ("could I book two places on Knife Skills", 2),
        ("a pair of places for Friday", 2),
        ("Two adults and two children, so four altogether.", 4),
        ("4 places please", 4),
        ("two places, no three places", None),  # two counts: asked
        ("twenty places", None),  # over the maximum
    ],
)
def test_a_count_said_of_what_the_field_counts(line: str, places: int | None) -> None:
    assert router.fill_arguments(BOOK, line, TODAY)[0].get("places") == places


@pytest.mark.parametrize(
    ("line", "session"),
    [
        ("the Saturday morning one, please", "Saturday morning"),
        ("on Friday night if you can", "on Friday night"),
        ("the matinee on Sunday", "matinee on Sunday"),
        ("in the main kitchen", None),
    ],
)
def test_a_bare_field_defined_by_a_day_is_the_callers_when(line: str, session: str | None) -> None:
    assert router.fill_arguments(BOOK, line, TODAY)[0].get("session") == session


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("They're under Rosie Whitworth.", "Rosie Whitworth"),
        ("in the demo kitchen, name of Patel?", "Patel"),
        ("The name's Dawson.", "Dawson"),
        ("Name is Hughes.", "Hughes"),
        ("Two on Knife Skills, Thursday morning, for Marjorie Lees, please.", "Marjorie Lees"),
        ("for The Bread Masterclass please", None),  # a course, not a name
    ],
)
def test_a_name_given_as_one_fills_the_name(line: str, name: str | None) -> None:
    assert router.fill_arguments(BOOK, line, TODAY)[0].get("name") == name


def test_a_value_said_without_its_article_is_the_value() -> None:
    found = router.fill_arguments(BOOK, "two places on the Taste of Kerala", TODAY)[0]
    assert found.get("course") == "A Taste of Kerala"


def test_a_line_that_fills_the_booking_whole_books_it() -> None:
    intent = called(decided(
        "I'd like two for Knife Skills on Sunday at eleven, demo kitchen please. The name's Dawson."
    ))  # fmt: skip
    assert intent == ToolIntent(name="places.book", arguments={
        "course": "Knife Skills", "session": "on Sunday at 11", "places": 2,
        "kitchen": "demo", "name": "Dawson",
    })  # fmt: skip


def test_the_tools_verb_said_of_another_thing_is_not_its_request() -> None:
    decision = decided(
        "Can you book us a table for dinner somewhere nearby before the class, for about six?"
    )
    if isinstance(decision, dialogue.Call):  # the catalog may be asked; no booking is opened
        assert decision.intent.name == "school.answers"
    else:
        assert isinstance(decision, dialogue.Say) and "can't help" in decision.text


def test_a_time_after_about_is_no_reason_and_the_first_lines_reason_stays() -> None:
    assert values.reason_phrase("Thursday, about quarter past four in the afternoon.") is None
    assert values.reason_phrase("call me about my order tomorrow") == "my order"
    intent = called(decided(
        "I'd like somebody to give me a call about a surprise for my mum's birthday.",
        "When should we call you back?",
        "Thursday, about quarter past four in the afternoon.",
    ))  # fmt: skip
    assert intent.name == "school.call_back"
    assert intent.arguments["reason"] == "a surprise for my mum's birthday"
    assert intent.arguments["when"] == "Thursday, about quarter past four in the afternoon"


def test_ill_ring_back_and_ta_ra_is_a_goodbye() -> None:
    line = "Ah that's all I wanted really, I'll ring back when I've decided. Ta-ra!"
    assert small_talk.act(line) == "goodbye"
    decision = decided(line)
    assert isinstance(decision, dialogue.Say) and "bye" in decision.text.lower()


def test_what_a_change_would_cost_asks_the_catalog() -> None:
    intent = called(decided(
        "If I need to change my place to a different night, is there a charge for that?"
    ))  # fmt: skip
    assert intent.name == "school.answers"


def test_a_bare_field_takes_the_values_another_tools_field_of_its_name_lists() -> None:
    intent = called(decided("Is A Taste of Kerala on next Wednesday evening at all?"))
    assert intent == ToolIntent(
        name="timetable.sessions", arguments={"course": "A Taste of Kerala", "day": "2026-12-16"}
    )


def test_a_main_clause_of_one_key_word_is_not_judged_alone() -> None:
    """Juniper: "If we're a bit late because of the traffic, will they still let us in?" had no
    approved answer: its main clause says only "they"."""
    question = "If we're a bit late because of the traffic, will they still let us in?"
    claim = ["Latecomers are seated at a suitable break."]
    assert answering.answers(question, claim, ["late", "latecomer", "traffic"])


def test_a_change_of_session_said_with_swap_or_instead_is_the_exchange() -> None:
    """Juniper: "I need to swap my tickets to the Thursday evening instead. The booking's J T
    20421." asked "What performance should I use?" and took "The evening one, half seven" as
    the performance; "Can I move booking JT20423 to Monday night?" read the booking out."""
    swap = called(decided("I need to swap my place to the Thursday evening instead. It's SL20421."))
    assert swap == ToolIntent(
        name="places.exchange",
        arguments={"place_ref": "SL20421", "session": "Thursday evening"},  # its name's kind
    )
    moved = called(decided("Can I move booking SL20423 to Monday night please?"))
    assert moved.name == "places.exchange" and moved.arguments["session"] == "Monday night"


def test_remind_me_what_asks_to_be_told_and_a_reference_in_groups_is_read() -> None:
    """Juniper: "Can you remind me what I've booked? The reference is J T, two oh four, one
    seven." asked when to call back."""
    decision = decided(
        "Can you remind me what I've booked? The reference is S L, two oh four, one seven."
    )
    assert not (isinstance(decision, dialogue.Call) and decision.intent.name == "school.call_back")
    assert values.bare_identifier("It's S L, two oh four, one seven.", "^SL[0-9]{5}$") == "SL20417"


def test_a_question_is_no_answer_to_a_free_text_question() -> None:
    """Juniper: asked "What name should I use?", "Before I say yes, how long does it go on for?
    I've a bus to catch." was read back as the name."""
    line = "Before I say yes, how long does it go on for? I've a bus to catch."
    assert small_talk.is_request(line)
    assert not small_talk.is_request("which course was that?")  # a clarification


def test_a_failed_write_after_a_yes_opens_no_other_task() -> None:
    """Juniper: after "Yes, go on then." the booking was refused (sold out); replaying the
    yes as a request opened the times lookup and the agent asked "Which show ...?" instead of
    letting the failure be read out."""
    request = LlmRequest(
        messages=[
            SYSTEM,
            Message(role="user", content="Two on Knife Skills this Saturday morning, main "
                    "kitchen, under Brennan."),
            Message(role="assistant", content="To confirm: book 2 places on Knife Skills, this "
                    "Saturday morning, in the main kitchen, under Brennan. Shall I go ahead?"),
            Message(role="user", content="Yes, go on then."),
            Message(role="tool", content="", tool_name="places.book", tool_status="rejected",
                    tool_result={"error": "sold_out", "message": "Knife Skills is full"}),
        ],
        tools=TOOLS,
        claims=CLAIMS,
    )  # fmt: skip
    assert isinstance(dialogue.decide(request, today=TODAY, model=model()), dialogue.Silent)


class SureOfTimes:
    """An intent model that names the times lookup for every line, confidently."""

    def rank(self, text: str) -> list[tuple[str, float]]:
        return [("timetable.sessions", 0.9)]

    def decide(self, text: str) -> intents.Decision:
        return intents.Decision(intent="timetable.sessions", score=0.9)


@pytest.mark.parametrize("line", ["Yes, go on then.", "Yes, please do.", "Yes please."])
def test_a_bare_yes_opens_no_task_whatever_the_model_says(line: str) -> None:
    request = LlmRequest(messages=[SYSTEM, Message(role="user", content=line)], tools=TOOLS)
    turn = dialogue._Turn.of(request, TODAY, SureOfTimes())  # type: ignore[arg-type]
    assert dialogue._routing(turn)(line).tool is None


@pytest.mark.parametrize(
    ("line", "other"),
    [
        ("Can you book us a table for dinner?", True),
        ("Could you book me a taxi home after?", True),
        ("Can you book Rosalind in for two places?", False),  # a name, not another thing
        ("Can you book two places for me?", False),  # the tool's own thing
        ("Can you book the Taste of Kerala?", False),  # a value the tool lists
    ],
)
def test_the_tools_verb_of_another_common_noun_names_another_thing(line: str, other: bool) -> None:
    """Quarry Hill (after the first version of this rule): "Can you reserve Piranesi for me on
    card ...?" lost the hold request, the title being no word of the room booking's."""
    assert router._other_object(BOOK, line) is other


def _after_refused_booking(line: str, status: str = "rejected") -> dialogue.Decision:
    messages = conversation(SYSTEM, (
        "Two on Knife Skills this Saturday morning, main kitchen, under Brennan.",
        "To confirm: book 2 places on Knife Skills, this Saturday morning, in the main kitchen, "
        "under Brennan. Shall I go ahead?",
        "Yes, go on then.",
    ))  # fmt: skip
    messages += [
        Message(role="tool", content="", tool_name="places.book", tool_status=status,
                tool_result={"error": "sold_out"}),
        Message(role="assistant", content="Sorry, I could not complete that."),
        Message(role="user", content=line),
    ]  # fmt: skip
    request = LlmRequest(messages=messages, tools=TOOLS, claims=CLAIMS)
    return dialogue.decide(request, today=TODAY, model=model())


@pytest.mark.parametrize(
    "line", ["So have I got the places or not?", "Has that gone through?", "So is that sorted?"]
)
def test_whether_a_refused_write_went_through_is_answered_no(line: str) -> None:
    """Juniper: after the sold-out booking was read out as failed, "So have I got the tickets
    or not?" was asked for a booking reference."""
    decision = _after_refused_booking(line)
    assert isinstance(decision, dialogue.Say), decision
    assert decision.text.startswith("No,") and "couldn't" in decision.text


def test_after_a_committed_write_the_question_is_not_answered_no() -> None:
    decision = _after_refused_booking("Has that gone through?", status="committed")
    assert not (isinstance(decision, dialogue.Say) and decision.text.startswith("No,"))
