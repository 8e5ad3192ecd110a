"""A profile written without reading the dialogue code is served from its own material (issue 42).

Sans-IO, as :mod:`tests.inference.test_cpu_dialogue`: :func:`dialogue.decide` on a profile whose
names the code has never seen (a public library: loans, hold requests, study rooms, call-backs),
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
    content="You answer the phone for Elm Row Library: loans, hold requests and study rooms.",
)
LOAN_CARD = ToolDefinition(
    name="lending.loan_card",
    description="Look up a book loan by its loan number: the title, the due date and any fine.",
    input_schema={
        "type": "object",
        "properties": {
            "loan_ref": {"type": "string", "pattern": "^LN-[0-9]{4}$",
                         "description": "The loan number on the receipt, like LN-3310"},
        },
        "required": ["loan_ref"],
    },
)  # fmt: skip
HOLD_STATUS = ToolDefinition(
    name="holds.where_is",
    description="Where a reader's hold request stands; hold_no is the number printed on the "
    "hold slip: four digits, a dash and a letter, like 5521-D.",
    input_schema={
        "type": "object",
        "properties": {"hold_no": {"type": "string"}},
        "required": ["hold_no"],
    },
)
ROOM_BOOKING = ToolDefinition(
    name="rooms.reserve",
    description="Reserve a study room for a reader; starts is when the reader arrives, as an "
    "RFC 3339 date-time with its UTC offset.",
    input_schema={
        "type": "object",
        "properties": {
            "mem": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2} ?[A-Z]{3}$",
                    "description": "The reader's membership code, like LB12 XYZ"},
            "room": {"type": "string", "enum": ["quiet", "group", "media"]},
            "starts": {"type": "string"},
        },
        "required": ["mem", "room", "starts"],
    },
)  # fmt: skip
CALLBACKS = ToolDefinition(
    name="desk.call_back",
    builtin="followups.record",
    description="Have a librarian ring the reader back at the time they asked, with the reason.",
    input_schema={
        "type": "object",
        "properties": {"when": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["when", "reason"],
    },
)
TOOLS = [LOAN_CARD, HOLD_STATUS, ROOM_BOOKING, CALLBACKS]


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
    """Old code: "LN-5521" for a number said as an order of another kind."""
    line = "Any news on my large print books? Hold number 5521 D."
    assert values.bare_identifier(line, "^LN-[0-9]{4}$", borrow=False) is None
    assert values.bare_identifier(line, "^LN-[0-9]{4}$") is None, "its letter is part of it"
    assert values.bare_identifier("It's 3310", "^LN-[0-9]{4}$") == "LN-3310", "an answer"
    assert values.identifier_in(line, "hold") == "5521D", "the letter said after the digits"
    assert cues.identified_tools(line, TOOLS) == [HOLD_STATUS]


def test_the_tool_whose_identifier_the_line_names_is_called_with_it() -> None:
    """Old code: the loan card with "LN-5521", a value the caller never said."""
    decision = decide("Any news on my large print books? Hold number 5521 D.")
    assert decision == dialogue.Call(
        ToolIntent(name="holds.where_is", arguments={"hold_no": "5521D"})
    ), decision


# -- 2. a request that says every value is read back, never asked a field it does not lack --------


def test_a_field_the_tools_line_calls_a_date_time_is_one() -> None:
    """Old code: "starts" stayed free text (the RFC 3339 words are the next clause's), left to
    the small model."""
    shown = schema.model_facing(ROOM_BOOKING)["properties"]
    assert shown["starts"]["format"] == "date-time"
    assert "format" not in schema.model_facing(HOLD_STATUS)["properties"]["hold_no"]


def test_a_code_with_a_space_is_one_identifier() -> None:
    """Old code: None ("LB12" alone fits no registration-like pattern), so it was asked for."""
    pattern = ROOM_BOOKING.input_schema["properties"]["mem"]["pattern"]
    assert values.bare_identifier("My membership is LB12 XYZ.", pattern) == "LB12XYZ"
    assert values.bare_identifier("LB12 XYZ in for a room at 9", pattern) == "LB12XYZ"


def test_a_short_field_is_asked_for_by_its_own_descriptions_word() -> None:
    """Old code: "Which room is it? Please tell me the rooms number." (the tool's domain)."""
    assert questions.ask(ROOM_BOOKING, "mem") == (
        "Which membership is it? Please tell me the membership number."
    )


def test_a_request_with_every_value_is_the_write_with_them() -> None:
    """Old code: the membership was asked for although it was said."""
    decision = decide(
        "I'd like to reserve a quiet room tomorrow at half past eight in the morning. "
        "My membership is LB12 XYZ."
    )
    assert decision == dialogue.Call(
        ToolIntent(
            name="rooms.reserve",
            arguments={"mem": "LB12XYZ", "room": "quiet", "starts": "2026-12-08T08:30:00+00:00"},
        )
    ), decision


# -- 3. a request without its time asks when, and the answer completes it -------------------


def test_a_request_without_its_time_asks_when_and_the_answer_completes_it() -> None:
    """Old code: the code went unread, so the line looked like no request at all."""
    first = "I need to reserve a group room, membership DV68 RTS."
    asked = decide(first)
    assert asked == dialogue.Say("What day and time would suit you?"), asked
    answered = decide(first, Message(role="assistant", content=asked.text),
                      "Thursday at quarter to eight in the morning, please.")  # fmt: skip
    assert answered == dialogue.Call(
        ToolIntent(
            name="rooms.reserve",
            arguments={"mem": "DV68RTS", "room": "group", "starts": "2026-12-10T07:45:00+00:00"},
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
        "Could one of the librarians ring me back tomorrow at four in the afternoon? "
        "The scanner keeps rejecting my card."
    )
    assert decision == dialogue.Call(
        ToolIntent(
            name="desk.call_back",
            arguments={
                "when": "tomorrow at four in the afternoon",
                "reason": "The scanner keeps rejecting my card",
            },
        )
    ), decision


# -- 1. a question the line fills a described tool for is that tool's -------------------------


def test_a_question_that_fills_a_described_tool_is_that_tools() -> None:
    """Old code: out of scope (the intent model ranks no tool confidently)."""
    line = "Which rooms have you got spare for a media session on Thursday the 10th of December?"
    assert tool_choice.filled_by_line(line, TOOLS, NOW.date(), NOW) is None, "no date-time"
    shown = ToolDefinition(
        name="rooms.vacant_slots",
        description="The spare study room hours on one day for a kind of room.",
        input_schema={
            "type": "object",
            "properties": {
                "day": {"type": "string", "format": "date"},
                "room": {"type": "string", "enum": ["quiet", "group", "media"]},
            },
            "required": ["day", "room"],
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
        ToolIntent(name="rooms.vacant_slots", arguments={"day": "2026-12-10", "room": "media"})
    ), decision
