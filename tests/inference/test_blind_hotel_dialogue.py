"""Lines of the blind hotel suite (Larkspur, tuning split), served on a profile in another
business: a dog-grooming salon no suite uses (issue 42).

Sans-IO, as :mod:`tests.inference.test_blind_leisure_dialogue`. Each test fails on the code
before it: a lower-case choice a tool's line gives ("extra is nails or teeth") went to the small
model; "nails, not teeth" took the value said last; "If I cancel my booking, will I be
charged?" asked for the booking number; "Can you book me a taxi for the morning?" was looked up
in the catalog on the topic "morning"; a goodbye after a remark was "anything else?"; "at a
quarter past nine in the morning" lost its time.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from zoneinfo import ZoneInfo

from vocero.contracts import values
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ClaimTopic, LlmRequest, Message, ToolIntent
from vocero.followups.due import resolve_due
from vocero.inference.dialogue import intents, small_talk
from vocero.inference.dialogue import manager as dialogue

ZONE = ZoneInfo("America/Denver")
TODAY = dt.date(2026, 12, 7)  # a Monday
NOW = dt.datetime(2026, 12, 7, 10, 0, tzinfo=ZONE)
SYSTEM = Message(role="system", content="You answer the phone for Tidy Paws grooming salon.")
VISIT = {"type": "string", "pattern": "^TP[0-9]{4}$", "description": "The visit number, TP1234"}
EXTRA = ToolDefinition(
    name="visits.add_treat",
    description="Add a treatment to a grooming visit; extra is nails or teeth.",
    input_schema={
        "type": "object",
        "properties": {"visit": VISIT, "extra": {"type": "string"}},
        "required": ["visit", "extra"],
    },
)
LOOKUP = ToolDefinition(
    name="visits.find",
    description="Find a grooming visit: the dog, the day, the groomer and the extras.",
    input_schema={"type": "object", "properties": {"visit": VISIT}, "required": ["visit"]},
    examples=["Can you look up my visit?"],
)
RING = ToolDefinition(
    name="salon.ring_back",
    builtin="followups.record",
    description="Have the salon manager call the owner back at the time they asked for.",
    input_schema={
        "type": "object",
        "properties": {"when": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["when", "reason"],
    },
)
ANSWERS = ToolDefinition(
    name="salon.answers",
    builtin="knowledge.search",
    description="Tidy Paws' approved answers about prices, cancellations and opening hours.",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
)
TOOLS = [EXTRA, LOOKUP, RING, ANSWERS]
CLAIMS = [
    ClaimTopic(
        key="cancel.terms",
        text="Cancelling a visit is free up to a day before; later we keep a 15 dollar fee.",
        topics=["cancellation", "fee", "charge"],
    ),
    ClaimTopic(
        key="hours.open",
        text="We groom from 8 in the morning to 6 in the evening, Monday to Saturday.",
        topics=["hours", "open", "morning", "evening"],
    ),
]


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, CLAIMS))


def decided(*lines: str | Message) -> dialogue.Decision:
    messages = [SYSTEM]
    messages += [m if isinstance(m, Message) else Message(role="user", content=m) for m in lines]
    request = LlmRequest(messages=messages, tools=TOOLS, claims=CLAIMS)
    return dialogue.decide(request, today=TODAY, model=model())


def test_a_choice_the_tools_line_gives_in_lower_case_fills_the_field() -> None:
    assert decided("Please add nails to TP4410.") == dialogue.Call(
        ToolIntent(name="visits.add_treat", arguments={"visit": "TP4410", "extra": "nails"})
    )


def test_a_choice_taken_back_with_not_is_not_the_one_meant() -> None:
    line = "Could you add teeth to visit TP4410? Sorry, I mean nails, not teeth."
    assert decided(line) == dialogue.Call(
        ToolIntent(name="visits.add_treat", arguments={"visit": "TP4410", "extra": "nails"})
    )


def test_what_would_happen_to_my_own_record_asks_the_terms() -> None:
    line = "If I cancel my visit, will I be charged anything?"
    assert decided(line) == dialogue.Call(
        ToolIntent(name="salon.answers", arguments={"query": line})
    )


def test_asking_us_to_do_what_no_tool_does_is_out_of_scope_not_a_catalog_topic() -> None:
    said = decided("Can you book me a taxi for Friday morning?")
    assert isinstance(said, dialogue.Say) and said.text.startswith("Sorry, I can't help")
    # Asking to be told something in the same topic is still the catalog's.
    asked = decided("Can you tell me how early you open in the morning?")
    assert isinstance(asked, dialogue.Call) and asked.intent.name == "salon.answers"


def test_a_goodbye_after_a_remark_and_thanks_ends_the_call() -> None:
    assert small_talk.act("Glad to hear it. Actually, that's all I needed. Thanks, bye!") == (
        "goodbye"
    )
    # A request before the goodbye is still a request.
    assert small_talk.act("Great. Add nails to TP4410. Thanks, bye.") != "goodbye"


def test_a_quarter_past_the_hour_said_with_an_article_keeps_its_minutes() -> None:
    asked = Message(role="assistant", content="When should we call you back?")
    call = decided("Have the manager call me about the clippers.", asked, "Thursday at a "
                   "quarter past nine in the morning.")  # fmt: skip
    assert isinstance(call, dialogue.Call)
    when = call.intent.arguments["when"]
    assert when == "Thursday at a quarter past nine in the morning"
    assert resolve_due(when, NOW, "America/Denver").at == dt.datetime(
        2026, 12, 10, 9, 15, tzinfo=ZONE
    )
    assert (
        values.when_phrase("tomorrow at about half past two") == "tomorrow at about half past two"
    )
