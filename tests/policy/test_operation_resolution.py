"""A way out of ``unknown`` at the store (docs/operators.md "Operations nobody could reconcile"):
an operator's resolution settles the operation in one transaction, finishes its outbox row so no
worker claims it again, audits the override and leaves a ``task`` follow-up to tell the caller.
A worker still holding the row cannot send it afterwards. SQLite and PostgreSQL."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import Principal
from vocero.policy.gate import Decision, ResolvedTool
from vocero.policy.operations import InvalidOperationTransition
from vocero.policy.records import OperationRecord
from vocero.policy.repository import ActionRepository, RevisionDraft
from vocero.policy.resolution import NotUnknownError, Resolutions
from vocero.store import AuditLog, Store
from vocero.store.models import FollowupRow, OutboxRow
from vocero.store.repositories import Conversations

pytestmark = pytest.mark.anyio

TOOL = ResolvedTool(name="ledger.transfer", server="ledger", tool="post_transfer",
                    action_class="irreversible", required_scopes=frozenset(),
                    requires_confirmation=False, idempotent=False, lookup_tool="",
                    timeout_ms=1000)
WHO = Principal(subject_ref="sub_r1", tenant_id="t1", scopes=[])


async def _unknown(repo: ActionRepository, session_id: str, reason: str) -> OperationRecord:
    """An operation sent once whose outcome nobody learned: ``unknown`` with ``reason``, its
    outbox row held by worker ``w1`` (not finished when ``reason`` is a transient one)."""
    await Conversations(repo.store).create_session(
        session_id=session_id, tenant_id="t1", subject_ref="sub_r1", profile_id="p",
        profile_version="1")
    opened = await repo.open_revision(RevisionDraft(
        session_id=session_id, turn_id="turn_1", tool=TOOL, arguments={"amount": "10.00 EUR"},
        target_resource="acct_1", object_version="", arguments_hash="h1",
        workflow_revision="p@1", summary="send 10.00 EUR to account 1",
        expires_at=repo.now() + timedelta(minutes=5)))
    authorized = await repo.outbox.authorize(
        session_id=session_id, proposal_id=opened.proposal_id, revision=opened.revision,
        operation_id=f"op_{session_id}", tool=TOOL, principal=WHO,
        decide=lambda _: Decision("allow"))
    assert authorized.operation is not None
    [claimed] = await repo.outbox.claim_due("w1", 10)
    await repo.outbox.transition(claimed.id, "in_flight", sent=True, holder="w1")
    final = reason in ("reconciliation_required", "reconciliation_failed")
    return await repo.outbox.transition(claimed.id, "unknown", reason=reason, holder="w1",
                                        done=final, release_after_s=None if final else 0.0)


@pytest.fixture
async def repo(db_url: str) -> ActionRepository:
    store = Store.open(db_url)
    yield ActionRepository(store, VirtualClock(start=time.time()))  # type: ignore[misc]
    await store.close()


async def test_a_resolution_settles_finishes_audits_and_asks_a_person_to_tell_the_caller(
    repo: ActionRepository,
) -> None:
    op = await _unknown(repo, "ses_res_1", "reconciliation_pending")
    resolutions = Resolutions(repo)
    assert [o.id for o in await resolutions.unresolved()] == [op.id]

    done = await resolutions.resolve(op.id, "committed", note="ledger shows the transfer",
                                     operator="olga")

    stored = await repo.get(op.id)
    assert stored is not None
    assert (stored.status, stored.reason_code, stored.attempts) == (
        "committed", "operator_resolved", 1)
    assert stored.receipt is not None
    assert (stored.receipt["source"], stored.receipt["operator"], stored.receipt["note"]) == (
        "operator", "olga", "ledger shows the transfer")
    assert await resolutions.unresolved() == []
    async with repo.read() as session:
        outbox = (await session.scalars(select(OutboxRow).where(
            OutboxRow.operation_id == op.id))).one()
        followup = await session.get(FollowupRow, done.followup_id)
    assert outbox.done
    # no worker can claim it again, whoever holds it and however long it waits
    assert await repo.outbox.claim_due("w2", 10) == []
    assert await repo.outbox.claim_due("w1", 10) == []
    # the worker that was reconciling it cannot send it now: nothing leaves, nothing is counted
    with pytest.raises(InvalidOperationTransition):
        await repo.outbox.transition(op.id, "in_flight", sent=True, holder="w1")
    again = await repo.get(op.id)
    assert again is not None and (again.status, again.attempts) == ("committed", 1)

    assert followup is not None
    assert (followup.channel, followup.status, followup.session_id, followup.tenant_id) == (
        "task", "task", "ses_res_1", "t1")
    assert "it went through" in followup.reason and op.id in followup.reason
    events = await AuditLog(repo.store).events(session_id="ses_res_1")
    [resolved] = [e for e in events if e.kind == "operation.resolved"]
    assert resolved.actor == "operator:olga"
    assert (resolved.data["outcome"], resolved.data["operator"], resolved.data["note"]) == (
        "committed", "olga", "ledger shows the transfer")
    assert resolved.data["previous_reason"] == "reconciliation_pending"
    assert resolved.data["followup_id"] == done.followup_id


async def test_failed_is_rejected_and_only_unknown_operations_resolve(
    repo: ActionRepository,
) -> None:
    op = await _unknown(repo, "ses_res_2", "reconciliation_required")
    resolutions = Resolutions(repo)
    done = await resolutions.resolve(op.id, "failed", note="no trace at the bank",
                                     operator="olga")
    assert (done.operation.status, done.operation.reason_code) == (
        "rejected", "operator_resolved")
    with pytest.raises(NotUnknownError) as twice:
        await resolutions.resolve(op.id, "committed", note="changed my mind", operator="olga")
    assert twice.value.status == "rejected"
    with pytest.raises(LookupError):
        await resolutions.resolve("op_nobody", "failed", note="x", operator="olga")
    async with repo.read() as session:
        tasks = (await session.scalars(select(FollowupRow).where(
            FollowupRow.session_id == "ses_res_2"))).all()
    assert [t.reason.count("did not go through") for t in tasks] == [1], "one task, once"
    assert tasks[0].due_at <= datetime.now(UTC) + timedelta(minutes=1)
