"""Issue 42: the router's lexicon knows actions only; what a tool's things are called comes from
the profile (the nouns of its description, with their everyday synonyms), and an action its name
does not say comes from the description's leading verb. Tools here have generic names no suite
uses."""

from __future__ import annotations

import datetime as dt
from typing import Any

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.lexicon.synonyms import NOUN_SYNONYMS
from vocero.inference.dialogue import router

TODAY = dt.date(2026, 3, 2)


def tool(name: str, description: str, **properties: Any) -> ToolDefinition:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return ToolDefinition(name=name, description=description, input_schema=schema)


DESK = [
    tool("desk.mine", "List the guest's held reservations, soonest first."),
    tool("desk.hold", "Hold a reservation for a guest.", when={"type": "string"}),
    tool("desk.drop", "Drop one held reservation.",
         ref={"type": "string", "pattern": "^R[0-9]{3}$"}),
]  # fmt: skip


def routed(line: str, tools: list[ToolDefinition] = DESK) -> str | None:
    found = router.route(line, tools, TODAY)
    return found.tool.name if found.tool is not None else None


def test_the_lexicon_names_actions_never_a_domains_nouns() -> None:
    nouns = set(NOUN_SYNONYMS) | {w for words in NOUN_SYNONYMS.values() for w in words}
    said = set(router.LEXICON) | {p for phrases in router.LEXICON.values() for p in phrases}
    assert not said & nouns, said & nouns
    assert not any(w in p.split() for p in said for w in nouns), "no noun inside a phrase"


def test_an_action_the_name_does_not_say_is_the_descriptions_leading_verb() -> None:
    assert router.tool_concepts(DESK[0]) == ["desk", "list"]  # "mine": "List the ..."
    assert router.tool_concepts(DESK[1])[-1] == "hold"  # a verb the lexicon does not know


def test_a_descriptions_noun_and_its_synonyms_name_the_tool_with_its_action() -> None:
    assert "reservation" in router.described_nouns(DESK[0])
    assert "booking" in router.described_nouns(DESK[0])  # everyday English for it
    assert routed("What reservations do I have coming up?") == "desk.mine"
    assert routed("What bookings do I have?") == "desk.mine"
    assert routed("Can you list my bookings?") == "desk.mine"


def test_a_noun_alone_or_an_action_alone_is_not_enough() -> None:
    assert routed("How long does a reservation last?") is None
    assert routed("what do I have to bring") is None
    assert routed("show me the way out") is None


def test_the_names_own_domain_still_routes_without_its_description() -> None:
    bare = [tool("desk.mine", ""), tool("desk.drop", "", ref={"type": "string"})]
    assert routed("what's on my desk", bare) == "desk.mine"
    assert routed("what bookings do I have", bare) is None  # nothing says what the desk holds


def test_a_free_text_field_defined_by_a_state_is_the_thing_the_caller_says_is_in_it() -> None:
    fault = tool(
        "faults.log", "Log a fault at the tenant's flat: part is what is broken.",
        part={"type": "string"}, flat={"type": "string", "pattern": "^F[0-9]{3}$"},
    )  # fmt: skip
    arguments, missing, model_fill = router.fill_arguments(
        fault, "My kitchen tap has been broken since Monday, flat F204.", TODAY
    )
    assert arguments == {"part": "kitchen tap", "flat": "F204"}
    assert (missing, model_fill) == ([], [])
    for line in ("The boiler is not broken, flat F204.", "It is broken, flat F204.",
                 "My kitchen tap is dripping, flat F204."):  # fmt: skip
        assert "part" not in router.fill_arguments(fault, line, TODAY)[0], line
    plain = tool("faults.log", "Log a fault.", part={"type": "string"})
    assert router.fill_arguments(plain, "My kitchen tap is broken", TODAY)[0] == {}
