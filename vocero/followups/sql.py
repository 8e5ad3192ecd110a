"""The SQLAlchemy adapter of :class:`~vocero.followups.ports.FollowupStore`.

Every method is one short transaction that awaits only the database; a status change and its
audit event commit together. Portable SQL (SQLite and PostgreSQL): the queue's selections are
index range scans (``status, due_at``; ``attempt_operation_id``) with a ``LIMIT``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import anyio
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.followups import lifecycle
from vocero.followups.limits import (
    WAITING,
    FollowupLimitError,
    LimitsLookup,
    RecordLimits,
    over_cap,
)
from vocero.followups.ports import NotAwaitingApprovalError, Selection
from vocero.followups.records import (
    DUE,
    OPEN,
    Attempt,
    AttemptStatus,
    Finding,
    Followup,
    FollowupDraft,
    new_id,
)
from vocero.store.audit_tx import append_in
from vocero.store.engine import Store
from vocero.store.models import FindingRow, FollowupAttemptRow, FollowupRow, SessionRow
from vocero.store.paging import Cursor, Page, newest_first, page_of
from vocero.store.scope import EVERY_TENANT, OperatorScope

ACTOR = "vocero.followups"
COUNTED = ("pending", "placed", "line_not_ready", "unknown")
"""Attempts that may have rung a phone: what the daily budget counts."""
DIALING = "dialing"
"""An attempt's ``reason_code`` while the carrier is being asked to ring (``claim_dial``)."""


