"""A write whose distinguishing value is a yes-or-no enum said in everyday words (issue 42).

"Go ahead with it" and "I don't want them" choose ``accept`` or ``reject`` of a write tool's
enum, and that value is the evidence for the write over a lookup that takes the same
identifier: an identifier that fits both tools decides nothing. A plain "yes, go ahead" only
confirms (it never flips a pending "reject", nor opens a task of its own). The profile here is
a letting agency's, with names no suite uses.
"""

from __future__ import annotations

import datetime as dt
from functools import cache

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ClaimTopic, LlmRequest, Message, ToolIntent
from vocero.inference.dialogue import corrections, intents, router
from vocero.inference.dialogue import manager as dialogue

TODAY = dt.date(2026, 5, 4)
REF = {"type": "string", "pattern": "^TN-[0-9]{4}$", "description": "The tenancy number"}
DETAILS = ToolDefinition(
    name="tenancy.details",
    description="Look up a tenancy by its number: the flat, the rent and any offer pending.",
    input_schema={"type": "object", "properties": {"tenancy_ref": REF},
                  "required": ["tenancy_ref"]},
)  # fmt: skip
REPLY = ToolDefinition(
    name="tenancy.offer_reply",
    description="Give the tenant's answer to the landlord's renewal offer: accept or reject it.",
    input_schema={
        "type": "object",
        "properties": {"tenancy_ref": REF, "verdict": {"type": "string",
                                                       "enum": ["accept", "reject"]}},
        "required": ["tenancy_ref", "verdict"],
    },
)  # fmt: skip
FAQ = ToolDefinition(
    name="office.answers",
    builtin="knowledge.search",
    description="The agency's approved answers.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
)
TOOLS = [DETAILS, REPLY, FAQ]
CLAIMS = [
    ClaimTopic(key="office.hours", text="The office is open 9 to 5 on weekdays.",
               topics=["open", "hours", "weekdays"]),
]  # fmt: skip


@cache
def model() -> dialogue._Memo:
    return dialogue._Memo(intents.IntentModel.fit(TOOLS, CLAIMS))


def decide(line: str) -> dialogue.Decision:
    messages = [Message(role="system", content="You answer the phone for a letting agency."),
                Message(role="user", content=line)]  # fmt: skip
    request = LlmRequest(messages=messages, tools=TOOLS, claims=CLAIMS)
    return dialogue.decide(request, today=TODAY, model=model())


def called(line: str) -> ToolIntent | None:
    decision = decide(line)
    return decision.intent if isinstance(decision, dialogue.Call) else None


def test_an_everyday_assent_chooses_the_write_and_its_value() -> None:
    line = "The landlord rang about an offer on tenancy TN-2042. I'm happy for you to go ahead."
    assert called(line) == ToolIntent(
        name="tenancy.offer_reply", arguments={"tenancy_ref": "TN-2042", "verdict": "accept"}
    )


def test_an_everyday_dissent_chooses_the_write_and_its_value() -> None:
    line = "Can you tell the landlord I don't want the new terms on tenancy TN-2045?"
    assert called(line) == ToolIntent(
        name="tenancy.offer_reply", arguments={"tenancy_ref": "TN-2045", "verdict": "reject"}
    )


def test_without_the_tools_noun_the_value_still_outweighs_the_shared_identifier() -> None:
    intent = called("Go ahead with the repainting on TN-2044, please.")
    assert intent is not None and intent.name == "tenancy.offer_reply"
    assert intent.arguments == {"tenancy_ref": "TN-2044", "verdict": "accept"}


def test_an_assent_taken_back_is_the_dissent() -> None:
    assert router.fill_arguments_one(REPLY, "verdict", "I don't approve of it, no") == "reject"
    assert router.fill_arguments_one(REPLY, "verdict", "We've decided to turn it down") == "reject"
    assert router.fill_arguments_one(REPLY, "verdict", "How is my tenancy going?") is None


def test_a_lookup_is_still_a_lookup() -> None:
    intent = called("What's the rent on tenancy TN-2041?")
    assert intent is not None and intent.name == "tenancy.details"


def test_a_plain_yes_confirms_and_changes_no_value() -> None:
    pending = ToolIntent(
        name="tenancy.offer_reply", arguments={"tenancy_ref": "TN-2045", "verdict": "reject"}
    )
    assert corrections.correction("Yes, go ahead.", pending, TOOLS, TODAY) is None
    changed = corrections.correction("No wait, accept it after all", pending, TOOLS, TODAY)
    assert changed is not None and changed.arguments["verdict"] == "accept"
    plain = decide("Yes, go ahead.")
    assert not isinstance(plain, dialogue.Call), "a bare yes opens no task"
