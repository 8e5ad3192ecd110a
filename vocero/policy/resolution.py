"""A way out of ``unknown``: an operator records what became of an operation that no lookup could
reconcile (docs/operators.md "Operations nobody could reconcile").

The seed's rule: an unknown result is reconciled against the owning service or routed to an
operator; it is never re-sent blindly. :meth:`Resolutions.resolve` is the operator's half, one
short transaction: the operation moves ``unknown -> committed`` or ``unknown -> rejected``
(outcome ``failed``, reason ``operator_resolved``), its outbox row is finished so no worker
claims it again, the override is audited (``operation.resolved``: operator, outcome, note), and
a ``task`` follow-up asks a person to tell the caller, who last heard that the request was made
but not whether it went through. Nothing is sent to the owning service: the operator asserts a
fact they checked elsewhere; a worker that was still reconciling finds the operation settled
when it tries to move it and stops (the lifecycle table has no way out of ``committed`` or
``rejected``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

import msgspec
from sqlalchemy import select

from vocero.policy.outbox import Transactions
from vocero.policy.records import OperationRecord
from vocero.policy.rows import evidence_id, move, new_id, operation_record
from vocero.store.audit_tx import append_in
from vocero.store.models import (
    EvidenceStepRow,
    FollowupRow,
    OperationRow,
    OutboxRow,
    ProposalRevisionRow,
    SessionRow,
)
from vocero.store.scope import EVERY_TENANT, OperatorScope

Outcome = Literal["committed", "failed"]
RESOLVED: Final = "operator_resolved"
"""The ``reason_code`` of an operation an operator resolved."""
STATUS_OF: Final[dict[str, Literal["committed", "rejected"]]] = {
    "committed": "committed", "failed": "rejected",
}


class NotUnknownError(Exception):
    """Only an ``unknown`` operation can be resolved; ``status`` is what it is now."""

    def __init__(self, status: str) -> None:
        super().__init__(f"the operation is {status}, not unknown")
        self.status = status


class Resolved(msgspec.Struct, frozen=True, kw_only=True):
    operation: OperationRecord
    followup_id: str
    """The ``task`` follow-up that asks a person to tell the caller."""


class Resolutions:
    """Operations waiting for an operator, and the operator's resolution of one."""

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    async def unresolved(
        self, limit: int = 100, scope: OperatorScope = EVERY_TENANT
    ) -> list[OperationRecord]:
        """``unknown`` operations of ``scope``'s tenants, oldest first (the longest-waiting
        caller first)."""
        query = scope.restrict(select(OperationRow), OperationRow.tenant_id)
        query = (query.where(OperationRow.status == "unknown")
                 .order_by(OperationRow.created_at, OperationRow.id).limit(limit))
        async with self._tx.read() as session:
            return [operation_record(r) for r in (await session.scalars(query)).all()]

    async def readback(self, op: OperationRecord) -> dict[str, str] | None:
        """What the caller was read back before confirming a write (its wording, and the
        evidence status of its delivery: ``satisfied`` once played in full); ``None`` for a
        read."""
        if op.proposal_id is None or op.revision is None:
            return None
        async with self._tx.read() as session:
            row = await session.get(ProposalRevisionRow, (op.proposal_id, op.revision))
            evidence = await session.get(EvidenceStepRow, evidence_id(op.proposal_id, op.revision))
        return {"summary": row.summary if row is not None else "",
                "evidence": evidence.status if evidence is not None else "missing"}

    async def resolve(
        self, operation_id: str, outcome: Outcome, *, note: str, operator: str
    ) -> Resolved:
        """Raises :class:`LookupError` for no such operation, :class:`NotUnknownError` when it
        is not ``unknown`` (then nothing changes)."""
        now = self._tx.now()
        async with self._tx.write() as session:
            op = await session.get(OperationRow, operation_id, with_for_update=True)
            if op is None:
                raise LookupError(f"no operation {operation_id!r}")
            if op.status != "unknown":
                raise NotUnknownError(op.status)
            previous_reason = op.reason_code
            op.receipt = {"source": "operator", "outcome": outcome, "operator": operator,
                          "note": note, "previous_receipt": op.receipt}
            await move(session, op, STATUS_OF[outcome], now=now, reason=RESOLVED)
            outbox = (await session.scalars(select(OutboxRow).where(
                OutboxRow.operation_id == operation_id).with_for_update())).first()
            if outbox is not None:
                outbox.done = True
            followup = await _tell_the_caller(session, op, outcome, note, now)
            await append_in(session, "operation.resolved", {
                "operation_id": op.id, "proposal_id": op.proposal_id, "revision": op.revision,
                "tool": op.tool, "outcome": outcome, "status": op.status, "operator": operator,
                "note": note, "previous_reason": previous_reason, "followup_id": followup.id,
            }, at=now, session_id=op.session_id, actor=f"operator:{operator}")
            return Resolved(operation=operation_record(op), followup_id=followup.id)


def task_reason(tool: str, operation_id: str, outcome: Outcome, note: str) -> str:
    """What the person who calls the caller back reads: what was asked, what became of it."""
    result = "it went through" if outcome == "committed" else "it did not go through"
    return (f"Tell the caller what became of their request ({tool}, operation {operation_id}): "
            f"{result}. They were told it was requested but not whether it was done. "
            f"Operator's note: {note}")


async def _tell_the_caller(
    session: Any, op: OperationRow, outcome: Outcome, note: str, now: datetime
) -> FollowupRow:
    """A ``task`` follow-up for a person, due now, in the caller's time zone where the session
    knows it; keyed by the resolution so it is written once."""
    owner = await session.get(SessionRow, op.session_id)
    effective: dict[str, Any] = dict(owner.effective or {}) if owner is not None else {}
    row = FollowupRow(
        id=new_id("fup"), session_id=op.session_id, tenant_id=op.tenant_id,
        subject_ref=str((op.principal or {}).get("subject_ref", "")),
        profile_id=owner.profile_id if owner is not None else "",
        profile_version=owner.profile_version if owner is not None else "",
        when_text="as soon as possible", due_at=now, promised_at=now,
        timezone=str(effective.get("timezone") or "UTC"), channel="task",
        reason=task_reason(op.tool, op.id, outcome, note), status="task", attempts=0,
        outcome_reason="", attempt_operation_id=None, approved_by="",
        operation_id=f"res_{op.id}"[:64], created_at=now, updated_at=now,
    )
    session.add(row)
    await session.flush()
    await append_in(session, "followup.recorded", {
        "followup_id": row.id, "operation_id": row.operation_id, "status": row.status,
        "channel": row.channel, "due_at": row.due_at.isoformat(), "timezone": row.timezone,
        "cause": "operation.resolved",
    }, at=now, session_id=op.session_id, actor="vocero.policy")
    return row
