"""Row-level helpers of the action repository: finding, invalidating and moving rows inside
an open write transaction, and turning rows into records. Nothing here commits."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.contracts.domain import Principal
from vocero.contracts.events import ToolStatus
from vocero.policy import operations
from vocero.policy.gate import ResolvedTool, digest
from vocero.policy.records import OperationRecord, StoredRevision
from vocero.store.audit_tx import append_in
from vocero.store.models import (
    ConfirmationRow,
    EvidenceStepRow,
    OperationRow,
    ProposalRevisionRow,
    ProposalRow,
)

ACTOR = "vocero.policy"



def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def evidence_id(proposal_id: str, revision: int) -> str:
    return f"evd_{proposal_id}_{revision}"


def step_evidence_id(session_id: str, step: str) -> str:
    """The row of a profile's required step (ADR-0030): one per session and step id."""
    return "evs_" + digest({"session_id": session_id, "step": step})[:32]


async def open_proposal(
    session: AsyncSession, session_id: str, tool: ResolvedTool, target_resource: str
) -> tuple[ProposalRow, ProposalRevisionRow] | None:
    query = select(ProposalRow).where(
        ProposalRow.session_id == session_id, ProposalRow.status == "open",
        ProposalRow.server == tool.server, ProposalRow.resolved_tool == tool.tool,
    ).order_by(ProposalRow.created_at.desc()).with_for_update()
    for proposal in (await session.scalars(query)).all():
        current = await session.get(ProposalRevisionRow, (proposal.id, proposal.current_revision))
        if current is not None and current.target_resource == target_resource:
            return proposal, current
    return None


async def invalidate(session: AsyncSession, revision: ProposalRevisionRow, now: datetime) -> None:
    revision.invalidated_at = now
    pending = select(ConfirmationRow).where(
        ConfirmationRow.proposal_id == revision.proposal_id,
        ConfirmationRow.revision == revision.revision, ConfirmationRow.status == "pending")
    for confirmation in (await session.scalars(pending)).all():
        confirmation.status = "invalidated"
    evidence = await session.get(EvidenceStepRow,
                                 evidence_id(revision.proposal_id, revision.revision))
    if evidence is not None:
        evidence.status = "invalidated"
        evidence.updated_at = now


async def use_confirmation(
    session: AsyncSession, proposal_id: str, revision: int, now: datetime
) -> None:
    pending = select(ConfirmationRow).where(
        ConfirmationRow.proposal_id == proposal_id, ConfirmationRow.revision == revision,
        ConfirmationRow.status == "pending")
    for confirmation in (await session.scalars(pending)).all():
        confirmation.status = "used"
        confirmation.used_at = now


async def stored_revision(
    session: AsyncSession, proposal_id: str, revision: int
) -> StoredRevision | None:
    proposal = await session.get(ProposalRow, proposal_id)
    row = await session.get(ProposalRevisionRow, (proposal_id, revision))
    if proposal is None or row is None:
        return None
    confirmations: Sequence[ConfirmationRow] = (await session.scalars(
        select(ConfirmationRow).where(
            ConfirmationRow.proposal_id == proposal_id, ConfirmationRow.revision == revision,
            ConfirmationRow.decision == "confirm",
        ).order_by(ConfirmationRow.created_at.desc()))).all()
    confirmation = confirmations[0] if confirmations else None
    evidence = await session.get(EvidenceStepRow, evidence_id(proposal_id, revision))
    steps = (await session.scalars(select(EvidenceStepRow).where(
        EvidenceStepRow.session_id == proposal.session_id,
        EvidenceStepRow.proposal_id.is_(None)))).all()
    return StoredRevision(
        session_id=proposal.session_id, proposal_status=proposal.status,
        current_revision=proposal.current_revision, revision=revision,
        canonical_arguments=dict(row.canonical_arguments), arguments_hash=row.arguments_hash,
        workflow_revision=row.workflow_revision,
        expires_at=row.expires_at.timestamp() if row.expires_at else 0.0,
        confirmation_status=confirmation.status if confirmation else "",
        confirmation_hash=confirmation.binding_hash if confirmation else "",
        confirmation_expires_at=confirmation.expires_at.timestamp() if confirmation else 0.0,
        evidence_status=evidence.status if evidence else "missing",
        steps={row.step: (row.status, row.policy_version) for row in steps},
    )


async def move(
    session: AsyncSession, op: OperationRow, status: ToolStatus, *, now: datetime, reason: str
) -> None:
    previous = op.status
    operations.check(previous, status)
    op.status = status
    op.reason_code = reason
    op.updated_at = now
    await session.flush()
    await append_in(session, f"operation.{status}", {
        "operation_id": op.id, "proposal_id": op.proposal_id, "revision": op.revision,
        "tool": op.tool, "previous": previous, "status": status, "reason_code": reason,
        "attempts": op.attempts, "receipt_hash": receipt_hash(op.receipt),
    }, at=now, session_id=op.session_id, actor=ACTOR)


def receipt_hash(receipt: dict[str, Any] | None) -> str:
    return "" if receipt is None else digest(receipt)


def operation_record(row: OperationRow) -> OperationRecord:
    return OperationRecord(
        id=row.id, session_id=row.session_id, proposal_id=row.proposal_id,
        revision=row.revision, tenant_id=row.tenant_id, tool=row.tool, server=row.server,
        resolved_tool=row.resolved_tool, arguments=dict(row.arguments),
        principal=msgspec.convert(row.principal, Principal), idempotent=row.idempotent,
        status=row.status, attempts=row.attempts,
        receipt=dict(row.receipt) if row.receipt is not None else None,
        reason_code=row.reason_code, created_at=row.created_at, updated_at=row.updated_at,
    )
