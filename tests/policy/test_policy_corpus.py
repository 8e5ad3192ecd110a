"""The adversarial replay corpus (seed 001), against a real store and the real MCP gateway on the
recording fixture servers. Each case asserts the state (proposals, confirmations, evidence,
operations, audit) AND the effects (what the owning service received and committed)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest
from policy_support import (
    BrokenDefinitions,
    CommitThenTimeout,
    FixtureServers,
    Harness,
    Talk,
    caller,
    harness,
)
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from vocero.contracts.actions import ToolOutcome, ToolPlan
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import ToolSpec
from vocero.policy import CoordinatorSettings, ExecutorSettings
from vocero.store import AuditLog
from vocero.store.models import (
    ConfirmationRow,
    EvidenceStepRow,
    OperationRow,
    OutboxRow,
    ProposalRevisionRow,
)

pytestmark = pytest.mark.anyio

APT = "APT-1001"


async def listed(talk: Talk) -> None:
    """The caller's appointments are read first: the application learns their versions."""
    plan, _ = await talk.propose("appointments.list")
    assert plan.kind == "run"
    outcome = await talk.execute(plan)
    assert outcome.status == "committed"


async def ask_reschedule(talk: Talk, day: str = "friday", at: str = "3pm",
                         appointment: str = "apt 1001") -> tuple[ToolPlan, str]:
    plan, generation = await talk.propose("appointments.reschedule", appointment_id=appointment,
                                          new_date=day, new_time=at)
    assert plan.kind == "confirm", plan
    return plan, generation


async def confirmed_write(talk: Talk, plan: ToolPlan, generation: str) -> ToolPlan:
    await talk.heard(generation)
    verdict = await talk.answer("confirm")
    assert verdict.binds, verdict
    assert verdict.plan is not None, verdict
    return verdict.plan


async def operations(h: Harness, session_id: str) -> list[OperationRow]:
    async with h.store.read() as s:
        rows = (await s.scalars(select(OperationRow).where(
            OperationRow.session_id == session_id))).all()
        return list(rows)


async def writes(h: Harness, session_id: str) -> list[OperationRow]:
    return [op for op in await operations(h, session_id) if op.proposal_id]


async def audit_kinds(h: Harness, session_id: str) -> list[str]:
    return [e.kind for e in await AuditLog(h.store).events(session_id=session_id)]


def reschedules(h: Harness, subject_ref: str) -> list[dict[str, Any]]:
    return h.servers.calls("appointments", subject_ref, "reschedule_appointment")


# ------------------------------------------------------------------------------- the corpus