class SqlFollowupStore:
    def __init__(self, store: Store) -> None:
        self._store = store

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncSession]:
        with anyio.CancelScope(shield=True):
            async with self._store.write() as session:
                yield session

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncSession]:
        with anyio.CancelScope(shield=True):
            async with self._store.read() as session:
                yield session

    # ------------------------------------------------------------------ recording, reading

    async def record(
        self, draft: FollowupDraft, now: datetime, *, limits: LimitsLookup | None = None
    ) -> tuple[Followup, bool]:
        async with self._write() as session:
            found = (await session.scalars(select(FollowupRow).where(
                FollowupRow.operation_id == draft.operation_id))).first()
            if found is not None:
                return record_of(found), False
            # the session's row, locked: its follow-ups are counted and added one at a time
            owner = await session.get(SessionRow, draft.session_id, with_for_update=True) \
                if draft.session_id else None
            open_rows = (await session.scalars(select(FollowupRow).where(
                FollowupRow.tenant_id == draft.tenant_id,
                FollowupRow.subject_ref == draft.subject_ref,
                FollowupRow.status.in_(OPEN)))).all()
            same = lifecycle.duplicate_of(
                [record_of(r) for r in open_rows], tenant_id=draft.tenant_id,
                subject_ref=draft.subject_ref, channel=draft.channel, due_at=draft.due_at)
            if same is not None:
                await append_in(session, "followup.duplicate", {
                    "followup_id": same.id, "operation_id": draft.operation_id,
                }, at=now, session_id=draft.session_id, actor=ACTOR)
                return same, True
            refused = None if limits is None or owner is None else await self._over(
                session, draft, open_rows, limits(owner.profile_id, owner.profile_version))
            if refused is None:
                row = await self._new_row(session, draft, owner, now)
                await append_in(session, "followup.recorded", {
                    "followup_id": row.id, "operation_id": draft.operation_id,
                    "status": row.status, "channel": row.channel,
                    "due_at": row.due_at.isoformat(), "timezone": row.timezone,
                }, at=now, session_id=draft.session_id, actor=ACTOR)
                return record_of(row), False
            await append_in(session, "followup.refused", {
                "operation_id": draft.operation_id, "reason_code": refused.reason_code,
                "limit": refused.limit, "channel": draft.channel,
            }, at=now, session_id=draft.session_id, actor=ACTOR)
        raise refused  # after the refusal's audit event committed

    async def _over(
        self, session: AsyncSession, draft: FollowupDraft, open_rows: Sequence[FollowupRow],
        limits: RecordLimits,
    ) -> FollowupLimitError | None:
        """The cap one more follow-up would pass, if any."""
        in_session = int((await session.execute(select(func.count()).select_from(
            FollowupRow).where(FollowupRow.session_id == draft.session_id))).scalar_one())
        waiting = sum(1 for r in open_rows if r.channel == "phone" and r.status in WAITING)
        return over_cap(limits, channel=draft.channel, waiting=waiting, in_session=in_session)

    async def _new_row(
        self, session: AsyncSession, draft: FollowupDraft, profile: SessionRow | None,
        now: datetime,
    ) -> FollowupRow:
        row = FollowupRow(
            id=new_id("fup"), session_id=draft.session_id or None, tenant_id=draft.tenant_id,
            subject_ref=draft.subject_ref,
            profile_id=profile.profile_id if profile else "",
            profile_version=profile.profile_version if profile else "",
            when_text=draft.when_text, due_at=draft.due_at, promised_at=draft.due_at,
            timezone=draft.timezone, channel=draft.channel, reason=draft.reason,
            status="task" if draft.channel == "task" else "scheduled", attempts=0,
            outcome_reason="", attempt_operation_id=None, approved_by="",
            operation_id=draft.operation_id, created_at=now, updated_at=now,
        )
        session.add(row)
        await session.flush()
        return row

    async def get(self, followup_id: str) -> Followup | None:
        async with self._read() as session:
            row = await session.get(FollowupRow, followup_id)
            return None if row is None else record_of(row)

    async def list_followups(
        self, *, session_id: str | None = None, status: str | None = None,
        cursor: Cursor | None = None, limit: int = 100, scope: OperatorScope = EVERY_TENANT,
    ) -> Page[Followup]:
        query = scope.restrict(select(FollowupRow), FollowupRow.tenant_id)
        if session_id is not None:
            query = query.where(FollowupRow.session_id == session_id)
        if status is not None:
            query = query.where(FollowupRow.status == status)
        query = newest_first(query, FollowupRow.created_at, FollowupRow.id, cursor, limit)
        async with self._read() as session:
            rows = (await session.scalars(query)).all()
        return page_of(rows, limit, record_of, lambda f: Cursor(f.created_at, f.id))

    async def approve(
        self, followup_id: str, *, by: str, note: str, now: datetime
    ) -> Followup | None:
        async with self._write() as session:
            row = await session.get(FollowupRow, followup_id, with_for_update=True)
            if row is None:
                return None
            if row.status != "awaiting_approval":
                raise NotAwaitingApprovalError(followup_id, row.status)
            row.approved_by = by[:128]
            await _move(session, row, "scheduled", now=now, reason="", extra={
                "approved_by": row.approved_by, "note": note[:500]}, kind="followup.approved")
            return record_of(row)

    # ---------------------------------------------------------------------------- queue

    async def selection(self, now: datetime, held_before: datetime, limit: int) -> Selection:
        """Three index range scans (``attempt_operation_id``; ``status, due_at`` twice)."""
        in_flight = (select(FollowupRow).where(FollowupRow.attempt_operation_id.is_not(None))
                     .order_by(FollowupRow.attempt_operation_id).limit(limit))
        stale = (select(FollowupRow).where(
            FollowupRow.status == "awaiting_approval", FollowupRow.due_at < held_before,
        ).order_by(FollowupRow.due_at).limit(limit))
        due = (select(FollowupRow).where(
            FollowupRow.status.in_(DUE), FollowupRow.due_at <= now,
            FollowupRow.channel == "phone", FollowupRow.attempt_operation_id.is_(None),
        ).order_by(FollowupRow.due_at, FollowupRow.id).limit(limit))
        async with self._read() as session:
            found = [[record_of(r) for r in (await session.scalars(q)).all()]
                     for q in (in_flight, stale, due)]
        return Selection(*found)

    async def move(
        self, followup_id: str, status: str, *, now: datetime, reason: str = "",
        due_at: datetime | None = None, expect_attempt: str | None = None,
    ) -> Followup:
        async with self._write() as session:
            row = await session.get(FollowupRow, followup_id, with_for_update=True)
            if row is None:
                raise LookupError(f"no follow-up {followup_id!r}")
            if expect_attempt is not None and row.attempt_operation_id == expect_attempt:
                row.attempt_operation_id = None
            if due_at is not None:
                row.due_at = due_at
            await _move(session, row, status, now=now, reason=reason, extra={
                "due_at": row.due_at.isoformat(), "operation_id": expect_attempt or ""})
            return record_of(row)

    async def begin_attempt(self, followup_id: str, operation_id: str, now: datetime) -> Attempt:
        async with self._write() as session:
            row = await session.get(FollowupRow, followup_id, with_for_update=True)
            if row is None:
                raise LookupError(f"no follow-up {followup_id!r}")
            if row.attempt_operation_id is not None:
                raise RuntimeError(f"follow-up {followup_id!r} already has an attempt in flight")
            row.attempts += 1
            row.attempt_operation_id = operation_id
            row.updated_at = now
            attempt = FollowupAttemptRow(
                operation_id=operation_id, followup_id=followup_id, attempt=row.attempts,
                tenant_id=row.tenant_id, subject_ref=row.subject_ref, status="pending",
                reason_code="", created_at=now, updated_at=now)
            session.add(attempt)
            await session.flush()
            await append_in(session, "followup.attempt", {
                "followup_id": followup_id, "operation_id": operation_id,
                "attempt": row.attempts,
            }, at=now, session_id=row.session_id or "", actor=ACTOR)
            return Attempt(operation_id=operation_id, followup_id=followup_id,
                           attempt=row.attempts, status="pending", reason_code="",
                           created_at=now)

    async def claim_dial(self, operation_id: str, now: datetime) -> bool:
        """Note, before the carrier is asked, that attempt ``operation_id`` is dialling: ``True``
        the first time only (a pending attempt not claimed yet), so an operation sent again
        after a restart never rings twice (docs/followups.md "Call-backs through the
        carrier")."""
        async with self._write() as session:
            row = await session.get(FollowupAttemptRow, operation_id, with_for_update=True)
            if row is None or row.status != "pending" or row.reason_code == DIALING:
                return False
            row.reason_code, row.updated_at = DIALING, now
            return True

    async def finish_attempt(
        self, operation_id: str, status: AttemptStatus, reason: str, now: datetime
    ) -> None:
        async with self._write() as session:
            row = await session.get(FollowupAttemptRow, operation_id, with_for_update=True)
            if row is not None:
                row.status, row.reason_code, row.updated_at = status, reason[:64], now

    async def attempts_since(
        self, tenant_id: str, since: datetime, subject_ref: str | None = None
    ) -> int:
        query = select(func.count()).select_from(FollowupAttemptRow).where(
            FollowupAttemptRow.tenant_id == tenant_id, FollowupAttemptRow.created_at >= since,
            FollowupAttemptRow.status.in_(COUNTED))
        if subject_ref is not None:
            query = query.where(FollowupAttemptRow.subject_ref == subject_ref)
        async with self._read() as session:
            return int((await session.execute(query)).scalar_one())

    async def placed_since(self, tenant_id: str, subject_ref: str, since: datetime) -> int:
        query = select(func.count()).select_from(FollowupAttemptRow).where(
            FollowupAttemptRow.tenant_id == tenant_id,
            FollowupAttemptRow.subject_ref == subject_ref,
            FollowupAttemptRow.updated_at >= since, FollowupAttemptRow.status == "placed")
        async with self._read() as session:
            return int((await session.execute(query)).scalar_one())

    # ------------------------------------------------------------------------- findings

    async def session_has_followups(self, session_id: str) -> bool:
        query = select(FollowupRow.id).where(FollowupRow.session_id == session_id).limit(1)
        async with self._read() as session:
            return (await session.scalars(query)).first() is not None

    async def add_findings(self, findings: Sequence[Finding]) -> list[Finding]:
        added: list[Finding] = []
        if not findings:
            return added
        async with self._write() as session:
            for finding in findings:
                if await session.get(FindingRow, finding.id) is not None:
                    continue
                owner = await session.get(SessionRow, finding.session_id)
                if owner is None:
                    continue
                session.add(FindingRow(
                    id=finding.id, kind=finding.kind, session_id=finding.session_id,
                    tenant_id=owner.tenant_id, generation_id=finding.generation_id,
                    text=finding.text, at=finding.at))
                await session.flush()
                await append_in(session, "finding.recorded", {
                    "finding_id": finding.id, "kind": finding.kind,
                    "generation_id": finding.generation_id,
                }, at=finding.at, session_id=finding.session_id, actor=ACTOR)
                added.append(finding)
        return added

    async def findings(
        self, *, session_id: str | None = None, kind: str | None = None,
        cursor: Cursor | None = None, limit: int = 100, scope: OperatorScope = EVERY_TENANT,
    ) -> Page[Finding]:
        query = scope.restrict(select(FindingRow), FindingRow.tenant_id)
        if session_id is not None:
            query = query.where(FindingRow.session_id == session_id)
        if kind is not None:
            query = query.where(FindingRow.kind == kind)
        query = newest_first(query, FindingRow.at, FindingRow.id, cursor, limit)
        async with self._read() as session:
            rows = (await session.scalars(query)).all()
        return page_of(rows, limit, finding_of, lambda f: Cursor(f.at, f.id))


