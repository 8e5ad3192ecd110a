"""Operations that have an effect, and the outbox rows that carry them to the owning service.

Authorization writes the operation, its outbox row, the used confirmation and the audit event in
one transaction (``docs/adr/0010-confirmation-and-idempotency.md``), so one confirmed revision
has at most one operation. Several processes may share the outbox
(``docs/adr/0006-durable-state-and-leases.md``). Each outbox row is held by one process under a
lease (``claimed_by``, ``lease_expires_at``, renewed by the node's heartbeat, see
:mod:`vocero.store.leases`): the authorizing process holds it from the start, so the session
that asked for it hears every status; a row whose holder's lease ran out is claimed by whichever
process gets there first (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; on SQLite the claim is one
``BEGIN IMMEDIATE`` transaction, so claims of all processes are serialised). A claimed operation
found ``in_flight`` was interrupted mid-call: it becomes ``unknown`` and is reconciled by lookup
before anything is sent again. Every change the worker makes is fenced by its hold.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Any, Protocol

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from vocero.contracts.domain import Principal
from vocero.contracts.events import ToolStatus
from vocero.contracts.ports import Clock
from vocero.policy import operations
from vocero.policy.gate import Decision, ResolvedTool
from vocero.policy.records import Authorization, OperationRecord, StoredRevision
from vocero.policy.rows import ACTOR, move, operation_record, stored_revision, use_confirmation
from vocero.store.audit_tx import append_in
from vocero.store.leases import LeaseLostError, lease_time
from vocero.store.leases import lease_clock as lease_clock_of
from vocero.store.models import OperationRow, OutboxRow, ProposalRow


class Transactions(Protocol):
    """The shielded short transactions of the action path (:class:`ActionRepository`)."""

    def now(self) -> datetime: ...

    def write(self) -> AbstractAsyncContextManager[AsyncSession]: ...

    def read(self) -> AbstractAsyncContextManager[AsyncSession]: ...


class Outbox:
    """Writes operations with an effect and their outbox rows, and moves them: authorize, claim
    under a lease, transition fenced by the hold, withdraw one not yet sent."""

    def __init__(
        self, tx: Transactions, *, owner: str = "", lease_ttl_s: float = 15.0,
        lease_clock: Clock | None = None,
    ) -> None:
        self._tx = tx
        self.owner = owner
        """The node id of this process (its heartbeat renews what it holds); empty: the worker
        holds each claim for ``lease_ttl_s`` from the moment it takes it, unrenewed."""
        self.lease = timedelta(seconds=lease_ttl_s)
        self.lease_clock = lease_clock_of(lease_clock)
        """Wall time for holds, whatever the repository's clock says (a virtual or ``--now``
        clock)."""

    def lease_now(self) -> datetime:
        return lease_time(self.lease_clock)

    def new_row(self, operation_id: str, now: datetime) -> OutboxRow:
        """The outbox row of a newly authorized operation, held by this process (when it has a
        node id) so that its own worker dispatches it and its session hears every status."""
        return OutboxRow(operation_id=operation_id, available_at=now, done=False,
                         claimed_by=self.owner or None, claimed_at=None,
                         lease_expires_at=self.lease_now() + self.lease if self.owner else None)

    # ---------------------------------------------------------------------- authorization

    async def authorize(
        self,
        *,
        session_id: str,
        proposal_id: str,
        revision: int,
        operation_id: str,
        tool: ResolvedTool,
        principal: Principal,
        decide: Callable[[StoredRevision], Decision],
    ) -> Authorization:
        """The final gate over stored state and, when it allows, the operation and its outbox
        row, the used confirmation and the audit event, all in one transaction. A second call
        for the same revision returns the existing operation (one effect)."""
        async with self._tx.write() as session:
            return await self._authorize(session, session_id, proposal_id, revision,
                                         operation_id, tool, principal, decide)

    async def _authorize(
        self, session: AsyncSession, session_id: str, proposal_id: str, revision: int,
        operation_id: str, tool: ResolvedTool, principal: Principal,
        decide: Callable[[StoredRevision], Decision],
    ) -> Authorization:
        now = self._tx.now()
        # The proposal row is the lock two concurrent authorizations of it queue on (SQLite's
        # BEGIN IMMEDIATE already serialises them; PostgreSQL needs the row lock, or both find
        # no operation and the second insert fails on the unique revision).
        await session.get(ProposalRow, proposal_id, with_for_update=True)
        existing = (await session.scalars(select(OperationRow).where(
            OperationRow.proposal_id == proposal_id, OperationRow.revision == revision,
        ))).first()
        if existing is not None:
            return Authorization(operation=operation_record(existing), created=False)
        stored = await stored_revision(session, proposal_id, revision)
        decision = (Decision("deny", "not_authorized")
                    if stored is None or stored.session_id != session_id else decide(stored))
        if not decision.allowed or stored is None:
            await append_in(session, "action.denied", {
                "stage": "execute", "proposal_id": proposal_id, "revision": revision,
                "tool": tool.name, "resolved_tool": f"{tool.server}/{tool.tool}",
                "reason_code": decision.reason,
            }, at=now, session_id=session_id, actor=ACTOR)
            return Authorization(operation=None, reason=decision.reason)
        await use_confirmation(session, proposal_id, revision, now)
        proposal = await session.get(ProposalRow, proposal_id, with_for_update=True)
        assert proposal is not None
        proposal.status = "authorized"
        row = OperationRow(
            id=operation_id, proposal_id=proposal_id, revision=revision, session_id=session_id,
            tenant_id=principal.tenant_id, tool=tool.name, server=tool.server,
            resolved_tool=tool.tool, arguments=stored.canonical_arguments,
            principal=msgspec.to_builtins(principal), idempotent=tool.idempotent,
            status="authorized", attempts=0, receipt=None, reason_code="", created_at=now,
            updated_at=now,
        )
        session.add(row)
        await session.flush()
        session.add(self.new_row(operation_id, now))
        await session.flush()
        await append_in(session, "operation.authorized", {
            "operation_id": operation_id, "proposal_id": proposal_id, "revision": revision,
            "tool": tool.name, "resolved_tool": f"{tool.server}/{tool.tool}",
            "action_class": tool.action_class, "arguments_hash": stored.arguments_hash,
            "confirmation_hash": stored.confirmation_hash,
            "evidence": stored.evidence_status,
        }, at=now, session_id=session_id, actor=ACTOR)
        return Authorization(operation=operation_record(row), created=True)

    # ------------------------------------------------------------------------- the worker

    async def claim_due(
        self, worker_id: str, limit: int, *, busy: frozenset[str] = frozenset()
    ) -> list[OperationRecord]:
        """Claim up to ``limit`` due outbox rows for ``worker_id``: rows nobody holds, rows it
        holds that its worker is not processing (not in ``busy``), and rows whose holder's lease
        ran out. An authorized operation becomes ``dispatch_pending``; one found ``in_flight``
        was interrupted mid-call and becomes ``unknown`` (reconciled before any resend)."""
        if limit <= 0:
            return []
        now, lease_now = self._tx.now(), self.lease_now()
        due = _due(worker_id, now, lease_now, busy)
        query = (select(OutboxRow).where(*due).order_by(OutboxRow.id).limit(limit)
                 .with_for_update(skip_locked=True))
        claimed: list[OperationRecord] = []
        async with self._tx.read() as session:
            if (await session.scalars(select(OutboxRow.id).where(*due).limit(1))).first() is None:
                return claimed  # nothing due: no write lock taken
        async with self._tx.write() as session:
            for outbox in (await session.scalars(query)).all():
                previous = outbox.claimed_by
                outbox.claimed_by, outbox.claimed_at = worker_id, now
                outbox.lease_expires_at = lease_now + self.lease
                op = await session.get(OperationRow, outbox.operation_id)
                if op is None:
                    outbox.done = True
                    continue
                if op.status == "authorized":
                    await move(session, op, "dispatch_pending", now=now, reason="")
                elif op.status == "in_flight":
                    await move(session, op, "unknown", now=now, reason="interrupted")
                    await append_in(session, "operation.taken_over", {
                        "operation_id": op.id, "from": previous or "", "to": worker_id,
                    }, at=now, session_id=op.session_id, actor=ACTOR)
                claimed.append(operation_record(op))
        return claimed

    async def transition(
        self,
        operation_id: str,
        status: ToolStatus,
        *,
        reason: str = "",
        receipt: dict[str, Any] | None = None,
        sent: bool = False,
        release_after_s: float | None = None,
        done: bool = False,
        holder: str = "",
    ) -> OperationRecord:
        """Move an operation (checked against the lifecycle table); optionally count an attempt,
        store a receipt, put its outbox row back for a later attempt (still held by the same
        process), or finish the outbox row. With ``holder`` the change is fenced: it is refused
        (:class:`~vocero.store.leases.LeaseLostError`) unless that worker still holds the row,
        and a send (``sent``) also needs the hold unexpired; it is extended then."""
        now = self._tx.now()
        async with self._tx.write() as session:
            op = await session.get(OperationRow, operation_id, with_for_update=True)
            if op is None:
                raise LookupError(f"no operation {operation_id!r}")
            outbox = (await session.scalars(select(OutboxRow).where(
                OutboxRow.operation_id == operation_id).with_for_update())).first()
            if holder and outbox is not None and not outbox.done:
                lease_now = self.lease_now()
                _check_hold(outbox, holder, lease_now, sending=sent)
                if sent:
                    outbox.lease_expires_at = max(outbox.lease_expires_at or lease_now,
                                                  lease_now + self.lease)
            if sent:
                op.attempts += 1
            if receipt is not None:
                op.receipt = receipt
            await move(session, op, status, now=now, reason=reason)
            if outbox is not None and (done or status in operations.TERMINAL):
                outbox.done = True
            elif outbox is not None and release_after_s is not None:
                outbox.claimed_at = None
                outbox.available_at = now + timedelta(seconds=release_after_s)
            return operation_record(op)

    async def withdraw(self, operation_id: str) -> OperationRecord:
        """The caller withdrew consent: an operation not yet sent (``authorized``,
        ``dispatch_pending``) is rejected ``withdrawn`` and its outbox row finished, in one
        transaction; one already sent is returned as it stands (it cannot be taken back)."""
        now = self._tx.now()
        async with self._tx.write() as session:
            op = await session.get(OperationRow, operation_id, with_for_update=True)
            if op is None:
                raise LookupError(f"no operation {operation_id!r}")
            if op.status in ("authorized", "dispatch_pending"):
                await move(session, op, "rejected", now=now, reason="withdrawn")
                outbox = (await session.scalars(select(OutboxRow).where(
                    OutboxRow.operation_id == operation_id))).first()
                if outbox is not None:
                    outbox.done = True
            return operation_record(op)


def _due(
    worker_id: str, now: datetime, lease_now: datetime, busy: frozenset[str]
) -> tuple[ColumnElement[bool], ...]:
    """Outbox rows ``worker_id`` may claim now (see :meth:`Outbox.claim_due`): due rows nobody
    holds or it holds itself, and any row whose other holder's lease ran out (the wait its holder
    set before a retry was that holder's: the taker tries at once)."""
    lapsed = OutboxRow.lease_expires_at.is_(None) | (OutboxRow.lease_expires_at <= lease_now)
    mine = OutboxRow.claimed_by == worker_id
    if busy:
        mine = mine & OutboxRow.operation_id.not_in(sorted(busy))
    due = (OutboxRow.available_at <= now) & (OutboxRow.claimed_by.is_(None) | mine)
    orphaned = OutboxRow.claimed_by.is_not(None) & (OutboxRow.claimed_by != worker_id) & lapsed
    return (OutboxRow.done.is_(False), due | orphaned)


def _check_hold(outbox: OutboxRow, holder: str, now: datetime, *, sending: bool) -> None:
    if outbox.claimed_by != holder:
        raise LeaseLostError(f"outbox row of {outbox.operation_id!r} is held by "
                             f"{outbox.claimed_by!r}")
    if sending and outbox.lease_expires_at is not None and outbox.lease_expires_at <= now:
        raise LeaseLostError(f"the hold on {outbox.operation_id!r} ran out; not sending")
