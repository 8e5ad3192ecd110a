"""A profile written without reading the dialogue code is served from its own material (issue 42).

Sans-IO, as :mod:`tests.inference.test_cpu_dialogue`: :func:`dialogue.decide` on a profile whose
names the code has never seen (a pottery studio: kiln firings, glaze orders, wheels, call-backs),
shaped as the blind garage profile is (an identifier pattern of another tool, a bare string
identifier explained only by its tool's line, a short field name whose pattern takes a code with
a space, a bare date-time string, an enum).
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from zoneinfo import ZoneInfo

from vocero.contracts import values
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import LlmRequest, Message, ToolIntent
from vocero.inference.dialogue import cues, intents, questions, router, schema, tool_choice
from vocero.inference.dialogue import manager as dialogue

ZONE = ZoneInfo("Europe/Dublin")
NOW = dt.datetime(2026, 12, 7, 10, 0, tzinfo=ZONE)  # a Monday
SYSTEM = Message(
    role="system",
    content="You answer the phone for Slipware Studio: kiln firings, glaze orders and wheels.",
)
FIRING_CARD = ToolDefinition(
    name="kiln.firing_card",
    description="Look up a kiln firing by its firing number: the pieces, the cone and the stage.",
    input_schema={
        "type": "object",
        "properties": {
            "firing_ref": {"type": "string", "pattern": "^FR-[0-9]{4}$",
                           "description": "The firing number on the tag, like FR-3310"},
        },
        "required": ["firing_ref"],
    },
)  # fmt: skip
GLAZE_STATUS = ToolDefinition(
    name="glazes.where_is",
    description="Where a potter's glaze order stands; glaze_no is the number printed on the "
    "order slip: four digits, a dash and a letter, like 5521-D.",
    input_schema={
        "type": "object",
        "properties": {"glaze_no": {"type": "string"}},
        "required": ["glaze_no"],
    },
)
WHEEL_BOOKING = ToolDefinition(
    name="wheels.reserve",
    description="Reserve a throwing wheel for a potter; starts is when the potter arrives, as an "
    "RFC 3339 date-time with its UTC offset.",
    input_schema={
        "type": "object",
        "properties": {
            "mem": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2} ?[A-Z]{3}$",
                    "description": "The potter's membership code, like LB12 XYZ"},
            "wheel": {"type": "string", "enum": ["kick", "electric", "large"]},
            "starts": {"type": "string"},
        },
        "required": ["mem", "wheel", "starts"],
    },
)  # fmt: skip
CALLBACKS = ToolDefinition(
    name="studio.call_back",
    builtin="followups.record",
    description="Have a tutor ring the potter back at the time they asked, with the reason.",
    input_schema={
        "type": "object",
        "properties": {"when": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["when", "reason"],
    },
)
TOOLS = [FIRING_CARD, GLAZE_STATUS, WHEEL_BOOKING, CALLBACKS]


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, []))


def decide(*lines: str | Message) -> dialogue.Decision:
    messages = [SYSTEM] + [
        m if isinstance(m, Message) else Message(role="user", content=m) for m in lines
    ]
    request = LlmRequest(messages=messages, tools=TOOLS, timezone=str(ZONE))
    return dialogue.decide(request, today=NOW.date(), model=model())


# -- 4. an identifier is sent as the caller said it, to the tool it fits ----------------------


def test_a_number_never_takes_another_tools_prefix() -> None:
    """Old code: "FR-5521" for a number said as an order of another kind."""
    line = "Any news on my celadon glaze? Glaze number 5521 D."
    assert values.bare_identifier(line, "^FR-[0-9]{4}$", borrow=False) is None
    assert values.bare_identifier(line, "^FR-[0-9]{4}$") is None, "its letter is part of it"
    assert values.bare_identifier("It's 3310", "^FR-[0-9]{4}$") == "FR-3310", "an answer"
    assert values.identifier_in(line, "glaze") == "5521D", "the letter said after the digits"
    assert cues.identified_tools(line, TOOLS) == [GLAZE_STATUS]


def test_the_tool_whose_identifier_the_line_names_is_called_with_it() -> None:
    """Old code: the firing card with "FR-5521", a value the caller never said."""
    decision = decide("Any news on my celadon glaze? Glaze number 5521 D.")
    assert decision == dialogue.Call(
        ToolIntent(name="glazes.where_is", arguments={"glaze_no": "5521-D"})
    ), decision


# -- 2. a request that says every value is read back, never asked a field it does not lack --------


def test_a_field_the_tools_line_calls_a_date_time_is_one() -> None:
    """Old code: "starts" stayed free text (the RFC 3339 words are the next clause's), left to
    the small model."""
    shown = schema.model_facing(WHEEL_BOOKING)["properties"]
    assert shown["starts"]["format"] == "date-time"
    assert "format" not in schema.model_facing(GLAZE_STATUS)["properties"]["glaze_no"]


def test_a_code_with_a_space_is_one_identifier() -> None:
    """Old code: None ("LB12" alone fits no registration-like pattern), so it was asked for."""
    pattern = WHEEL_BOOKING.input_schema["properties"]["mem"]["pattern"]
    assert values.bare_identifier("My membership is LB12 XYZ.", pattern) == "LB12XYZ"
    assert values.bare_identifier("LB12 XYZ in for a wheel at 9", pattern) == "LB12XYZ"


def test_a_short_field_is_asked_for_by_its_own_descriptions_word() -> None:
    """Old code: "Which wheel is it? Please tell me the wheel number." (the tool's domain)."""
    assert questions.ask(WHEEL_BOOKING, "mem") == (
        "Which membership is it? Please tell me the membership number."
    )


def test_a_request_with_every_value_is_the_write_with_them() -> None:
    """Old code: the membership was asked for although it was said."""
    decision = decide(
        "I'd like to reserve a large wheel tomorrow at half past eight in the morning. "
        "My membership is LB12 XYZ."
    )
    assert decision == dialogue.Call(
        ToolIntent(
            name="wheels.reserve",
            arguments={"mem": "LB12XYZ", "wheel": "large", "starts": "2026-12-08T08:30:00+00:00"},
        )
    ), decision


# -- 3. a request without its time asks when, and the answer completes it -------------------


def test_a_request_without_its_time_asks_when_and_the_answer_completes_it() -> None:
    """Old code: the code went unread, so the line looked like no request at all."""
    first = "I need to reserve an electric wheel, membership DV68 RTS."
    asked = decide(first)
    assert asked == dialogue.Say("What day and time would suit you?"), asked
    answered = decide(first, Message(role="assistant", content=asked.text),
                      "Thursday at quarter to eight in the morning, please.")  # fmt: skip
    assert answered == dialogue.Call(
        ToolIntent(
            name="wheels.reserve",
            arguments={
                "mem": "DV68RTS",
                "wheel": "electric",
                "starts": "2026-12-10T07:45:00+00:00",
            },
        )
    ), answered


# -- 5. a call-back's reason said in a sentence of its own -------------------------------------


def test_a_call_backs_reason_in_its_own_sentence_is_the_reason() -> None:
    """Old code: "What is it about?" although the line said it."""
    assert router.told_reason("Could you ring me back at four? My card is not working.") == (
        "My card is not working"
    )
    assert router.told_reason("Hi there. Please call me back tomorrow at four.") is None
    decision = decide(
        "Could one of the tutors ring me back tomorrow at four in the afternoon? "
        "The glaze keeps crawling off my bowls."
    )
    assert decision == dialogue.Call(
        ToolIntent(
            name="studio.call_back",
            arguments={
                "when": "tomorrow at four in the afternoon",
                "reason": "The glaze keeps crawling off my bowls",
            },
        )
    ), decision


# -- 1. a question the line fills a described tool for is that tool's -------------------------


def test_a_question_that_fills_a_described_tool_is_that_tools() -> None:
    """Old code: out of scope (the intent model ranks no tool confidently)."""
    line = "What hours have you got spare for a kick session on Thursday the 10th of December?"
    assert tool_choice.filled_by_line(line, TOOLS, NOW.date(), NOW) is None, "no date-time"
    shown = ToolDefinition(
        name="studio.bench_slots",
        description="The spare throwing hours on one day for a kind of wheel.",
        input_schema={
            "type": "object",
            "properties": {
                "day": {"type": "string", "format": "date"},
                "wheel": {"type": "string", "enum": ["kick", "electric", "large"]},
            },
            "required": ["day", "wheel"],
        },
    )
    tools = [*TOOLS, shown]
    assert tool_choice.filled_by_line(line, tools, NOW.date(), NOW) is shown
    request = LlmRequest(
        messages=[SYSTEM, Message(role="user", content=line)], tools=tools, timezone=str(ZONE)
    )
    fitted = dialogue._Memo(intents.IntentModel.fit(tools, []))
    decision = dialogue.decide(request, today=NOW.date(), model=fitted)
    assert decision == dialogue.Call(
        ToolIntent(name="studio.bench_slots", arguments={"day": "2026-12-10", "wheel": "kick"})
    ), decision
