"""Values from the caller's whole phrase, and answers judged by what was asked (issue 42).

The profile is written here with generic names (a rowing club: lessons, boat racks, gauges):
its kinds come only from what the server says (JSON Schema type, pattern, enum, the tool's
one-line description), never from names the rules know.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.support.tools import tool as _tool
from vocero.contracts.builtins import FOLLOWUPS_TOOL, KNOWLEDGE_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ClaimTopic, LlmRequest, Message, ToolIntent
from vocero.inference.dialogue import intents, questions, router, tasks
from vocero.inference.dialogue import manager as dialogue
from vocero.policy import canonical, readback

ZONE = ZoneInfo("America/Chicago")
NOW = dt.datetime(2026, 12, 7, 10, 0, tzinfo=ZONE)  # a Monday
TODAY = NOW.date()
MEMBER = {"type": "string", "pattern": "^[0-9]{8}$"}


LESSON = _tool(
    "lessons.reserve",
    "Reserve a rowing lesson; start is the start as an RFC 3339 date-time with its UTC offset.",
    {
        "start": {"type": "string"},
        "coach": {"type": "string", "enum": ["brennan", "valdez", "any"]},
        "topic": {"type": "string"},
    },
)
RACK = _tool(
    "racks.claim",
    "Claim a boat rack at a boathouse (the North Gate or Lakeside shed).",
    {"member": MEMBER, "shed": {"type": "string"}},
)
GAUGE = _tool(
    "gauges.log",
    "Log the number the member read off a river gauge.",
    {"member": MEMBER, "gauge": {"type": "string", "enum": ["upper", "lower"]},
     "level": {"type": "integer", "minimum": 0, "maximum": 999999}},
)  # fmt: skip
FLOODS = _tool(
    "floods.check",
    "Whether the river is closed in a postal district.",
    {"district": {"type": "string", "pattern": "^[0-9]{5}$"}},
)
CALLBACKS = _tool(
    "club.ring_back",
    "Have the club ring the member back at the time they asked for, with the reason.",
    {"when": {"type": "string"}, "reason": {"type": "string"}},
    builtin=FOLLOWUPS_TOOL,
)
ANSWERS = _tool(
    "club.answers",
    "The club's approved answers about opening times, fees and safety on the water.",
    {"query": {"type": "string"}},
    builtin=KNOWLEDGE_TOOL,
)
TOOLS = [LESSON, RACK, GAUGE, FLOODS, CALLBACKS, ANSWERS]
CLAIMS = [
    ClaimTopic(key="club.hours", text="The boathouse opens at 6 AM and closes at 8 PM.",
               topics=["opening times", "open", "close", "hours"]),
    ClaimTopic(key="club.fees", text="A lesson costs 30 dollars.",
               topics=["fees", "price", "cost"]),
]  # fmt: skip


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, CLAIMS))


def request(*lines: str | Message, pending: ToolIntent | None = None) -> LlmRequest:
    messages = [m if isinstance(m, Message) else Message(role="user", content=m) for m in lines]
    return LlmRequest(
        messages=messages,
        tools=TOOLS,
        claims=CLAIMS,
        timezone="America/Chicago",
        now=NOW.timestamp(),
        pending=pending,
    )


def agent(text: str) -> Message:
    return Message(role="assistant", content=text)


def decide(*lines: str | Message, pending: ToolIntent | None = None) -> dialogue.Decision:
    return dialogue.decide(request(*lines, pending=pending), today=TODAY, model=model())


def filled(tool: ToolDefinition, text: str) -> tuple[dict[str, Any], list[str], list[str]]:
    return router.fill_arguments(tool, text, TODAY, now=NOW)


# ------------------------------------------------------------------ item 2: kinds and values


def test_a_bare_field_the_tool_calls_a_date_time_gets_the_whole_moment() -> None:
    """Old code: a bare ``start`` was free text (left to the small model, which dropped the
    day); now its tool's line makes it a date-time in the caller's zone."""
    arguments, missing, model_fill = filled(
        LESSON, "Can I get a lesson with Valdez on Thursday at quarter past four in the afternoon?"
    )
    assert arguments["start"] == "2026-12-10T16:15:00-06:00"
    assert arguments["coach"] == "valdez"
    assert "start" not in missing and "start" not in model_fill
    assert questions.ask(LESSON, "start") == "What day and time would suit you?"


def test_a_bare_field_whose_description_names_places_takes_the_one_said() -> None:
    """Old code: ``shed`` went to the small model (junk such as "1000000,"); now the places the
    description names are what the caller picks, and none said is asked for, naming them."""
    arguments, _, _ = filled(RACK, "Please claim a rack for 40021877 at the Lakeside shed.")
    assert arguments == {"member": "40021877", "shed": "Lakeside"}
    arguments, missing, model_fill = filled(RACK, "I'd like a boat rack for 40021877.")
    assert "shed" not in arguments and missing == ["shed"] and model_fill == []
    assert questions.ask(RACK, "shed") == "Which shed: North Gate or Lakeside?"


def test_a_number_field_takes_the_one_number_no_identifier_took() -> None:
    """Old code: an integer field was free text for the small model ("100" invented)."""
    assert filled(GAUGE, "Log my upper gauge for 40021877. It reads 48213.")[0] == {
        "member": "40021877", "gauge": "upper", "level": 48213,
    }  # fmt: skip
    assert filled(GAUGE, "Nine hundred and twelve.")[0] == {"level": 912}
    arguments, missing, _ = filled(GAUGE, "Log the lower gauge for 40021877 at 3 pm")
    assert "level" not in arguments and "level" in missing  # a time is no reading: asked


def test_long_digits_alone_are_the_code_a_pattern_takes() -> None:
    """Old code: digits said without their noun were never an identifier."""
    assert filled(FLOODS, "Is the river closed in 97214?")[0] == {"district": "97214"}


def test_a_model_value_that_is_not_the_callers_words_is_asked_for() -> None:
    said = request("Claim a rack for 40021877, near the Lakeside jetty.")
    junk = {"shed": "1000000000000000000000000,"}
    assert dialogue.unsaid(said, junk, ["shed"]) == ("shed",)
    described = {"shed": "North Gate or Lakeside shed"}
    assert dialogue.unsaid(request("Claim a rack for 40021877."), described, ["shed"]) == ("shed",)
    assert dialogue.unsaid(said, {"shed": "Lakeside jetty"}, ["shed"]) == ()


def test_the_policy_reads_a_time_named_field_by_its_schema() -> None:
    """Old code: any ``*_time`` field was a clock time, so "Thursday at 4:15 pm" lost its day."""
    prop = {"type": "string", "description": "The start, an RFC 3339 date-time"}
    assert canonical.kind_of("start_time", prop) == "datetime"
    assert canonical.kind_of("start_time", {"type": "string"}) == "time"
    ctx = canonical.Context(tenant="t", timezone="America/Chicago", now=NOW)
    out = canonical.canonicalize(
        {"start_time": "2026-12-10T16:15:00-06:00"},
        {"properties": {"start_time": {"type": "string"}}},
        ctx,
    )
    assert out.arguments["start_time"] == "2026-12-10T16:15:00-06:00"


# ------------------------------------------------------------------ item 3: answers first


def test_a_corrected_place_during_the_read_back_changes_the_proposal() -> None:
    pending = ToolIntent(name=RACK.name, arguments={"member": "40021877", "shed": "North Gate"})
    decision = decide(
        "Claim a rack for 40021877 at North Gate.",
        agent("To confirm: claim a rack at the North Gate shed. Shall I go ahead?"),
        "Actually, make that the Lakeside shed.",
        pending=pending,
    )
    assert isinstance(decision, dialogue.Call)
    assert decision.intent.arguments == {"member": "40021877", "shed": "Lakeside"}


def test_a_corrected_number_during_the_read_back_changes_the_proposal() -> None:
    pending = ToolIntent(
        name=GAUGE.name, arguments={"member": "40021877", "gauge": "upper", "level": 3150}
    )
    decision = decide(
        "Log the upper gauge at 3150 for 40021877.",
        agent("To confirm: log a level of 3150. Shall I go ahead?"),
        "Sorry, make that 3510.",
        pending=pending,
    )
    assert isinstance(decision, dialogue.Call)
    assert decision.intent.arguments["level"] == 3510


def test_an_answer_to_the_question_asked_fills_its_field() -> None:
    """"Thursday in the morning" to "What day and time would suit you?" is that field's value,
    never a new request (old code: the start was never asked, so no question was open)."""
    lines = (
        "I'd like a lesson with Brennan about feathering the oars.",
        agent("What day and time would suit you?"),
        "Thursday in the morning.",
    )
    decision = decide(*lines)
    assert isinstance(decision, dialogue.Call)
    assert decision.intent.name == LESSON.name
    assert decision.intent.arguments["start"] == "2026-12-10T09:00:00-06:00"
    assert decision.intent.arguments["coach"] == "brennan"
    assert not dialogue.new_request(request(*lines[:2]), lines[2], TODAY, model=model())


def test_a_number_answering_the_question_asked_is_not_out_of_scope() -> None:
    decision = decide(
        "I want to log the lower gauge for 40021877.",
        agent("What level should I use?"),
        "Nine hundred and twelve.",
    )
    assert isinstance(decision, dialogue.Call)
    assert decision.intent.arguments == {"member": "40021877", "gauge": "lower", "level": 912}


def test_a_yes_is_never_the_words_of_a_free_text_answer() -> None:
    """Old code: "Yes, book it." to "What is it about?" became the topic and was read back."""
    asked = tasks.Task(LESSON, {"start": "2026-12-10T10:00:00-06:00", "coach": "valdez"},
                       ("topic",), asked=1)  # fmt: skip
    step = tasks.next_step(asked, "Yes, book it.", router.Route(None), TOOLS, TODAY, now=NOW)
    assert step is not None and step.intent is None
    assert step.question == "What is it about?"
    step = tasks.next_step(asked, "Feathering the oars.", router.Route(None), TOOLS, TODAY, now=NOW)
    assert step is not None and step.intent is not None
    assert step.intent.arguments["topic"] == "Feathering the oars"


@pytest.mark.parametrize(
    "line",
    [
        "Could someone ring me on Wednesday at quarter to eleven about the fees?",
        "Can someone call me back Thursday at 3 about the opening times?",
    ],
)
def test_a_call_back_with_a_time_records_a_follow_up_not_a_claim(line: str) -> None:
    decision = decide(line)
    assert isinstance(decision, dialogue.Call)
    assert decision.intent.name == CALLBACKS.name
    assert decision.intent.arguments["when"]


def test_a_request_naming_a_value_only_one_tool_takes_is_in_scope() -> None:
    """"see Valdez about my stroke" names the lesson tool by its coach: not out of scope."""
    decision = decide("I'd like to see Valdez about my stroke rate.")
    assert isinstance(decision, dialogue.Say)
    assert decision.text == "What day and time would suit you?"


def test_a_line_naming_a_record_by_its_code_is_no_catalog_question() -> None:
    decision = decide("Is the river closed in 97214 right now?")
    assert isinstance(decision, dialogue.Call)
    assert decision.intent == ToolIntent(name=FLOODS.name, arguments={"district": "97214"})


def test_a_bare_moment_and_a_bare_day_are_read_back_in_words() -> None:
    """Old code: a bare ``start`` moment was read back as "2026-12-10T16:15:00-06:00" and a
    bare ``first_lesson`` day as "2026-12-15"."""
    said = readback.readback(
        "reserve_lesson", {"start": "2026-12-10T16:15:00-06:00", "coach": "valdez"}, today=TODAY
    )
    assert "2026-12-10" not in said.text
    assert "Thursday" in said.text and "4:15" in said.text
    said = readback.readback(
        "plan_lessons", {"first_lesson": "2026-12-15"}, template="start on {first_lesson}",
        today=TODAY,
    )
    assert "2026-12-15" not in said.text and "December 15" in said.text
