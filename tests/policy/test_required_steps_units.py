"""Required steps (ADR-0030) without IO: the gate over every step kind, the evidence table's
verification events, the canonical comparison of a caller's answer with a record, which steps
guard which tool, and the profile's load-time checks (file and field named)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.policy.test_policy_units import PROFILE, SPECS, executing, request
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import (
    AgentProfile,
    AskedFact,
    ProfileMatch,
    RequiredStep,
    StepScope,
    ToolSpec,
)
from vocero.contracts.errors import ConfigError
from vocero.contracts.ports import InputRequest, InputResponse
from vocero.identity.profiles import load_profiles
from vocero.policy.evidence import (
    DELIVERY_EVENTS,
    STATUSES,
    TRANSITIONS,
    VERIFY_EVENTS,
    Ev,
    Step,
    apply,
)
from vocero.policy.gate import StepFact, permit, resolve
from vocero.policy.steps import (
    RequiredSteps,
    applicable,
    canonical_fact,
    heard_whole,
    same_fact,
    stored_facts,
    version_of,
)

KINDS = ("disclosure", "verify_identity")
REASON = {"disclosure": "disclosure_not_heard", "verify_identity": "identity_not_verified"}
FACTS = st.lists(
    st.builds(StepFact, id=st.sampled_from(["a", "b", "c"]), kind=st.sampled_from(KINDS),
              status=st.sampled_from(STATUSES), failed=st.booleans()),
    max_size=4,
)

# ----------------------------------------------------------------------------------- gate


@given(FACTS)
def test_execute_allows_only_when_every_step_is_satisfied(steps: list[StepFact]) -> None:
    decision = permit(executing(steps=tuple(steps)))
    assert decision.allowed == all(s.status == "satisfied" and not s.failed for s in steps)
    if not decision.allowed:
        first = next(s for s in steps if s.failed) if any(s.failed for s in steps) else next(
            s for s in steps if s.status != "satisfied")
        assert decision.reason == REASON[first.kind]


@given(FACTS)
def test_a_failed_step_denies_first_then_the_confirmation_is_checked(
    steps: list[StepFact],
) -> None:
    decision = permit(executing(steps=tuple(steps), confirmation=None))
    failed = next((s for s in steps if s.failed), None)
    assert decision.reason == (REASON[failed.kind] if failed else "confirmation_missing")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", ["missing", "in_progress", "invalidated", "unobservable"])
def test_a_step_not_satisfied_denies_a_write_that_needs_no_confirmation(
    kind: str, status: str
) -> None:
    steps = (StepFact("s", kind, status),)  # type: ignore[arg-type]
    decision = permit(request("followups.record", stage="execute", steps=steps))
    assert (decision.outcome, decision.reason) == ("deny", REASON[kind])
    done = (StepFact("s", kind, "satisfied"),)  # type: ignore[arg-type]
    assert permit(request("followups.record", stage="execute", steps=done)).allowed


def test_propose_names_what_is_missing_and_refuses_what_failed() -> None:
    notice = StepFact("notice", "disclosure")
    holder = StepFact("holder", "verify_identity")
    confirm = permit(request("appointments.reschedule", steps=(notice, holder)))
    assert (confirm.outcome, confirm.missing) == ("confirm", ("notice", "holder"))
    # A write that needs no confirmation becomes a question while a disclosure is due ...
    asked = permit(request("followups.record", steps=(notice,)))
    assert (asked.outcome, asked.reason) == ("confirm", "disclosure_not_heard")
    # ... and runs while only a verification is missing (performed at execute).
    runs = permit(request("followups.record", steps=(holder,)))
    assert (runs.outcome, runs.missing) == ("allow", ("holder",))
    failed = StepFact("holder", "verify_identity", "invalidated", failed=True)
    refused = permit(request("appointments.reschedule", steps=(failed,)))
    assert (refused.outcome, refused.reason) == ("deny", "identity_not_verified")
    assert permit(request("orders.status", steps=(failed,))).allowed, "reads are not guarded"


# ------------------------------------------------------------------------------- evidence


def test_the_table_is_total_over_every_step_kinds_events() -> None:
    assert set(DELIVERY_EVENTS) | set(VERIFY_EVENTS) == set(Ev)
    assert {(s, e) for s in STATUSES for e in Ev} == set(TRANSITIONS)


ATTEMPTS = st.sampled_from(["v1", "v2"])


@given(st.lists(st.tuples(st.sampled_from(VERIFY_EVENTS), ATTEMPTS), max_size=12))
def test_only_a_match_of_the_current_attempt_verifies(trace: list[tuple[Ev, str]]) -> None:
    step = Step("", 0, step="holder")
    failed_before = False
    for event, attempt in trace:
        before = step
        step = apply(step, event, attempt)
        if step.satisfied and not before.satisfied:
            assert event is Ev.MATCHED and attempt == step.generation_id
        if before.failed:
            assert step == before, "a failed verification never changes again"
        failed_before = failed_before or step.failed
    if failed_before:
        assert step.failed and step.closed and step.status == "invalidated"


def test_a_mismatch_fails_only_an_attempt_in_progress() -> None:
    asked = apply(Step("", 0, step="holder"), Ev.ASKED, "v1")
    assert asked.status == "in_progress"
    failed = apply(asked, Ev.MISMATCHED, "v1")
    assert (failed.status, failed.failed, failed.closed) == ("invalidated", True, True)
    assert apply(failed, Ev.ASKED, "v2") == failed
    assert apply(asked, Ev.MISMATCHED, "v0") == asked, "another attempt's answer is stale"
    unverifiable = apply(asked, Ev.UNVERIFIABLE, "v1")
    assert unverifiable.status == "unobservable" and not unverifiable.satisfied
    again = apply(apply(asked, Ev.ABANDONED, "v1"), Ev.ASKED, "v2")
    assert apply(again, Ev.MATCHED, "v2").satisfied


def test_a_disclosure_is_delivered_like_a_read_back() -> None:
    step = apply(Step("", 0, step="notice"), Ev.SPOKEN, "g1")
    cut = apply(step, Ev.NOT_DELIVERED, "g1")
    assert cut.status == "invalidated" and not apply(cut, Ev.DELIVERED, "g1").satisfied
    assert apply(apply(cut, Ev.SPOKEN, "g2"), Ev.DELIVERED, "g2").satisfied
    assert not apply(apply(cut, Ev.SPOKEN, "g2"), Ev.DELIVERED, "g1").satisfied


# ------------------------------------------------------------------------ steps, pure parts


@pytest.mark.parametrize(
    ("kind", "said", "recorded", "same"),
    [
        ("date", "the 12th of March 1980", "1980-03-12", True),
        ("date", "March 12, 1980", "1980-03-12T00:00:00Z", True),
        ("date", "12/03/1980", "1980-03-12", True),
        ("date", "1 April 1975", "1980-03-12", False),
        ("date", "March 1980", "1980-03-12", False),
        ("date", "30 February 1980", "1980-03-01", False),
        ("text", "sw1a 1aa", "SW1A 1AA", True),
        ("text", "SW1A-1AA.", "sw1a1aa", True),
        ("text", "SW1A 1AB", "SW1A 1AA", False),
        ("text", "", "", False),
        ("number", "0042", "42", True),
        ("number", "4 2 7", "427", True),
        ("number", "43", "42", False),
        ("text", "anything", None, False),
    ],
)
def test_a_caller_fact_is_compared_canonically(
    kind: str, said: str, recorded: Any, same: bool
) -> None:
    assert same_fact(kind, said, recorded) is same


def test_an_unreadable_fact_never_matches_itself() -> None:
    assert canonical_fact("date", "sometime") is None
    assert not same_fact("date", "sometime", "sometime")


def test_steps_guard_a_tool_and_its_aliases_by_name_or_class() -> None:
    by_name = RequiredStep(kind="disclosure", id="n", text="t",
                           applies_to=StepScope(tools=["appointments.cancel"]))
    by_class = RequiredStep(kind="disclosure", id="c", text="t",
                            applies_to=StepScope(classes=["reversible_write"]))
    profile = AgentProfile(id="p", version="1", match=ProfileMatch(tenant="acme"), tools=SPECS,
                           required_steps=[by_name, by_class])
    ids = {name: [s.id for s in applicable(profile, resolve(profile, name))]
           for name in ("appointments.cancel", "appointments.tidy", "appointments.reschedule",
                        "orders.status")}
    assert ids == {"appointments.cancel": ["n"], "appointments.tidy": ["n"],
                   "appointments.reschedule": ["c"], "orders.status": []}
    assert applicable(PROFILE, resolve(PROFILE, "appointments.cancel")) == []


def test_stored_evidence_of_another_step_version_is_missing() -> None:
    step = RequiredStep(kind="disclosure", id="n", text="Calls are recorded.",
                        applies_to=StepScope(classes=["irreversible"]))
    reworded = RequiredStep(kind="disclosure", id="n", text="Calls may be recorded.",
                            applies_to=StepScope(classes=["irreversible"]))
    stored = {"n": ("satisfied", version_of(step))}
    assert stored_facts([step], stored)[0].satisfied
    assert stored_facts([reworded], stored)[0].status == "missing"
    assert stored_facts([step], {})[0].status == "missing"


def test_a_disclosure_is_heard_only_whole() -> None:
    text = "Calls are recorded.  Changes are final."
    assert heard_whole(text, "Sure. Calls are recorded. Changes are final. To confirm")
    assert not heard_whole(text, "Sure. Calls are recorded. Changes are")
    assert not heard_whole("", "anything")


# ------------------------------------------------------------------------- profile loading

BASE: dict[str, Any] = {
    "id": "p", "version": "1", "match": {"tenant": "acme"},
    "mcp_servers": {"records": {"url": "http://127.0.0.1:9/mcp"}},
    "tools": [
        {"name": "holder.lookup", "server": "records", "resolves_to": "holder",
         "action_class": "read"},
        {"name": "bookings.move", "server": "records", "resolves_to": "move",
         "action_class": "reversible_write", "requires_confirmation": True},
    ],
}
VERIFY: dict[str, Any] = {
    "kind": "verify_identity", "id": "holder_check", "tool": "holder.lookup",
    "ask": [{"field": "postcode", "question": "What is your postcode?"},
            {"field": "born", "question": "Your date of birth?", "type": "date"}],
    "arguments": {"postcode": "postcode"}, "match": {"born": "date_of_birth"},
    "applies_to": {"tools": ["bookings.move"]},
}
NOTICE: dict[str, Any] = {"kind": "disclosure", "id": "notice", "text": "Calls are recorded.",
                          "applies_to": {"classes": ["reversible_write", "irreversible"]}}


def load(tmp_path: Path, *steps: dict[str, Any]) -> AgentProfile:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump({**BASE, "required_steps": list(steps)}))
    profile = load_profiles(tmp_path).get("p")
    assert profile is not None
    return profile


def test_a_profile_with_required_steps_loads(tmp_path: Path) -> None:
    profile = load(tmp_path, VERIFY, NOTICE)
    assert [s.id for s in profile.required_steps] == ["holder_check", "notice"]
    assert profile.required_steps[0].ask[1].type == "date"


@pytest.mark.parametrize(
    ("step", "field", "problem"),
    [
        ({**VERIFY, "tool": "bookings.move"}, "required_steps[0].tool", "not a read tool"),
        ({**VERIFY, "tool": "nope"}, "required_steps[0].tool", "not a read tool"),
        ({**VERIFY, "match": {"age": "age"}}, "required_steps[0].match.age", "asked field"),
        ({**VERIFY, "arguments": {"x": "nope"}}, "required_steps[0].arguments.x", "asked"),
        ({**VERIFY, "ask": []}, "required_steps[0].ask", "at least one"),
        ({**VERIFY, "text": "hi"}, "required_steps[0].text", "only a disclosure"),
        ({**NOTICE, "text": " "}, "required_steps[0].text", "text"),
        ({**NOTICE, "tool": "holder.lookup"}, "required_steps[0].tool", "verify_identity"),
        ({**NOTICE, "applies_to": {}}, "required_steps[0].applies_to", "names no tool"),
        ({**NOTICE, "applies_to": {"classes": ["read"]}},
         "required_steps[0].applies_to.classes[0]", "writes only"),
        ({**NOTICE, "applies_to": {"tools": ["holder.lookup"]}},
         "required_steps[0].applies_to.tools[0]", "writes only"),
        ({**NOTICE, "applies_to": {"tools": ["ghost"]}},
         "required_steps[0].applies_to.tools[0]", "no profile tool"),
        ({**NOTICE, "id": "Bad Id"}, "required_steps[0].id", "lowercase"),
    ],
)
def test_a_bad_step_fails_the_load_naming_file_and_field(
    tmp_path: Path, step: dict[str, Any], field: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, step)
    assert caught.value.path == str(tmp_path / "p.yaml")
    assert caught.value.field == field
    assert problem in caught.value.problem


def test_a_repeated_step_id_fails_the_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, NOTICE, {**VERIFY, "id": "notice"})
    assert caught.value.field == "required_steps[1].id"


# ------------------------------------------------------------------------- the session shell


class FakeEvidenceStore:
    """Stands for the action repository: the evidence rows written, in order."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str]] = []

    async def record_evidence(self, session_id: str, step: Step, *, cause: str) -> None:
        self.recorded.append((step.step, step.status, cause))


