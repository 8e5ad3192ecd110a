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
from vocero.inference.dialogue import cues, intents
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
            "crd": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2} ?[A-Z]{3}$",
                    "description": "The reader's library card, like LB12 XYZ"},
            "room": {"type": "string", "enum": ["quiet", "group", "media"]},
            "starts": {"type": "string"},
        },
        "required": ["crd", "room", "starts"],
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
