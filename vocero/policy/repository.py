"""The action path's durable state: proposals, evidence, confirmations, operations, outbox.

Every method is one short write transaction that awaits only the database, and appends its audit
event inside that same transaction, so a decision and its record commit together or not at all.
Writes are shielded from cancellation: a cancel landing mid-write would leave an aiosqlite
connection half-closed. Nothing here waits on a model, a caller or a remote service.

Several processes may share the outbox. Each outbox row is held by one process under a lease
(``claimed_by``, ``lease_expires_at``, renewed by the node's heartbeat, see
:mod:`vocero.store.leases`): the authorizing process holds it from the start, so the session
that asked for it hears every status; a row whose holder's lease ran out is claimed by whichever
process gets there first (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; on SQLite the claim is one
``BEGIN IMMEDIATE`` transaction, so claims of all processes are serialised). A claimed operation
found ``in_flight`` was interrupted mid-call: it becomes ``unknown`` and is reconciled by lookup
before anything is sent again. Every change the worker makes is fenced by its hold.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from vocero.contracts.domain import Principal
from vocero.contracts.events import ToolStatus
from vocero.contracts.ports import Clock
from vocero.policy import operations
from vocero.policy.evidence import READBACK_STEP, Step
from vocero.policy.gate import Decision, ResolvedTool
from vocero.policy.records import (
    Authorization,
    OpenedRevision,
    OperationRecord,
    StoredRevision,
)
from vocero.policy.rows import (
    ACTOR,
    evidence_id,
    invalidate,
    move,
    new_id,
    open_proposal,
    operation_record,
    stored_revision,
    use_confirmation,
)
from vocero.store.audit_tx import append_in
from vocero.store.engine import Store
from vocero.store.leases import LeaseLostError, lease_time
from vocero.store.leases import lease_clock as lease_clock_of
from vocero.store.models import (
    ConfirmationRow,
    EvidenceStepRow,
    OperationRow,
    OutboxRow,
    ProposalRevisionRow,
    ProposalRow,
    SessionRow,
)
from vocero.store.paging import Cursor, Page, newest_first, page_of


class RevisionDraft(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    turn_id: str
    tool: ResolvedTool
    arguments: dict[str, Any]
    target_resource: str
    object_version: str
    arguments_hash: str
    workflow_revision: str
    summary: str
    expires_at: datetime


class ActionRepository:
    def __init__(
        self, store: Store, clock: Clock, *, owner: str = "", lease_ttl_s: float = 15.0,
        lease_clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.owner = owner
        """The node id of this process (its heartbeat renews what it holds); empty: the worker
        holds each claim for ``lease_ttl_s`` from the moment it takes it, unrenewed."""
        self.lease = timedelta(seconds=lease_ttl_s)
        self.lease_clock = lease_clock_of(lease_clock)
        """Wall time for holds, whatever ``clock`` says (a virtual or ``--now`` clock)."""

    def lease_now(self) -> datetime:
        return lease_time(self.lease_clock)

    def new_outbox(self, operation_id: str, now: datetime) -> OutboxRow:
        """The outbox row of a newly authorized operation, held by this process (when it has a
        node id) so that its own worker dispatches it and its session hears every status."""
        return OutboxRow(operation_id=operation_id, available_at=now, done=False,
                         claimed_by=self.owner or None, claimed_at=None,
                         lease_expires_at=self.lease_now() + self.lease if self.owner else None)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), UTC)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """One short write transaction, shielded: a cancel never lands mid-write."""
        with anyio.CancelScope(shield=True):
            async with self.store.write() as session:
                yield session

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """One read transaction, shielded for the same reason."""
        with anyio.CancelScope(shield=True):
            async with self.store.read() as session:
                yield session

    async def audit(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        async with self.write() as session:
            await append_in(session, kind, data, at=self.now(), session_id=session_id,
                            actor=ACTOR)

    # ---------------------------------------------------------------------------- proposals

    async def open_revision(self, draft: RevisionDraft) -> OpenedRevision:
        """The proposal revision for this canonical action: the current one when nothing
        consequential changed, else a new revision of the same proposal (same tool and target)
        that invalidates the previous one, else a new proposal."""
        async with self.write() as session:
            return await self._open_revision(session, draft)

    async def _open_revision(self, session: AsyncSession, draft: RevisionDraft) -> OpenedRevision:
        now = self.now()
        found = await open_proposal(session, draft.session_id, draft.tool,
                                     draft.target_resource)
        if found is None:
            proposal = ProposalRow(
                id=new_id("prp"), session_id=draft.session_id, turn_id=draft.turn_id,
                tool=draft.tool.name, server=draft.tool.server, resolved_tool=draft.tool.tool,
                action_class=draft.tool.action_class, status="open", current_revision=1,
                created_at=now,
            )
            session.add(proposal)
            await session.flush()
            opened = OpenedRevision(proposal_id=proposal.id, revision=1, created=True,
                                    expires_at=draft.expires_at.timestamp())
        else:
            proposal, current = found
            reusable = (current.arguments_hash == draft.arguments_hash
                        and current.invalidated_at is None
                        and (current.expires_at is None or current.expires_at > now))
            if reusable:
                expires = current.expires_at.timestamp() if current.expires_at else 0.0
                return OpenedRevision(proposal_id=proposal.id, revision=current.revision,
                                      created=False, expires_at=expires)
            await invalidate(session, current, now)
            proposal.current_revision = current.revision + 1
            opened = OpenedRevision(proposal_id=proposal.id, revision=proposal.current_revision,
                                    created=True, superseded=current.revision,
                                    expires_at=draft.expires_at.timestamp())
        session.add(ProposalRevisionRow(
            proposal_id=opened.proposal_id, revision=opened.revision,
            canonical_arguments=draft.arguments, target_resource=draft.target_resource,
            object_version=draft.object_version, workflow_revision=draft.workflow_revision,
            arguments_hash=draft.arguments_hash, summary=draft.summary,
            expires_at=draft.expires_at, invalidated_at=None, created_at=now,
        ))
        await session.flush()
        await append_in(session, "proposal.revised" if opened.superseded else "proposal.created", {
            "proposal_id": opened.proposal_id, "revision": opened.revision,
            "superseded_revision": opened.superseded, "turn_id": draft.turn_id,
            "tool": draft.tool.name, "resolved_tool": f"{draft.tool.server}/{draft.tool.tool}",
            "action_class": draft.tool.action_class, "arguments_hash": draft.arguments_hash,
            "expires_at": draft.expires_at.isoformat(),
        }, at=now, session_id=draft.session_id, actor=ACTOR)
        return opened

    async def close_proposal(self, proposal_id: str, status: str) -> None:
        async with self.write() as session:
            row = await session.get(ProposalRow, proposal_id, with_for_update=True)
            if row is not None and row.status == "open":
                row.status = status

    # ----------------------------------------------------------------------------- evidence

    async def record_evidence(self, session_id: str, step: Step, *, cause: str) -> None:
        async with self.write() as session:
            key = evidence_id(step.proposal_id, step.revision)
            row = await session.get(EvidenceStepRow, key, with_for_update=True)
            if row is None:
                row = EvidenceStepRow(id=key, session_id=session_id,
                                      proposal_id=step.proposal_id,
                                      step=f"{READBACK_STEP}@r{step.revision}",
                                      status=step.status, policy_version=step.policy_version)
                session.add(row)
            row.status = step.status
            row.generation_id = step.generation_id or None
            row.updated_at = self.now()
            await session.flush()
            await append_in(session, "evidence.updated", {
                "proposal_id": step.proposal_id, "revision": step.revision,
                "step": READBACK_STEP, "status": step.status, "cause": cause,
                "generation_id": step.generation_id, "policy_version": step.policy_version,
            }, at=self.now(), session_id=session_id, actor=ACTOR)

    # ------------------------------------------------------------------------ confirmations

    async def record_answer(
        self,
        *,
        session_id: str,
        proposal_id: str,
        revision: int,
        decision: str,
        binding: Callable[[StoredRevision], str],
        asked_turn_id: str,
        answer_turn_id: str,
        source: str,
    ) -> StoredRevision:
        """A binding answer: a pending confirmation (single use) bound to ``binding`` of the
        stored revision, or a rejection that closes the proposal. Returns what was bound."""
        confirmation_id = new_id("cnf")
        now = self.now()
        async with self.write() as session:
            stored = await stored_revision(session, proposal_id, revision)
            if stored is None or stored.session_id != session_id:
                raise LookupError(f"no revision {revision} of {proposal_id!r} in this session")
            binding_hash = binding(stored)
            expires_at = datetime.fromtimestamp(stored.expires_at, UTC)
            session.add(ConfirmationRow(
                id=confirmation_id, proposal_id=proposal_id, revision=revision,
                binding_hash=binding_hash, turn_id=asked_turn_id or None, decision=decision,
                status="pending" if decision == "confirm" else "rejected", created_at=now,
                expires_at=expires_at, used_at=None,
            ))
            if decision == "reject":
                proposal = await session.get(ProposalRow, proposal_id, with_for_update=True)
                if proposal is not None:
                    proposal.status = "declined"
            await session.flush()
            await append_in(session, f"confirmation.{decision}ed", {
                "confirmation_id": confirmation_id, "proposal_id": proposal_id,
                "revision": revision, "binding_hash": binding_hash, "source": source,
                "asked_turn_id": asked_turn_id, "answer_turn_id": answer_turn_id,
            }, at=now, session_id=session_id, actor=ACTOR)
        return stored

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
        async with self.write() as session:
            return await self._authorize(session, session_id, proposal_id, revision,
                                         operation_id, tool, principal, decide)

    async def _authorize(
        self, session: AsyncSession, session_id: str, proposal_id: str, revision: int,
        operation_id: str, tool: ResolvedTool, principal: Principal,
        decide: Callable[[StoredRevision], Decision],
    ) -> Authorization:
        now = self.now()
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
        session.add(self.new_outbox(operation_id, now))
        await session.flush()
        await append_in(session, "operation.authorized", {
            "operation_id": operation_id, "proposal_id": proposal_id, "revision": revision,
            "tool": tool.name, "resolved_tool": f"{tool.server}/{tool.tool}",
            "action_class": tool.action_class, "arguments_hash": stored.arguments_hash,
            "confirmation_hash": stored.confirmation_hash,
            "evidence": stored.evidence_status,
        }, at=now, session_id=session_id, actor=ACTOR)
        return Authorization(operation=operation_record(row), created=True)

    async def record_read(
        self,
        *,
        session_id: str,
        operation_id: str,
        tool: ResolvedTool,
        principal: Principal,
        arguments_hash: str,
        status: ToolStatus,
        reason: str,
    ) -> None:
        """A read leaves no outbox row: it has no effect to protect. Its record is written once
        it finished (a crashed read is simply not recorded as done)."""
        now = self.now()
        async with self.write() as session:
            session.add(OperationRow(
                id=operation_id, proposal_id=None, revision=None, session_id=session_id,
                tenant_id=principal.tenant_id, tool=tool.name, server=tool.server,
                resolved_tool=tool.tool, arguments={"arguments_hash": arguments_hash},
                principal=msgspec.to_builtins(principal), idempotent=tool.idempotent,
                status=status, attempts=1, receipt=None, reason_code=reason,
                created_at=now, updated_at=now,
            ))
            await session.flush()
            await append_in(session, "operation.read", {
                "operation_id": operation_id, "tool": tool.name,
                "resolved_tool": f"{tool.server}/{tool.tool}", "status": status,
                "reason_code": reason, "arguments_hash": arguments_hash,
            }, at=now, session_id=session_id, actor=ACTOR)

    # ---------------------------------------------------------------------------- executor

    async def claim_due(
        self, worker_id: str, limit: int, *, busy: frozenset[str] = frozenset()
    ) -> list[OperationRecord]:
        """Claim up to ``limit`` due outbox rows for ``worker_id``: rows nobody holds, rows it
        holds that its worker is not processing (not in ``busy``), and rows whose holder's lease
        ran out. An authorized operation becomes ``dispatch_pending``; one found ``in_flight``
        was interrupted mid-call and becomes ``unknown`` (reconciled before any resend)."""
        if limit <= 0:
            return []
        now, lease_now = self.now(), self.lease_now()
        due = _due(worker_id, now, lease_now, busy)
        query = (select(OutboxRow).where(*due).order_by(OutboxRow.id).limit(limit)
                 .with_for_update(skip_locked=True))
        claimed: list[OperationRecord] = []
        async with self.read() as session:
            if (await session.scalars(select(OutboxRow.id).where(*due).limit(1))).first() is None:
                return claimed  # nothing due: no write lock taken
        async with self.write() as session:
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
        now = self.now()
        async with self.write() as session:
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
        now = self.now()
        async with self.write() as session:
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

    async def get(self, operation_id: str) -> OperationRecord | None:
        async with self.read() as session:
            row = await session.get(OperationRow, operation_id)
            return None if row is None else operation_record(row)

    async def operations(self, session_id: str | None = None) -> list[OperationRecord]:
        query = select(OperationRow).order_by(OperationRow.created_at, OperationRow.id)
        if session_id is not None:
            query = query.where(OperationRow.session_id == session_id)
        async with self.read() as session:
            return [operation_record(r) for r in (await session.scalars(query)).all()]

    async def operations_page(
        self, session_id: str | None = None, *, cursor: Cursor | None = None, limit: int = 100
    ) -> Page[OperationRecord]:
        """Operations newest first (of one session with ``session_id``), after ``cursor``."""
        query = select(OperationRow)
        if session_id is not None:
            query = query.where(OperationRow.session_id == session_id)
        query = newest_first(query, OperationRow.created_at, OperationRow.id, cursor, limit)
        async with self.read() as session:
            rows = (await session.scalars(query)).all()
        return page_of(rows, limit, operation_record, lambda op: Cursor(op.created_at, op.id))

    async def session_profile(self, session_id: str) -> tuple[str, str] | None:
        async with self.read() as session:
            row = await session.get(SessionRow, session_id)
            return None if row is None else (row.profile_id, row.profile_version)

    async def stored_revision(self, proposal_id: str, revision: int) -> StoredRevision | None:
        async with self.read() as session:
            return await stored_revision(session, proposal_id, revision)


def _due(
    worker_id: str, now: datetime, lease_now: datetime, busy: frozenset[str]
) -> tuple[ColumnElement[bool], ...]:
    """Outbox rows ``worker_id`` may claim now (see :meth:`ActionRepository.claim_due`): due
    rows nobody holds or it holds itself, and any row whose other holder's lease ran out (the
    wait its holder set before a retry was that holder's: the taker tries at once)."""
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
