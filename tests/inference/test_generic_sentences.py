"""No sentence the agent builds for a profile with generic, internal-looking names is broken
English (issue 42): read-backs, outcomes of every status, the capability line and the questions
for missing fields, for tools named like ``crm_update_v2``, ``svc.do_thing`` and
``bookings.shift`` with fields ``slot``, ``when``, ``item`` and ``store``. None of them says an
underscore, a dotted name, "and ." or ends on a conjunction."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import InputRequest, LlmRequest, Message
from vocero.inference.dialogue import questions
from vocero.inference.dialogue.small_talk import Persona, reply
from vocero.orchestrator.asking import Asking, Question
from vocero.policy.canonical import CanonicalError, Context, canonicalize
from vocero.policy.readback import outcome, readback


def _schema(*fields: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {f: {"type": "string"} for f in fields},
        "required": list(fields),
    }


# A profile written by a team that never read Vocero's code: terse, internal names, one tool
# with no description at all and one whose description is only a full stop.
TOOLS = [
    ToolDefinition(name="crm_update_v2", description="", input_schema=_schema("item", "store")),
    ToolDefinition(name="svc.do_thing", description=".", input_schema=_schema("item", "when")),
    ToolDefinition(
        name="bookings.shift",
        description="Move a booking to another slot.",
        input_schema=_schema("booking_ref", "slot", "when"),
    ),
    ToolDefinition(  # a second version beside the first: said once
        name="bookings.shift_v3",
        description="Move a booking to another slot.",
        input_schema=_schema("booking_ref", "slot"),
    ),
    ToolDefinition(
        name="slots.next_free",
        description="The next free slot at a store.",
        input_schema=_schema("store"),
    ),
    ToolDefinition(
        name="item_lookup",
        description="Looks up an item by its code and ",
        input_schema=_schema("item_code"),
    ),
]
ARGUMENTS: list[dict[str, Any]] = [
    {"slot": "Friday at 11", "when": "Friday at 11", "item": "BK-7", "store": "Leeds"},
    {"booking_ref": "BK-101", "slot": "9B", "when": "Friday at 11"},
    {"new_slot_id": "S-4", "store_id": "ST-2", "item": "lamp"},
    {"item": "lamp"},
    {},
]
STATUSES = [
    ("committed", ""),
    ("rejected", "stale_version"),
    ("rejected", ""),
    ("unknown", ""),
    ("pending", ""),
]
INSTRUCTIONS = "Be brief and polite."


def broken(sentence: str) -> list[str]:
    """What makes a spoken sentence broken English or an internal name said aloud."""
    problems = []
    if "_" in sentence:
        problems.append("an underscore")
    if re.search(r"[A-Za-z]\.[A-Za-z]", sentence):
        problems.append("a dotted name")
    if re.search(r"\b(and|or)\s*[.,;:?!]", sentence):
        problems.append("a conjunction before a stop")
    if re.search(r"\b(and|or|,)\s*$", sentence.strip()):
        problems.append("a trailing conjunction")
    if re.search(r"\b[a-z]+[A-Z][A-Za-z]*\b", sentence):
        problems.append("a camelCase name")
    if re.search(r"\b(what|which) (when|where|who|why|how)\b", sentence, re.I):
        problems.append("a question word used as a noun")
    if "  " in sentence or " ." in sentence or ",." in sentence:
        problems.append("a gap where an item was")
    for name in ("crm", "svc", "v2", "do thing", "next free slot tool"):
        if re.search(rf"\b{re.escape(name)}\b", sentence, re.I):
            problems.append(f"the internal word {name!r}")
    return problems


def _request(text: str) -> LlmRequest:
    return LlmRequest(
        messages=[Message(role="system", content=INSTRUCTIONS), Message(role="user", content=text)],
        tools=TOOLS,
    )


def sentences() -> list[tuple[str, str]]:
    """Every sentence the agent builds for this profile: (what it is, the sentence)."""
    said: list[tuple[str, str]] = []
    for tool in TOOLS:
        for args in ARGUMENTS:
            said.append(
                (
                    f"read-back {tool.name} {args}",
                    readback(tool.name, args, today=date(2026, 12, 7)).text,
                )
            )
            for status, reason in STATUSES:
                said.append(
                    (
                        f"outcome {status} {tool.name} {args}",
                        outcome(tool.name, args, status, reason, today=date(2026, 12, 7)),
                    )
                )
        for field in tool.input_schema["properties"]:
            said.append((f"question {tool.name}.{field}", questions.ask(tool, field)))
    ctx = Context(tenant="t", timezone="Europe/London", now=datetime(2026, 12, 7, 9, tzinfo=UTC))
    for needed in ("new_slot_id", "slot", "when", "storeCode", "id"):
        schema = {
            "type": "object",
            "properties": {needed: {"type": "string"}},
            "required": [needed],
        }
        with pytest.raises(CanonicalError) as asked:
            canonicalize({}, schema, ctx)
        said.append((f"policy question for {needed}", asked.value.question))
    with pytest.raises(CanonicalError) as malformed:
        canonicalize(
            {"new_slot_id": "??"},
            {"properties": {"new_slot_id": {"type": "string", "pattern": "^S-[0-9]+$"}}},
            ctx,
        )
    said.append(("policy question for a malformed new_slot_id", malformed.value.question))
    said.extend(server_questions())
    for text in ("Tell me a joke.", "What can you do?"):
        said.append((f"reply to {text!r}", reply(text, _request(text))))
    return said


def server_questions() -> list[tuple[str, str]]:
    """A server's own questions (MCP elicitation) and their read-back, for servers and fields
    with internal names."""
    said: list[tuple[str, str]] = []
    core = SimpleNamespace(
        clock=VirtualClock(), ctx=SimpleNamespace(caller=SimpleNamespace(timezone="UTC"))
    )
    properties = {
        "new_slot_id": {"type": "string", "enum": ["S-1", "S-2", "S-3"]},
        "storeCode": {"type": "string"},
        "when": {"type": "string"},
    }
    for server in ("svc_bookings_v2", "crm", "bookings.api"):
        for name in properties:
            request = InputRequest(
                id="q1", server=server, tool="svc.do_thing", operation_id="op1",
                requested_schema={"type": "object", "required": [name], "properties": properties},
            )  # fmt: skip
            asking = Asking(core)  # type: ignore[arg-type]
            said.append((f"server {server} asks {name}", asking._ask_next(Question(request))))
        answered = Question(request, values={"new_slot_id": "S-2", "storeCode": "LDS"})
        said.append((f"server {server} reads back", Asking(core)._read_back(answered)))  # type: ignore[arg-type]
    return said


@pytest.mark.parametrize(("what", "sentence"), sentences())
def test_no_sentence_for_a_generic_profile_is_broken(what: str, sentence: str) -> None:
    assert sentence.strip(), what
    assert broken(sentence) == [], f"{what}: {sentence!r}"


def test_the_capability_line_names_what_each_described_tool_does_and_drops_the_rest() -> None:
    assert Persona.of(_request("What can you do?")).can == (
        "I can move a booking to another slot, tell you about the next free slot at a store, "
        "and look up an item by its code."
    )


def test_a_generic_write_is_read_back_and_reported_in_english() -> None:
    args = {"booking_ref": "BK-101", "when": "Friday at 11"}
    assert readback("bookings.shift", args).text == (
        "To confirm: shift booking BK-101 to Friday at 11. Shall I go ahead?"
    )
    assert outcome("bookings.shift", args, "committed") == (
        "Done: your booking BK-101 is shifted to Friday at 11."
    )
    fields = {"appointment_id": "X-1", "slot": "Friday at 9"}
    assert outcome("appointments.reschedule", fields, "committed") == (
        "Done: your appointment X-1 is rescheduled, with the slot set to Friday at 9."
    ), "a field is said as a setting, never as 'rescheduled slot <value>'"
    spoken = readback("svc.do_thing", {"item": "lamp", "store": "Leeds"})
    assert spoken.text == (
        "To confirm: change thing, setting the item to lamp and the store to Leeds. "
        "Shall I go ahead?"
    )
    assert spoken.parts == ("lamp", "Leeds"), "each value is one the caller must hear"
    assert outcome("crm_update_v2", {"item": "lamp"}, "committed") == (
        "Done: that's updated, with the item set to lamp."
    )
