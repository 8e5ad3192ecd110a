"""Property: whatever a model says and whichever claims it cites, every admitted unit is approved
wording, an application fallback, or wording whose critical values (checked here by an
independent oracle over plain numbers) are all in the unit's evidence, with its claims'
restriction words kept and none added."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.speech.support import DECEMBER_1, claim, planner
from vocero.contracts.clock import VirtualClock
from vocero.contracts.ports import ClaimAnswer
from vocero.speech.admission import Admission
from vocero.speech.model import GenerationRef, PlannedUnit, ToolEvidence
from vocero.speech.planner import FALLBACKS

RESTRICTIONS = ("not", "no", "never", "only", "unless", "except", "without")
NUMBER = re.compile(r"\d+")
RESTRICTION = re.compile(rf"\b(?:{'|'.join(RESTRICTIONS)})\b", re.IGNORECASE)

numbers = st.integers(min_value=2, max_value=60)
restriction = st.sampled_from(["", *RESTRICTIONS])


@st.composite
def catalogs(draw: st.DrawFn) -> list:  # type: ignore[type-arg]
    size = draw(st.integers(1, 4))
    claims = []
    for i in range(size):
        word = draw(restriction)
        text = f"Policy {chr(65 + i)} applies {word} within {draw(numbers)} days."
        text = text.replace("  ", " ")
        claims.append(claim(f"c{i}", text))
    return claims


def sentence(n: int, word: str) -> str:
    return f"It is {word} {n} days.".replace("  ", " ")


model_turns = st.lists(
    st.one_of(
        st.tuples(st.just("text"), numbers, restriction),
        st.tuples(st.just("claims"), st.lists(st.sampled_from(["c0", "c1", "c2", "c3", "zz"]),
                                              max_size=3), st.none()),
        st.tuples(st.just("paraphrase"), st.lists(st.sampled_from(["c0", "c1", "c2"]),
                                                  min_size=1, max_size=2),
                  st.tuples(numbers, restriction)),
        st.tuples(st.just("reword"), st.sampled_from(["c0", "c1"]), restriction),
    ),
    max_size=6,
)


def digits(text: str) -> set[str]:
    return set(NUMBER.findall(text))


def restrictions(text: str) -> set[str]:
    return {w.casefold() for w in RESTRICTION.findall(text)}


@settings(max_examples=300, deadline=None)
@given(
    catalog=catalogs(),
    turns=model_turns,
    tool_numbers=st.lists(numbers, max_size=3),
    caller_numbers=st.lists(numbers, max_size=2),
    grounding=st.sampled_from(["strict", "assisted"]),
)
def test_no_admitted_text_outside_approved_wording_unless_it_passes_the_check(
    catalog: list,  # type: ignore[type-arg]
    turns: list,  # type: ignore[type-arg]
    tool_numbers: list[int],
    caller_numbers: list[int],
    grounding: str,
) -> None:
    clock = VirtualClock(start=DECEMBER_1)
    caller = [f"I was told {n} things" for n in caller_numbers]
    p = planner(claims=catalog, grounding=grounding, clock=clock, caller=caller, word_budget=40,
                generation=GenerationRef("gen", "turn", 0))
    p.add_tool_result(ToolEvidence(tool_call_id="t1", tool="lookup",
                                   result={"values": tool_numbers}))
    approved = {c.key: c.text for c in catalog}
    units: list[PlannedUnit] = []
    for kind, first, second in turns:
        if kind == "text":
            units += p.feed(sentence(first, second) + " ")
        elif kind == "claims":
            units += p.answer(ClaimAnswer(claim_keys=first))
        elif kind == "paraphrase":
            units += p.claims(first, paraphrase=sentence(*second))
        elif first in approved:  # the approved wording with its restriction word changed
            text = RESTRICTION.sub("", approved[first]).replace(" within", f" {second} within")
            units += p.claims([first], paraphrase=" ".join(text.split()))
    units += p.flush()
    gate = Admission(max_age_ms=4000)
    gate.begin("gen")
    admitted = [u for u in units if u.speakable and gate.admit(u, clock.monotonic()).ready]

    evidence = {str(n) for n in tool_numbers + caller_numbers}
    evidence |= {str(len(tool_numbers))}  # a list's length is evidence too
    for u in admitted:
        if u.kind == "fallback":
            assert u.text in FALLBACKS.values()
            continue
        if u.kind == "claim" and u.text in approved.values():
            assert [approved[k] for k in u.claim_keys] == [u.text]
            continue
        cited = [approved[k] for k in u.claim_keys]
        assert not cited or grounding == "assisted", "strict grounding spoke a paraphrase"
        allowed = evidence | {d for text in cited for d in digits(text)}
        assert digits(u.text) <= allowed, (u.text, allowed)
        if cited:
            assert restrictions(u.text) == {w for t in cited for w in restrictions(t)}
    assert all(not u.speakable for u in units if u.refusal)