async def _move(
    session: AsyncSession, row: FollowupRow, status: str, *, now: datetime, reason: str,
    extra: dict[str, Any], kind: str = "",
) -> None:
    previous = row.status
    lifecycle.check(previous, status)
    row.status = status
    row.outcome_reason = reason[:64]
    row.updated_at = now
    await session.flush()
    await append_in(session, kind or f"followup.{status}", {
        "followup_id": row.id, "previous": previous, "status": status, "outcome_reason": reason,
        "attempts": row.attempts, **extra,
    }, at=now, session_id=row.session_id or "", actor=ACTOR)


def finding_of(row: FindingRow) -> Finding:
    return Finding(id=row.id, kind=row.kind, session_id=row.session_id,
                   generation_id=row.generation_id, text=row.text, at=row.at)


def record_of(row: FollowupRow) -> Followup:
    return Followup(
        id=row.id, session_id=row.session_id, tenant_id=row.tenant_id,
        subject_ref=row.subject_ref, profile_id=row.profile_id,
        profile_version=row.profile_version, when_text=row.when_text, due_at=row.due_at,
        promised_at=row.promised_at, timezone=row.timezone, channel=row.channel,  # type: ignore[arg-type]
        reason=row.reason, status=row.status,  # type: ignore[arg-type]
        attempts=row.attempts, outcome_reason=row.outcome_reason,
        attempt_operation_id=row.attempt_operation_id, approved_by=row.approved_by,
        created_at=row.created_at, updated_at=row.updated_at,
    )