def shell(*steps: RequiredStep) -> tuple[RequiredSteps, FakeEvidenceStore]:
    profile = AgentProfile(id="p", version="1", match=ProfileMatch(tenant="acme"), tools=SPECS,
                           required_steps=list(steps))
    store = FakeEvidenceStore()
    return RequiredSteps(profile, store, "ses_1", VirtualClock()), store  # type: ignore[arg-type]


SCOPE = StepScope(classes=["reversible_write"])
POSTCODE = RequiredStep(kind="verify_identity", id="postcode_check", tool="orders.status",
                        ask=[AskedFact(field="postcode", question="Your postcode?")],
                        arguments={"ref": "postcode"}, match={"postcode": "postcode"},
                        applies_to=SCOPE)
BIRTH = RequiredStep(kind="verify_identity", id="birth_check", tool="orders.status",
                     ask=[AskedFact(field="born", question="Your date of birth?", type="date")],
                     match={"born": "dob"}, applies_to=SCOPE)
WRITE = resolve(PROFILE, "appointments.reschedule")


@pytest.mark.anyio
async def test_verifications_are_asked_in_one_question_and_judged_each() -> None:
    steps, store = shell(POSTCODE, BIRTH)
    asked: list[InputRequest] = []
    reads: list[tuple[str, dict[str, Any]]] = []

    async def ask(request: InputRequest) -> InputResponse:
        asked.append(request)
        return InputResponse(action="accept", content={
            "postcode_check.postcode": "sw1a 1aa", "birth_check.born": "1 April 1975"})

    async def read(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reads.append((tool, arguments))
        return {"postcode": "SW1A 1AA", "dob": "1980-03-12"}

    assert WRITE is not None
    await steps.verify(WRITE, ask=ask, read=read, operation_id="op_1")
    [question] = asked
    assert list(question.requested_schema["properties"]) == [
        "postcode_check.postcode", "birth_check.born"]
    assert question.server == "vocero" and question.proposal_id == ""
    assert reads[0] == ("orders.status", {"ref": "sw1a 1aa"})
    facts = {f.id: f for f in steps.facts(WRITE)}
    assert facts["postcode_check"].satisfied
    assert facts["birth_check"].failed and facts["birth_check"].status == "invalidated"
    assert permit(request("appointments.reschedule", steps=steps.facts(WRITE))).reason == (
        "identity_not_verified")
    await steps.verify(WRITE, ask=ask, read=read, operation_id="op_2")
    assert len(asked) == 1, "a failed verification is not asked again"
    assert [c for _, _, c in store.recorded] == ["asked", "asked", "matched", "mismatched"]


@pytest.mark.anyio
async def test_no_answer_or_no_record_leaves_a_verification_unsatisfied() -> None:
    steps, store = shell(POSTCODE)
    assert WRITE is not None

    async def declined(request: InputRequest) -> InputResponse:
        return InputResponse(action="decline")

    async def nothing(tool: str, arguments: dict[str, Any]) -> None:
        return None

    await steps.verify(WRITE, ask=declined, read=nothing, operation_id="op_1")
    assert steps.facts(WRITE)[0].status == "invalidated" and not steps.facts(WRITE)[0].failed
    await steps.verify(WRITE, ask=None, read=nothing, operation_id="op_2")
    assert steps.facts(WRITE)[0].status == "invalidated", "no one to ask: not verified"

    async def answered(request: InputRequest) -> InputResponse:
        return InputResponse(action="accept", content={"postcode_check.postcode": "x"})

    await steps.verify(WRITE, ask=answered, read=nothing, operation_id="op_3")
    assert steps.facts(WRITE)[0].status == "unobservable"
    assert [s for _, s, _ in store.recorded][-1] == "unobservable"


@pytest.mark.anyio
async def test_a_disclosure_counts_only_by_its_own_generations_playout() -> None:
    notice = RequiredStep(kind="disclosure", id="notice", text="Calls are recorded. Be sure.",
                          applies_to=SCOPE)
    steps, _ = shell(notice)
    await steps.speaking(WRITE, "g1")
    await steps.delivered("g1", heard_text="Calls are recorded. Be", complete=False)
    assert steps.facts(WRITE)[0].status == "invalidated"
    await steps.speaking(WRITE, "g2")
    await steps.delivered("g1", heard_text="Calls are recorded. Be sure.", complete=True)
    assert steps.facts(WRITE)[0].status == "in_progress", "the old generation is stale"
    await steps.delivered("g2", heard_text="Calls are recorded. Be sure. To",
                          complete=False)
    assert steps.facts(WRITE)[0].satisfied and not steps.due(WRITE)
    await steps.speaking(WRITE, "g3")
    assert steps.facts(WRITE)[0].satisfied, "a heard disclosure is not spoken again"
    blind, _ = shell(notice)
    await blind.speaking(WRITE, "g1")
    await blind.delivered("g1", heard_text="", complete=True, observable=False)
    assert blind.facts(WRITE)[0].status == "unobservable" and blind.due(WRITE)


def test_a_class_covers_business_writes_not_vocero_s_own_built_ins() -> None:
    """A caller who asks for a person is never held behind an identity check meant for the
    business systems' writes; a step that must guard a built-in names it."""
    handoff = ToolSpec(name="handoff.request", server="vocero", resolves_to="handoff.request",
                       action_class="reversible_write")
    by_class = RequiredStep(kind="disclosure", id="c", text="t",
                            applies_to=StepScope(classes=["reversible_write"]))
    by_name = RequiredStep(kind="disclosure", id="n", text="t",
                           applies_to=StepScope(tools=["handoff.request"]))
    profile = AgentProfile(id="p", version="1", match=ProfileMatch(tenant="acme"),
                           tools=[*SPECS, handoff], required_steps=[by_class])
    assert [s.id for s in applicable(profile, resolve(profile, "appointments.reschedule"))] \
        == ["c"]
    assert applicable(profile, resolve(profile, "handoff.request")) == []
    named = AgentProfile(id="p", version="1", match=ProfileMatch(tenant="acme"),
                         tools=[*SPECS, handoff], required_steps=[by_class, by_name])
    assert [s.id for s in applicable(named, resolve(named, "handoff.request"))] == ["n"]
