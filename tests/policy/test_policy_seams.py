"""The seams of one session's action path, without a store: what a run plan may execute, where
an operation can go, when an operation has settled, and how answers bind to the exact revision
the caller heard (:class:`~vocero.policy.answers.Confirmations` over scripted fakes)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from msgspec.structs import replace

from vocero.contracts.actions import ToolPlan, TurnRef
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import AgentProfile, Caller, Principal, ProfileMatch, ToolSpec
from vocero.policy.answers import Confirmations
from vocero.policy.confirmations import Question
from vocero.policy.delivery import DeliveryEvidence
from vocero.policy.evidence import Step
from vocero.policy.gate import resolve
from vocero.policy.operations import settled
from vocero.policy.records import OpenedRevision, OperationRecord, StoredRevision
from vocero.policy.repository import ActionRepository
from vocero.policy.runnables import Runnable, Runnables
from vocero.policy.session import SessionFacts
from vocero.policy.targets import Target

pytestmark = pytest.mark.anyio

SPECS = [
    ToolSpec(name="appointments.reschedule", server="appointments",
             resolves_to="reschedule_appointment", action_class="reversible_write",
             requires_confirmation=True, required_scopes=["appointments:write"]),
    ToolSpec(name="followups.record", server="vocero", resolves_to="followups.record",
             action_class="reversible_write", required_scopes=["followups:write"]),
]
PROFILE = AgentProfile(id="p", version="3", match=ProfileMatch(tenant="acme"), tools=SPECS)
CALLER = Caller(token="tok", subject="alice", tenant="acme", scopes=["appointments:write"])
RESCHEDULE = resolve(PROFILE, "appointments.reschedule")
ARGS = {"appointment_id": "APT-1", "new_date": "2026-12-04"}


# ------------------------------------------------------------------------------ runnables


def test_a_run_plan_runs_only_what_was_kept_for_its_exact_revision() -> None:
    assert RESCHEDULE is not None
    runnables = Runnables()
    kept = Runnable(tool=RESCHEDULE, arguments=ARGS, arguments_hash="h", proposal_id="prp_1",
                    revision=2)
    runnables.allow("call_1", kept)
    plan = ToolPlan(kind="run", tool="appointments.reschedule", tool_call_id="call_1",
                    proposal_id="prp_1", revision=2)
    assert runnables.matching(plan) is kept
    for forged in (replace(plan, revision=1), replace(plan, proposal_id="prp_2"),
                   replace(plan, tool_call_id="call_2")):
        assert runnables.matching(forged) is None
    runnables.discard("call_1")
    assert runnables.matching(plan) is None


# -------------------------------------------------------------------------------- targets


class Builtins:
    def __init__(self, handled: set[str]) -> None:
        self.handled = handled

    def handles(self, tool: str) -> bool:
        return tool in self.handled


def test_a_target_is_reachable_only_through_what_can_carry_its_tool() -> None:
    builtin = resolve(PROFILE, "followups.record")
    assert builtin is not None and RESCHEDULE is not None
    some = cast(Any, Builtins({"followups.record"}))
    assert Target(builtin, None, some).reachable
    assert not Target(builtin, None, cast(Any, Builtins(set()))).reachable
    assert not Target(builtin, cast(Any, object()), None).reachable
    assert Target(RESCHEDULE, cast(Any, object()), None).reachable
    assert not Target(RESCHEDULE, None, some).reachable


# ----------------------------------------------------------------------------- operations


def operation(status: str, reason: str = "") -> OperationRecord:
    now = datetime(2026, 12, 3, tzinfo=UTC)
    return OperationRecord(
        id="op_1", session_id="ses_1", proposal_id="prp_1", revision=1, tenant_id="acme",
        tool="appointments.reschedule", server="appointments",
        resolved_tool="reschedule_appointment", arguments=ARGS,
        principal=Principal.of(CALLER), idempotent=False, status=status,  # type: ignore[arg-type]
        attempts=0, receipt=None, reason_code=reason, created_at=now, updated_at=now)


@pytest.mark.parametrize(("status", "reason", "done"), [
    ("committed", "", True),
    ("rejected", "withdrawn", True),
    ("unknown", "reconciliation_required", True),
    ("unknown", "reconciliation_failed", True),
    ("unknown", "timeout", False),
    ("unknown", "interrupted", False),
    ("in_flight", "", False),
    ("dispatch_pending", "target_unavailable", False),
])
def test_an_operation_settles_when_the_worker_can_learn_nothing_more(
    status: str, reason: str, done: bool
) -> None:
    assert settled(operation(status, reason)) is done


# -------------------------------------------------------------------------- confirmations


class FakeRepo:
    """Records what the confirmations store; answers ``record_answer`` with the stored
    revision as a store would."""

    def __init__(self) -> None:
        self.answers: list[tuple[str, int, str, str]] = []
        self.closed: list[tuple[str, str]] = []
        self.audits: list[str] = []
        self.evidence: list[tuple[int, str]] = []

    async def record_evidence(self, session_id: str, step: Step, *, cause: str) -> None:
        self.evidence.append((step.revision, step.status))

    async def record_answer(
        self, *, session_id: str, proposal_id: str, revision: int, decision: str,
        binding: Callable[[StoredRevision], str], asked_turn_id: str, answer_turn_id: str,
        source: str,
    ) -> StoredRevision:
        stored = StoredRevision(
            session_id=session_id, proposal_status="open", current_revision=revision,
            revision=revision, canonical_arguments={**ARGS, "stored": True},
            arguments_hash="h", workflow_revision="w", expires_at=2e9,
            confirmation_status="", confirmation_hash="", confirmation_expires_at=0.0,
            evidence_status="",
        )
        self.answers.append((proposal_id, revision, decision, binding(stored)))
        return stored

    async def close_proposal(self, proposal_id: str, status: str) -> None:
        self.closed.append((proposal_id, status))

    async def audit(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        self.audits.append(kind)


class Counts:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        self.seen.append(labels.get("reason_code", name))


class Desk:
    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.repo = FakeRepo()
        self.counts = Counts()
        repo = cast(ActionRepository, self.repo)
        self.facts = SessionFacts(
            session_id="ses_1", caller=CALLER, profile=PROFILE, gateway=None, builtins=None,
            repo=repo, clock=self.clock, metrics=self.counts,
        )
        self.evidence = DeliveryEvidence(repo, "ses_1", self.facts.audit)
        self.runnables = Runnables()
        self.confirmations = Confirmations(self.facts, self.evidence, self.runnables)

    async def ask(self, revision: int, superseded: int | None = None) -> ToolPlan | None:
        self.confirmations.revised(OpenedRevision(proposal_id="prp_1", revision=revision,
                                                  created=True, superseded=superseded))
        question = Question(
            proposal_id="prp_1", revision=revision, tool="appointments.reschedule",
            summary="Reschedule APT-1 to Friday?", expires_at=self.clock.now() + 120,
            asked_turn_id="turn_1", parts=("APT-1", "Friday"),
        )
        return await self.confirmations.ask(question, f"gen_{revision}")

    async def answer(self, revision: int, source: str = "speech", restated: bool = False) -> Any:
        turn = TurnRef(session_id="ses_1", turn_id="turn_2")
        return await self.confirmations.submit(
            turn, "prp_1", revision, "confirm", source=source,  # type: ignore[arg-type]
            restated=restated,
        )


async def test_a_yes_binds_once_to_the_revision_whose_readback_was_heard() -> None:
    desk = Desk()
    asked = await desk.ask(1)
    assert asked is not None and (asked.kind, asked.revision) == ("confirm", 1)

    unheard = await desk.answer(1)  # by voice: the caller heard nothing of it yet
    assert (unheard.binds, unheard.reason_code) == (False, "different_question")
    early = await desk.answer(1, source="button")  # the read-back was not delivered yet
    assert (early.binds, early.reason_code) == (False, "required_delivery_missing")
    assert desk.confirmations.active_question() == asked

    await desk.evidence.delivered("gen_1", heard_text="APT-1 on Friday", complete=True)
    verdict = await desk.answer(1)
    assert verdict.binds and verdict.plan is not None
    runnable = desk.runnables.matching(verdict.plan)
    assert runnable is not None and runnable.arguments == {**ARGS, "stored": True}
    assert [a[:3] for a in desk.repo.answers] == [("prp_1", 1, "confirm")]
    assert desk.repo.answers[0][3] == desk.facts.binding("prp_1", 1, "h", 2e9)
    assert desk.confirmations.active_question() is None

    again = await desk.answer(1)
    assert (again.binds, again.reason_code) == (False, "confirmation_used")
    assert len(desk.repo.answers) == 1
    assert desk.counts.seen == [
        "different_question", "required_delivery_missing", "confirmation_used"]


async def test_a_completed_readback_whose_values_were_not_heard_is_not_delivered() -> None:
    """Synthesis failed part-way through the read-back (the rest went out as text only), so the
    generation "completed" with the caller having heard only its first words: a yes never binds
    to values the caller did not hear."""
    desk = Desk()
    await desk.ask(1)
    await desk.evidence.delivered("gen_1", heard_text="To confirm: reschedule", complete=True)
    verdict = await desk.answer(1)
    assert (verdict.binds, verdict.reason_code) == (False, "required_delivery_missing")
    assert desk.repo.answers == []


async def test_an_answer_to_a_superseded_revision_never_binds() -> None:
    desk = Desk()
    await desk.ask(1)
    await desk.evidence.delivered("gen_1", heard_text="APT-1 on Friday", complete=True)
    await desk.ask(2, superseded=1)
    stale = await desk.answer(1)
    assert (stale.binds, stale.reason_code) == (False, "proposal_changed")
    assert desk.repo.answers == []
    assert desk.confirmations.active_question() is not None  # revision 2 is still asked


async def test_an_executed_revision_is_not_confirmed_again() -> None:
    desk = Desk()
    await desk.ask(1)
    desk.confirmations.executed(("prp_1", 1))
    await desk.confirmations.drop("prp_1", 1)
    assert desk.repo.closed == [("prp_1", "abandoned")]
    assert desk.repo.audits[-1] == "confirmation.abandoned"
    late = await desk.answer(1)
    assert (late.binds, late.reason_code) == (False, "confirmation_used")


async def test_a_yes_naming_the_proposal_answers_it_after_something_else_was_heard() -> None:
    """Issue 42 (Gannet): after a catalog answer the caller asked for mid-question, "Yes,
    please move it" was "Just to be sure" and the question again; a bare yes still is (it may
    answer what was heard last), and naming it never stands in for hearing the read-back."""
    desk = Desk()
    await desk.ask(1)
    early = await desk.answer(1, restated=True)  # named, but the read-back was never heard
    assert (early.binds, early.reason_code) == (False, "required_delivery_missing")
    await desk.evidence.delivered("gen_1", heard_text="APT-1 on Friday", complete=True)
    await desk.evidence.delivered("gen_other", heard_text="Check in an hour before.", complete=True)
    bare = await desk.answer(1)
    assert (bare.binds, bare.reason_code) == (False, "different_question")
    named = await desk.answer(1, restated=True)
    assert named.binds and named.plan is not None
