"""Handoffs as the console shows them (docs/operators.md "Handoffs"): every ``handoff.request``
operation, newest first, with its session's channel, the ``task`` follow-up it recorded (if
any), and what is still pending in that session (proposals the caller was asked about and never
answered, operations not settled). Read-only; scoped to the operator's tenants in the query."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import select

from vocero.contracts.builtins import HANDOFF_TOOL, VOCERO_SERVER
from vocero.store.engine import Store
from vocero.store.models import FollowupRow, OperationRow, ProposalRow, SessionRow
from vocero.store.scope import EVERY_TENANT, OperatorScope

UNSETTLED = ("authorized", "dispatch_pending", "in_flight", "unknown")
"""Operation statuses that are not an outcome yet."""
MAX_PENDING = 20


class PendingItem(msgspec.Struct, frozen=True, kw_only=True):
    kind: str
    """``proposal`` (asked, not answered) or ``operation`` (not settled)."""
    id: str
    tool: str
    status: str


class HandoffRecord(msgspec.Struct, frozen=True, kw_only=True):
    operation_id: str
    session_id: str
    tenant_id: str
    channel: str
    call_sid: str
    status: str
    """The operation's status (``committed`` once the handoff ran)."""
    outcome: str
    """What the handoff did (``transferred``, ``task_recorded``, ``NOT transferred``, ...)."""
    reason: str
    followup_id: str
    followup_status: str
    created_at: datetime
    pending: list[PendingItem] = []

    def public(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data


class HandoffQueries:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def handoffs(
        self, limit: int = 100, scope: OperatorScope = EVERY_TENANT
    ) -> list[HandoffRecord]:
        ops = scope.restrict(select(OperationRow), OperationRow.tenant_id)
        query = (
            ops.add_columns(SessionRow).join(SessionRow, SessionRow.id == OperationRow.session_id)
            .where(OperationRow.server == VOCERO_SERVER,
                   OperationRow.resolved_tool == HANDOFF_TOOL)
            .order_by(OperationRow.created_at.desc(), OperationRow.id.desc()).limit(limit)
        )
        async with self._store.read() as session:
            rows = (await session.execute(query)).all()
            ids = [op.id for op, _ in rows]
            followups = {
                f.operation_id: f for f in (await session.scalars(
                    select(FollowupRow).where(FollowupRow.operation_id.in_(ids)))).all()
            } if ids else {}
            found: list[HandoffRecord] = []
            for op, line in rows:
                followup = followups.get(op.id)
                content = (op.receipt or {}).get("content") or {}
                found.append(HandoffRecord(
                    operation_id=op.id, session_id=op.session_id, tenant_id=op.tenant_id,
                    channel=line.channel or "web", call_sid=line.call_sid or "",
                    status=op.status,
                    outcome=str(content.get("status") or "") if isinstance(content, dict)
                    else "",
                    reason=str((op.arguments or {}).get("reason") or ""),
                    followup_id=followup.id if followup is not None else "",
                    followup_status=followup.status if followup is not None else "",
                    created_at=op.created_at,
                    pending=await _pending(session, op.session_id, op.id),
                ))
        return found


async def _pending(session: Any, session_id: str, handoff_id: str) -> list[PendingItem]:
    proposals = (await session.scalars(
        select(ProposalRow).where(ProposalRow.session_id == session_id,
                                  ProposalRow.status == "open")
        .order_by(ProposalRow.created_at).limit(MAX_PENDING))).all()
    operations = (await session.scalars(
        select(OperationRow).where(OperationRow.session_id == session_id,
                                   OperationRow.status.in_(UNSETTLED),
                                   OperationRow.id != handoff_id)
        .order_by(OperationRow.created_at).limit(MAX_PENDING))).all()
    return [
        *(PendingItem(kind="proposal", id=p.id, tool=p.tool, status=p.status)
          for p in proposals),
        *(PendingItem(kind="operation", id=o.id, tool=o.tool, status=o.status)
          for o in operations),
    ]
