"""The action path's durable records: proposal revisions, evidence, answers, reads, lookups.

Every method is one short write transaction that awaits only the database, and appends its audit
event inside that same transaction, so a decision and its record commit together or not at all.
Writes are shielded from cancellation: a cancel landing mid-write would leave an aiosqlite
connection half-closed. Nothing here waits on a model, a caller or a remote service.

Operations with an effect and their outbox rows (authorization, claims under a lease, fenced
transitions, withdrawal) are :attr:`ActionRepository.outbox`, an
:class:`~vocero.policy.outbox.Outbox` over the same transactions
(``docs/adr/0006-durable-state-and-leases.md``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio
import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.contracts.domain import Principal
from vocero.contracts.events import ToolStatus
from vocero.contracts.ports import Clock
from vocero.policy.evidence import READBACK_STEP, Step
from vocero.policy.gate import ResolvedTool
from vocero.policy.outbox import Outbox
from vocero.policy.records import (
    OpenedRevision,
    OpenQuestion,
    OperationRecord,
    StoredRevision,
)
from vocero.policy.rows import (
    ACTOR,
    evidence_id,
    invalidate,
    new_id,
    open_proposal,
    operation_record,
    step_evidence_id,
    stored_revision,
)
from vocero.store.audit_tx import append_in
from vocero.store.engine import Store
from vocero.store.models import (
    ConfirmationRow,
    EvidenceStepRow,
    OperationRow,
    ProposalRevisionRow,
    ProposalRow,
    SessionRow,
)
from vocero.store.paging import Cursor, Page, newest_first, page_of
from vocero.store.scope import EVERY_TENANT, OperatorScope


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
    """The shielded transactions of the action path, the records written before an operation
    exists (proposal revisions, evidence, answers) or without one (reads), and what is read back."""

    def __init__(
        self, store: Store, clock: Clock, *, owner: str = "", lease_ttl_s: float = 15.0,
        lease_clock: Clock | None = None,
    ) -> None:
        """``owner``, ``lease_ttl_s`` and ``lease_clock``: how this process holds outbox rows
        (see :class:`~vocero.policy.outbox.Outbox`)."""
        self.store = store
        self.clock = clock
        self.outbox = Outbox(self, owner=owner, lease_ttl_s=lease_ttl_s, lease_clock=lease_clock)

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

    async def open_question(self, session_id: str) -> OpenQuestion | None:
        """The session's newest proposal whose read-back was asked and never acted on (see
        :class:`OpenQuestion`), if its revision can still be confirmed."""
        now = self.now()
        newest = (select(ProposalRow).where(
            ProposalRow.session_id == session_id, ProposalRow.status == "open",
        ).order_by(ProposalRow.created_at.desc(), ProposalRow.id.desc()).limit(1))
        async with self.read() as session:
            proposal = (await session.scalars(newest)).first()
            if proposal is None:
                return None
            revision = proposal.current_revision
            row = await session.get(ProposalRevisionRow, (proposal.id, revision))
            evidence = await session.get(EvidenceStepRow, evidence_id(proposal.id, revision))
            ran = await session.scalar(
                select(OperationRow.id).where(OperationRow.proposal_id == proposal.id).limit(1))
            if (row is None or row.invalidated_at is not None or row.expires_at is None
                    or row.expires_at <= now or evidence is None
                    or evidence.status == "invalidated" or ran is not None):
                return None
            return OpenQuestion(
                proposal_id=proposal.id, revision=revision, tool=proposal.tool,
                canonical_arguments=dict(row.canonical_arguments),
                expires_at=row.expires_at.timestamp(), turn_id=proposal.turn_id or "",
            )

    async def close_proposal(self, proposal_id: str, status: str) -> None:
        async with self.write() as session:
            row = await session.get(ProposalRow, proposal_id, with_for_update=True)
            if row is not None and row.status == "open":
                row.status = status

    # ----------------------------------------------------------------------------- evidence

    async def record_evidence(self, session_id: str, step: Step, *, cause: str) -> None:
        """A read-back's evidence (per proposal revision), or a profile step's (per session and
        step id, no proposal: ADR-0030); ``failed`` is audited, the row stays ``invalidated``."""
        readback = step.step == READBACK_STEP
        async with self.write() as session:
            key = (evidence_id(step.proposal_id, step.revision) if readback
                   else step_evidence_id(session_id, step.step))
            row = await session.get(EvidenceStepRow, key, with_for_update=True)
            if row is None:
                row = EvidenceStepRow(id=key, session_id=session_id,
                                      proposal_id=step.proposal_id if readback else None,
                                      step=f"{READBACK_STEP}@r{step.revision}" if readback
                                      else step.step,
                                      status=step.status, policy_version=step.policy_version)
                session.add(row)
            row.status = step.status
            row.policy_version = step.policy_version
            row.generation_id = step.generation_id or None
            row.updated_at = self.now()
            await session.flush()
            data: dict[str, Any] = {
                "step": step.step, "status": step.status, "cause": cause,
                "generation_id": step.generation_id, "policy_version": step.policy_version,
            }
            if readback:
                data.update(proposal_id=step.proposal_id, revision=step.revision)
            if step.failed:
                data["result"] = "failed"
            await append_in(session, "evidence.updated", data, at=self.now(),
                            session_id=session_id, actor=ACTOR)

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
        self, session_id: str | None = None, *, cursor: Cursor | None = None, limit: int = 100,
        scope: OperatorScope = EVERY_TENANT,
    ) -> Page[OperationRecord]:
        """Operations newest first (of one session with ``session_id``), after ``cursor``, of
        ``scope``'s tenants only."""
        query = scope.restrict(select(OperationRow), OperationRow.tenant_id)
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
