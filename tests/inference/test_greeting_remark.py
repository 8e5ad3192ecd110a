"""A greeting with chit-chat after it is a greeting, not a request out of scope (issue 42).

"Good morning! Bit nippy out there today, isn't it?" asks for nothing: the agent greets back. A
greeting before a request the profile does not cover is still refused, and so is a request for
what a prohibited tool does. A bakery's order desk, with names no suite uses.
"""

from __future__ import annotations

import datetime as dt
from functools import cache

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import LlmRequest, Message
from vocero.inference.dialogue import intents, small_talk
from vocero.inference.dialogue import manager as dialogue

TODAY = dt.date(2026, 5, 4)
CAKES = ToolDefinition(
    name="cakes.order_status",
    description="Look up a celebration cake order by its order number.",
    input_schema={"type": "object", "properties": {"order_ref": {"type": "string",
                  "pattern": "^CK-[0-9]{3}$"}}, "required": ["order_ref"]},
)  # fmt: skip
TOOLS = [CAKES]


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS))


def said(line: str) -> str:
    messages = [Message(role="system", content="You are the order desk of Crumb Bakery."),
                Message(role="user", content=line)]  # fmt: skip
    decision = dialogue.decide(LlmRequest(messages=messages, tools=TOOLS), today=TODAY,
                               model=model())  # fmt: skip
    assert isinstance(decision, dialogue.Say), decision
    return decision.text


def test_a_greeting_and_a_remark_about_the_weather_is_greeted_back() -> None:
    remark = small_talk.without_pleasantries("Hello! Terrible weather we're having, eh?")
    assert model().decide(remark).intent == "out_of_scope", "the remark alone is off-topic"
    for line in (
        "Good morning! Bit nippy out there today, isn't it?",
        "Hello! Terrible weather we're having, eh?",
    ):
        reply = said(line)
        assert reply.startswith("Hello") and "can't help" not in reply, (line, reply)


def test_a_greeting_before_a_request_we_do_not_cover_is_still_refused() -> None:
    reply = said("Hi, can you recommend a good car insurance company?")
    assert "can't help" in reply
    assert not small_talk.greeting_remark("Hello! I need a plumber for my kitchen.")
    assert not small_talk.greeting_remark("Lovely weather today.")  # no greeting: not this rule


def test_thanks_and_a_short_bye_at_the_end_is_a_goodbye() -> None:
    assert small_talk.act("Lovely, that's all I needed. Cheers, bye!") == "goodbye"
    assert said("Brilliant, that's everything I needed. Thanks, bye!").endswith("Goodbye.")
    assert small_talk.act("Can you look up CK-123? Thanks, bye") is None, "a request first"