async def test_normal_confirmation(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        await listed(talk)
        plan, generation = await ask_reschedule(talk)
        clock_now = datetime.fromtimestamp(h.clock.now(), ZoneInfo("Europe/Madrid"))
        fields = plan.fields
        assert fields["appointment_id"] == APT
        assert fields["timezone"] == "Europe/Madrid"
        assert fields["new_time"] == "15:00"
        friday = datetime.fromisoformat(fields["new_date"]).date()
        assert friday.weekday() == 4
        assert friday > clock_now.date()
        assert f"{friday:%A}, {friday:%B} {friday.day}" in plan.summary  # no month/day doubt
        assert "3 PM" in plan.summary
        assert "Madrid" in plan.summary

        run = await confirmed_write(talk, plan, generation)
        outcome = await talk.execute(run)

        assert outcome.status == "committed"
        assert outcome.side_effect
        assert outcome.result is not None
        assert outcome.result["summary"].startswith("Done: your appointment APT-1001")
        sid = talk.coordinator.session_id
        [op] = await writes(h, sid)
        assert (op.status, op.attempts, op.proposal_id, op.revision) == (
            "committed", 1, plan.proposal_id, plan.revision)
        assert op.receipt is not None
        assert op.receipt["content"]["status"] == "rescheduled"
        assert talk.status_names()[-4:] == ["authorized", "dispatch_pending", "in_flight",
                                            "committed"]
        # effects: exactly the canonical arguments, once, under the operation's identity
        [call] = reschedules(h, who.subject_ref)
        assert call["arguments"] == {**fields, "expected_version": fields["expected_version"]}
        meta = call["meta"]
        assert meta["io.vocero/operation_id"] == op.id
        assert meta["io.vocero/proposal"] == {"proposal_id": plan.proposal_id, "revision": 1}
        assert meta["io.vocero/principal"]["tenant_id"] == "acme"
        assert set(h.servers.receipts("appointments", {op.id})) == {op.id}
        async with h.store.read() as s:
            confirmation = (await s.scalars(select(ConfirmationRow))).one()
            evidence = (await s.scalars(select(EvidenceStepRow))).one()
            outbox = (await s.scalars(select(OutboxRow))).one()
        assert (confirmation.status, confirmation.decision) == ("used", "confirm")
        assert (evidence.status, evidence.generation_id) == ("satisfied", generation)
        assert outbox.done
        kinds = await audit_kinds(h, sid)
        for kind in ("proposal.created", "evidence.updated", "confirmation.confirmed",
                     "operation.authorized", "operation.dispatch_pending",
                     "operation.in_flight", "operation.committed", "operation.read"):
            assert kind in kinds
        assert (await AuditLog(h.store).verify()).ok


async def test_ambiguous_acknowledgement_clarifies(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        await listed(talk)
        plan, generation = await ask_reschedule(talk)
        await talk.heard(generation)
        verdict = await talk.answer("uncertain")  # "I think so"
        assert (verdict.binds, verdict.reason_code) == (False, "confirmation_unclear")
        question = talk.coordinator.active_question()
        assert question is not None
        assert question.revision == plan.revision
        assert await writes(h, talk.coordinator.session_id) == []
        assert reschedules(h, who.subject_ref) == []
        # the clarification re-reads the question in a new generation; a clear yes then binds
        await talk.coordinator.readback_started(question, "gen_clarify")
        bound = await confirmed_write(talk, question, "gen_clarify")
        assert (await talk.execute(bound)).status == "committed"
        assert len(reschedules(h, who.subject_ref)) == 1


async def test_yes_while_no_question_is_active(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        assert talk.coordinator.active_question() is None
        verdict = await talk.coordinator.submit_confirmation(
            talk.next_turn(), "prp_made_up", 1, "confirm", source="speech")
        assert (verdict.binds, verdict.reason_code) == (False, "no_active_question")
        forged = ToolPlan(kind="run", tool="appointments.reschedule", tool_call_id="call_x",
                          proposal_id="prp_made_up", revision=1)
        outcome = await talk.execute(forged)
        assert (outcome.status, outcome.reason_code) == ("rejected", "not_authorized")
        assert await operations(h, talk.coordinator.session_id) == []
        assert h.servers.calls("appointments", who.subject_ref) == []


async def test_yes_to_a_different_question(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        await listed(talk)
        first, gen1 = await ask_reschedule(talk)
        await talk.heard(gen1)
        second, gen2 = await ask_reschedule(talk, appointment="APT-1002", day="saturday")
        await talk.heard(gen2)
        # the caller's "yes" meant the first question; it is no longer the one asked
        verdict = await talk.answer("confirm", source="button", question=first)
        assert (verdict.binds, verdict.reason_code) == (False, "no_active_question")
        verdict = await talk.answer("confirm")
        assert verdict.binds
        assert verdict.plan is not None
        assert verdict.plan.proposal_id == second.proposal_id
        assert (await talk.execute(verdict.plan)).status == "committed"
        [call] = reschedules(h, who.subject_ref)
        assert call["arguments"]["appointment_id"] == "APT-1002"
        [op] = await writes(h, talk.coordinator.session_id)
        assert op.proposal_id == second.proposal_id


async def test_date_changed_after_confirmation(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        await listed(talk)
        plan1, gen1 = await ask_reschedule(talk, day="friday")
        run1 = await confirmed_write(talk, plan1, gen1)
        # before it runs, the caller changes the date: a new revision of the same proposal
        plan2, gen2 = await ask_reschedule(talk, day="saturday")
        assert (plan2.proposal_id, plan2.revision) == (plan1.proposal_id, 2)
        outcome = await talk.execute(run1)
        assert (outcome.status, outcome.reason_code) == ("rejected", "proposal_changed")
        assert reschedules(h, who.subject_ref) == []
        assert await writes(h, talk.coordinator.session_id) == []
        async with h.store.read() as s:
            rev1 = await s.get(ProposalRevisionRow, (plan1.proposal_id, 1))
            confirmation = (await s.scalars(select(ConfirmationRow))).one()
        assert rev1 is not None
        assert rev1.invalidated_at is not None
        assert confirmation.status == "invalidated"
        # the new revision needs (and gets) its own confirmation
        run2 = await confirmed_write(talk, plan2, gen2)
        assert (await talk.execute(run2)).status == "committed"
        [call] = reschedules(h, who.subject_ref)
        assert call["arguments"]["new_date"] == plan2.fields["new_date"]
        assert call["meta"]["io.vocero/proposal"]["revision"] == 2


async def test_late_confirmation_of_an_old_revision(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        await listed(talk)
        plan1, gen1 = await ask_reschedule(talk, day="friday")
        await talk.heard(gen1)
        _, gen2 = await ask_reschedule(talk, day="monday")
        await talk.heard(gen2)
        verdict = await talk.answer("confirm", source="button", question=plan1)
        assert (verdict.binds, verdict.reason_code) == (False, "proposal_changed")
        assert talk.coordinator.active_question() is not None  # rev 2 is still asked
        assert await writes(h, talk.coordinator.session_id) == []
        assert reschedules(h, who.subject_ref) == []
        kinds = await audit_kinds(h, talk.coordinator.session_id)
        assert "confirmation.not_bound" in kinds
        assert "proposal.revised" in kinds


async def test_interrupted_disclosure(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        await listed(talk)
        _, generation = await ask_reschedule(talk)
        await talk.heard(generation, delivered=False)  # the caller barged in on the read-back
        verdict = await talk.answer("confirm")
        assert (verdict.binds, verdict.reason_code) == (False, "required_delivery_missing")
        assert reschedules(h, who.subject_ref) == []
        question = talk.coordinator.active_question()
        assert question is not None
        await talk.coordinator.readback_started(question, "gen_again")
        bound = await confirmed_write(talk, question, "gen_again")
        assert (await talk.execute(bound)).status == "committed"
        assert len(reschedules(h, who.subject_ref)) == 1


async def test_read_back_to_a_client_that_cannot_report_playout_is_unobservable(
    db_url: str, servers: FixtureServers
) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        await listed(talk)
        _, generation = await ask_reschedule(talk)
        await talk.coordinator.record_delivery(
            generation, heard_text="", complete=True, observable=False
        )
        verdict = await talk.answer("confirm")
        assert (verdict.binds, verdict.reason_code) == (False, "required_delivery_missing")
        async with h.store.read() as s:
            evidence = (await s.scalars(select(EvidenceStepRow))).one()
        assert evidence.status == "unobservable"
        assert reschedules(h, who.subject_ref) == []


async def test_stale_completion_of_a_canceled_generation(
    db_url: str, servers: FixtureServers
) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        await listed(talk)
        _, generation = await ask_reschedule(talk)
        await talk.heard(generation, delivered=False)
        question = talk.coordinator.active_question()
        assert question is not None
        await talk.coordinator.readback_started(question, "gen_second")
        await talk.heard(generation, delivered=True)  # late completion of the canceled one
        verdict = await talk.answer("confirm")
        assert (verdict.binds, verdict.reason_code) == (False, "required_delivery_missing")
        async with h.store.read() as s:
            evidence = (await s.scalars(select(EvidenceStepRow))).one()
        assert (evidence.status, evidence.generation_id) == ("in_progress", "gen_second")
        assert "evidence.stale_delivery_ignored" in await audit_kinds(
            h, talk.coordinator.session_id)
        assert reschedules(h, who.subject_ref) == []


async def test_expired_authorization(db_url: str, servers: FixtureServers) -> None:
    clock = VirtualClock(start=datetime.now().timestamp())
    settings = CoordinatorSettings(confirmation_ttl_s=30)
    async with harness(db_url, servers, clock=clock, settings=settings) as h:
        talk, who = await h.talk()
        await listed(talk)
        # a "yes" after the question expired binds nothing and drops the question
        plan, generation = await ask_reschedule(talk)
        await talk.heard(generation)
        clock.advance(31)
        verdict = await talk.answer("confirm", question=plan)
        assert (verdict.binds, verdict.reason_code) == (False, "authorization_expired")
        assert verdict.plan is not None
        assert verdict.plan.kind == "deny"
        assert talk.coordinator.active_question() is None
        # confirmed in time, executed too late: the final gate refuses
        plan2, gen2 = await ask_reschedule(talk, day="saturday")
        run = await confirmed_write(talk, plan2, gen2)
        clock.advance(31)
        outcome = await talk.execute(run)
        assert (outcome.status, outcome.reason_code) == ("rejected", "authorization_expired")
        assert reschedules(h, who.subject_ref) == []
        assert await writes(h, talk.coordinator.session_id) == []


async def test_authorized_operation_expires_before_dispatch(
    db_url: str, servers: FixtureServers
) -> None:
    """The worker was down longer than an authorization lives: nothing is sent."""
    clock = VirtualClock(start=datetime.now().timestamp())
    executor = ExecutorSettings(authorization_ttl_s=60, poll_interval_s=0.1)
    async with harness(db_url, servers, clock=clock, executor=executor, run_worker=False) as h:
        talk, who = await h.talk()
        await listed(talk)
        plan, generation = await ask_reschedule(talk)
        run = await confirmed_write(talk, plan, generation)
        talk.coordinator.execution.settle_wait_s = 0.2
        outcomes: list[ToolOutcome] = []

        async def execute() -> None:
            outcomes.append(await talk.execute(run))

        async with anyio.create_task_group() as tg:
            tg.start_soon(execute)
            with anyio.fail_after(10):
                await clock.waited_on()  # the coordinator waits for a receipt...
            clock.advance(0.2)  # ...that cannot come: no worker runs
        [outcome] = outcomes
        assert outcome.status == "authorized"
        clock.advance(61)
        [op] = await writes(h, talk.coordinator.session_id)
        settled_now = anyio.Event()
        unsubscribe = h.plane.executor.subscribe(
            op.id, lambda seen: settled_now.set() if seen.status == "rejected" else None)
        async with anyio.create_task_group() as tg:
            await tg.start(h.plane.run)
            with anyio.fail_after(10):
                await settled_now.wait()
            tg.cancel_scope.cancel()
        unsubscribe()
        [op] = await writes(h, talk.coordinator.session_id)
        assert (op.status, op.reason_code, op.attempts) == (
            "rejected", "authorization_expired", 0)
        assert reschedules(h, who.subject_ref) == []


ALIAS = ToolSpec(name="appointments.update", server="appointments",
                 resolves_to="cancel_appointment", action_class="reversible_write",
                 requires_confirmation=False, required_scopes=["appointments:write"])


async def test_alias_resolving_to_a_different_effect(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers, ALIAS) as h:
        # the alias claims a harmless write; the gate checks what it resolves to: a cancel
        alice, who = await h.talk(caller(scopes=["appointments:read", "appointments:write"]))
        plan, _ = await alice.propose("appointments.update", appointment_id=APT,
                                      expected_version=1)
        assert (plan.kind, plan.reason_code) == ("deny", "scope_missing")
        bob, bob_caller = await h.talk()
        plan, _ = await bob.propose("appointments.update", appointment_id=APT,
                                    expected_version=1)
        assert plan.kind == "confirm"  # irreversible: confirmation required whatever the alias
        assert plan.summary.startswith("To confirm: cancel appointment APT-1001")
        for subject in (who.subject_ref, bob_caller.subject_ref):
            assert h.servers.calls("appointments", subject) == []


async def test_prohibited_tool(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        plan, _ = await talk.propose("account.close", account_id="ACC-1")
        assert (plan.kind, plan.reason_code) == ("deny", "prohibited")
        assert plan.summary == "I'm not able to do that over the phone."
        assert h.servers.calls("admin", who.subject_ref) == []
        events = await AuditLog(h.store).events(session_id=talk.coordinator.session_id)
        denied = [e.data for e in events if e.kind == "action.denied"]
        assert denied
        assert denied[0]["reason_code"] == "prohibited"
        assert denied[0]["resolved_tool"] == "admin/delete_account"


async def test_scope_missing(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk(caller(scopes=["orders:read"]))
        plan, _ = await talk.propose("appointments.reschedule", appointment_id=APT,
                                     new_date="friday", new_time="10:00", expected_version=1)
        assert (plan.kind, plan.reason_code) == ("deny", "scope_missing")
        assert h.servers.calls("appointments", who.subject_ref) == []


async def test_cross_tenant_target(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        # the model names another tenant in the arguments: refused before anything is sent
        talk, who = await h.talk()
        plan, _ = await talk.propose("appointments.reschedule", appointment_id=APT,
                                     new_date="friday", new_time="10:00", expected_version=1,
                                     tenant_id="globex")
        assert (plan.kind, plan.reason_code) == ("deny", "cross_tenant_target")
        assert h.servers.calls("appointments", who.subject_ref) == []
        # a caller of another tenant reaching for an acme appointment: the owning service,
        # told the real principal, refuses it; nothing is committed
        other, globex = await h.talk(caller(tenant="globex"))
        plan, generation = await other.propose("appointments.reschedule", appointment_id=APT,
                                               new_date="friday", new_time="10:00",
                                               expected_version=1)
        run = await confirmed_write(other, plan, generation)
        outcome = await other.execute(run)
        assert (outcome.status, outcome.reason_code) == ("rejected", "not_found")
        assert not outcome.side_effect
        [call] = reschedules(h, globex.subject_ref)
        assert call["meta"]["io.vocero/principal"]["tenant_id"] == "globex"
        [op] = await writes(h, other.coordinator.session_id)
        assert h.servers.receipts("appointments", {op.id}) == {}


async def test_duplicate_confirmation_and_duplicate_delivery(
    db_url: str, servers: FixtureServers
) -> None:
    async with harness(db_url, servers) as h:
        talk, who = await h.talk()
        await listed(talk)
        plan, generation = await ask_reschedule(talk)
        run = await confirmed_write(talk, plan, generation)
        again = await talk.answer("confirm", source="button", question=plan)
        assert (again.binds, again.reason_code) == (False, "confirmation_used")
        outcomes = []

        async def deliver() -> None:
            outcomes.append(await talk.execute(run))

        async with anyio.create_task_group() as tg:
            tg.start_soon(deliver)
            tg.start_soon(deliver)
        assert [o.status for o in outcomes] == ["committed", "committed"]
        assert outcomes[0].result is not None
        assert outcomes[1].result is not None
        assert outcomes[0].result["operation_id"] == outcomes[1].result["operation_id"]
        [op] = await writes(h, talk.coordinator.session_id)
        assert len(reschedules(h, who.subject_ref)) == 1
        assert set(h.servers.receipts("appointments", {op.id})) == {op.id}


async def test_timeout_after_the_server_committed(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        sid = "ses_timeout_after_commit"
        gateway = CommitThenTimeout(h.gateway(sid), "appointments.reschedule")
        talk, who = await h.talk(gateway=gateway, session_id=sid)
        await listed(talk)
        plan, generation = await ask_reschedule(talk)
        run = await confirmed_write(talk, plan, generation)
        outcome = await talk.execute(run)
        assert outcome.status == "committed"
        assert talk.status_names()[-3:] == ["in_flight", "unknown", "committed"]
        [op] = await writes(h, sid)
        assert (op.status, op.attempts, op.reason_code) == ("committed", 1, "reconciled")
        assert op.receipt is not None
        assert op.receipt["source"] == "lookup"
        assert gateway.lookups == 1
        # reconciled by lookup, never re-sent: one call, one effect
        assert len(reschedules(h, who.subject_ref)) == 1
        lookups = h.servers.calls("appointments", who.subject_ref, "lookup_operation")
        assert [c["arguments"] for c in lookups] == [{"operation_id": op.id}]
        assert set(h.servers.receipts("appointments", {op.id})) == {op.id}


NO_LOOKUP = ToolSpec(name="appointments.move", server="appointments",
                     resolves_to="reschedule_appointment", action_class="reversible_write",
                     requires_confirmation=True, required_scopes=["appointments:write"])


async def test_timeout_without_reconciliation_stays_unknown(
    db_url: str, servers: FixtureServers
) -> None:
    """No lookup tool and not idempotent: the write is never re-sent blindly."""
    async with harness(db_url, servers, NO_LOOKUP) as h:
        sid = "ses_timeout_no_lookup"
        gateway = CommitThenTimeout(h.gateway(sid), "appointments.move")
        talk, who = await h.talk(gateway=gateway, session_id=sid)
        await listed(talk)
        plan, generation = await talk.propose("appointments.move", appointment_id=APT,
                                              new_date="tuesday", new_time="09:30")
        run = await confirmed_write(talk, plan, generation)
        outcome = await talk.execute(run)
        assert (outcome.status, outcome.reason_code) == ("unknown", "reconciliation_required")
        assert outcome.result is not None
        assert outcome.result["summary"].startswith("I have requested")
        assert len(reschedules(h, who.subject_ref)) == 1
        assert gateway.lookups == 0


async def test_unavailable_authorization_data(db_url: str, servers: FixtureServers) -> None:
    async with harness(db_url, servers) as h:
        # no gateway: MCP tools cannot be checked, so they are denied
        talk, who = await h.talk(gateway=None)
        plan, _ = await talk.propose("appointments.list")
        assert (plan.kind, plan.reason_code) == ("deny", "authorization_unavailable")
        # the tool definitions cannot be read
        sid = "ses_broken_definitions"
        broken, who2 = await h.talk(gateway=BrokenDefinitions(h.gateway(sid)), session_id=sid)
        plan, _ = await broken.propose("appointments.reschedule", appointment_id=APT,
                                       new_date="friday", new_time="10:00", expected_version=1)
        assert (plan.kind, plan.reason_code) == ("deny", "authorization_unavailable")
        # the store fails at the final gate: nothing is authorized, nothing is sent
        third, who3 = await h.talk()
        await listed(third)
        plan, generation = await ask_reschedule(third)
        run = await confirmed_write(third, plan, generation)

        async def unavailable(**_: object) -> None:
            raise OperationalError("SELECT", {}, Exception("database is locked"))

        third.coordinator.repo.outbox.authorize = unavailable  # type: ignore[method-assign]
        outcome = await third.execute(run)
        assert (outcome.status, outcome.reason_code) == ("rejected", "authorization_unavailable")
        for subject in (who.subject_ref, who2.subject_ref, who3.subject_ref):
            assert reschedules(h, subject) == []
