"""Conversation persistence: sessions, the caller's turns and the assistant's generations.

Every method is one short transaction that awaits only the database. Writes that depend on what
they read lock the session row first (``BEGIN IMMEDIATE`` on SQLite, ``FOR UPDATE`` on
PostgreSQL), so turn numbering and generation upserts of one session never race.

With an ``owner`` (the process's node id, :mod:`vocero.store.leases`) a session is held under a
lease: created and resumed by this process, it is renewed by the node's heartbeat, and once
another process took it over (a resume there, or a takeover after this one's lease ran out)
this process's writes to it are refused (:class:`SessionTakenOverError`) and its close is a
no-op. Without one (tools, benchmarks), rows are held by nobody.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import structlog
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.contracts.clock import SystemClock
from vocero.contracts.ports import Clock
from vocero.store.engine import Store
from vocero.store.leases import LeaseLostError, lease_time
from vocero.store.leases import lease_clock as lease_clock_of
from vocero.store.models import (
    GenerationRow,
    GenerationStatus,
    SessionRow,
    TurnRow,
    TurnSource,
)
from vocero.store.records import (
    GenerationRecord,
    HistoryEntry,
    SessionRecord,
    TurnRecord,
)

log = structlog.get_logger("vocero.store.conversations")

CRASH_STATE = "FAILED"
"""The state of a session a crash ended (it is never left ``SPEAKING``)."""


class InterruptedSession(msgspec.Struct, frozen=True, kw_only=True):
    """A session that was live when the process died, as :meth:`Conversations.recover_interrupted`
    closed it."""

    session_id: str
    previous_state: str
    resumable: bool
    owner_id: str = ""
    """The process that held it (empty: none)."""


class SessionNotFoundError(LookupError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class SessionTakenOverError(LeaseLostError):
    """Another process holds the session now; this one may no longer write to it."""

    def __init__(self, session_id: str, owner_id: str) -> None:
        super().__init__(f"session {session_id!r} is held by {owner_id!r}")
        self.session_id = session_id
        self.owner_id = owner_id


class Conversations:
    def __init__(
        self,
        store: Store,
        *,
        clock: Clock | None = None,
        owner: str = "",
        lease_ttl_s: float = 15.0,
        lease_clock: Clock | None = None,
    ) -> None:
        self._store = store
        self._clock = clock or SystemClock()
        self.owner = owner
        self._lease = timedelta(seconds=lease_ttl_s)
        self._lease_clock = lease_clock_of(lease_clock)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), UTC)

    def _held_until(self) -> datetime:
        """A row this process holds now is leased until then; an owner-less one is not held."""
        now = lease_time(self._lease_clock)
        return now + self._lease if self.owner else now

    # ---------------------------------------------------------------------------- sessions

    async def create_session(
        self,
        *,
        session_id: str,
        tenant_id: str,
        subject_ref: str,
        profile_id: str,
        profile_version: str,
        state: str = "CONNECTING",
        effective: dict[str, Any] | None = None,
        resume_token_hash: str | None = None,
        channel: str = "web",
        call_sid: str = "",
        followup_id: str = "",
    ) -> SessionRecord:
        now = self._now()
        row = SessionRow(
            id=session_id, tenant_id=tenant_id, subject_ref=subject_ref, profile_id=profile_id,
            profile_version=profile_version, state=state, effective=dict(effective or {}),
            resume_token_hash=resume_token_hash, created_at=now, closed_at=None,
            owner_id=self.owner or None, lease_expires_at=self._held_until(),
            channel=channel, call_sid=call_sid, followup_id=followup_id,
        )
        async with self._store.write() as session:
            session.add(row)
        return _session_record(row)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        async with self._store.read() as session:
            row = await session.get(SessionRow, session_id)
            return None if row is None else _session_record(row)

    async def session_by_resume_hash(self, resume_token_hash: str) -> SessionRecord | None:
        """The open session a resume token (by its hash) belongs to."""
        query = select(SessionRow).where(
            SessionRow.resume_token_hash == resume_token_hash, SessionRow.closed_at.is_(None)
        )
        async with self._store.read() as session:
            row = (await session.scalars(query)).first()
            return None if row is None else _session_record(row)

    async def session_to_resume(
        self, resume_token_hash: str, *, window_s: float
    ) -> SessionRecord | None:
        """The session a resume token (by its hash) may resume: one whose connection ended (it is
        closed) at most ``window_s`` ago, and whose token was not withdrawn; or, with an owner,
        one still open in another process (the caller left it: this process takes it over)."""
        closed_since = self._now() - timedelta(seconds=window_s)
        resumable = SessionRow.closed_at.is_not(None) & (SessionRow.closed_at >= closed_since)
        if self.owner:
            elsewhere = (SessionRow.closed_at.is_(None) & SessionRow.owner_id.is_not(None)
                         & (SessionRow.owner_id != self.owner))
            resumable = resumable | elsewhere
        query = select(SessionRow).where(
            SessionRow.resume_token_hash == resume_token_hash, resumable
        )
        async with self._store.read() as session:
            row = (await session.scalars(query)).first()
            return None if row is None else _session_record(row)

    async def reopen_session(self, session_id: str, *, resume_token_hash: str) -> SessionRecord:
        """Resume a session on a new connection, under a new token, held by this process. A
        session still open in another process is taken from it: what it was generating is
        ``failed`` (uncommitted work is not resumed) and its writes are refused from now on.
        The record returned carries the previous holder in ``owner_id``."""
        now = self._now()
        async with self._store.write() as session:
            row = await _locked_session(session, session_id)
            previous = row.owner_id
            if row.closed_at is None and previous != (self.owner or None):
                await _fail_in_progress(session, [session_id], now)
            row.closed_at = None
            row.state = "CONFIGURING"
            row.resume_token_hash = resume_token_hash
            row.owner_id = self.owner or None
            row.lease_expires_at = self._held_until()
            record = _session_record(row)
        return msgspec.structs.replace(record, owner_id=previous or "")

    async def not_held(self, session_ids: list[str]) -> list[str]:
        """Those of ``session_ids`` this process no longer holds (closed or taken over)."""
        if not session_ids:
            return []
        query = select(SessionRow.id, SessionRow.owner_id, SessionRow.closed_at).where(
            SessionRow.id.in_(session_ids))
        async with self._store.read() as session:
            rows = (await session.execute(query)).all()
        return [r.id for r in rows
                if r.closed_at is not None or (r.owner_id or None) != (self.owner or None)]

    async def update_session(
        self,
        session_id: str,
        *,
        state: str | None = None,
        effective: dict[str, Any] | None = None,
        resume_token_hash: str | None = None,
    ) -> SessionRecord:
        """Change the fields given; ``None`` leaves a field as it is."""
        async with self._store.write() as session:
            row = await self._held_session(session, session_id)
            if state is not None:
                row.state = state
            if effective is not None:
                row.effective = dict(effective)
            if resume_token_hash is not None:
                row.resume_token_hash = resume_token_hash
        return _session_record(row)

    async def close_session(self, session_id: str, *, state: str = "CLOSING") -> SessionRecord:
        """Mark the session closed now; closing twice keeps the first ``closed_at``. A session
        another process took over is left as it is (this process no longer has a say)."""
        async with self._store.write() as session:
            row = await _locked_session(session, session_id)
            if self._taken_over(row):
                log.info("session.close_skipped", session_id=session_id, owner_id=row.owner_id)
                return _session_record(row)
            row.state = state
            row.closed_at = row.closed_at or self._now()
            row.lease_expires_at = None
        return _session_record(row)

    async def recover_interrupted(self, *, window_s: float) -> list[InterruptedSession]:
        """Close every open session nobody holds any more (its holder's lease ran out, or it
        never had one): state ``FAILED``, closed now, generations still in progress ``failed``.
        Like a dropped connection, each stays resumable with its token for ``window_s`` from
        now, unless nothing happened in it for longer than that before (its token is then
        withdrawn). Run at start-up, before any connection is served, and at every heartbeat;
        sessions held by a live process, this one's included, are left alone."""
        now, lease_now = self._now(), lease_time(self._lease_clock)
        unheld = SessionRow.lease_expires_at.is_(None) | (SessionRow.lease_expires_at <= lease_now)
        query = select(SessionRow).where(SessionRow.closed_at.is_(None), unheld)
        if self.owner:
            query = query.where(SessionRow.owner_id.is_(None)
                                | (SessionRow.owner_id != self.owner))
        async with self._store.write() as session:
            rows = (await session.scalars(query.with_for_update(skip_locked=True))).all()
            active = await _last_activity(session, [row.id for row in rows])
            recovered = []
            for row in rows:
                last = max(filter(None, (_aware(row.created_at), active.get(row.id))))
                resumable = bool(row.resume_token_hash) and now - last <= timedelta(
                    seconds=window_s
                )
                recovered.append(InterruptedSession(
                    session_id=row.id, previous_state=row.state, resumable=resumable,
                    owner_id=row.owner_id or "",
                ))
                row.state, row.closed_at, row.lease_expires_at = CRASH_STATE, now, None
                if not resumable:
                    row.resume_token_hash = ""
            await _fail_in_progress(session, [row.id for row in rows], now)
        return recovered

    # ------------------------------------------------------------------------------- turns

    async def add_turn(
        self, *, session_id: str, turn_id: str, source: TurnSource, text: str
    ) -> TurnRecord:
        """Append a committed caller turn; ``seq`` counts the session's turns from 1. Adding a
        turn id already there returns that turn (a write whose commit was not acknowledged may
        be sent again); the same id in another session is refused."""
        async with self._store.write() as session:
            await self._held_session(session, session_id)
            existing = await session.get(TurnRow, turn_id)
            if existing is not None:
                if existing.session_id != session_id:
                    raise ValueError(f"turn {turn_id!r} belongs to another session")
                return _turn_record(existing)
            last = select(func.coalesce(func.max(TurnRow.seq), 0)).where(
                TurnRow.session_id == session_id
            )
            seq = int((await session.execute(last)).scalar_one()) + 1
            row = TurnRow(id=turn_id, session_id=session_id, seq=seq, source=source, text=text,
                          created_at=self._now())
            session.add(row)
        return _turn_record(row)

    # ------------------------------------------------------------------------- generations

    async def upsert_generation(
        self,
        *,
        generation_id: str,
        session_id: str,
        status: GenerationStatus,
        turn_id: str | None = None,
        generated_text: str | None = None,
        heard_text: str | None = None,
        played_ms: int | None = None,
        sent_ms: int | None = None,
    ) -> GenerationRecord:
        """Create or update a generation; ``None`` leaves a field as it is. A final status
        stamps ``completed_at`` once."""
        async with self._store.write() as session:
            await self._held_session(session, session_id)
            row = await session.get(GenerationRow, generation_id)
            if row is None:
                row = GenerationRow(id=generation_id, session_id=session_id, turn_id=turn_id,
                                    status=status, generated_text="", heard_text="",
                                    played_ms=0, sent_ms=0, created_at=self._now())
                session.add(row)
            elif row.session_id != session_id:
                raise ValueError(f"generation {generation_id!r} belongs to another session")
            _apply_generation(row, status=status, turn_id=turn_id, generated_text=generated_text,
                              heard_text=heard_text, played_ms=played_ms, sent_ms=sent_ms)
            if status != "in_progress" and row.completed_at is None:
                row.completed_at = self._now()
        return _generation_record(row)

    async def get_generation(self, generation_id: str) -> GenerationRecord | None:
        async with self._store.read() as session:
            row = await session.get(GenerationRow, generation_id)
            return None if row is None else _generation_record(row)

    # ----------------------------------------------------------------------------- history

    async def history(self, session_id: str) -> list[HistoryEntry]:
        """Turns and generations in the order they happened; assistant text as heard."""
        turns_query = select(TurnRow).where(TurnRow.session_id == session_id)
        generations_query = select(GenerationRow).where(GenerationRow.session_id == session_id)
        async with self._store.read() as session:
            turns = (await session.scalars(turns_query)).all()
            generations = (await session.scalars(generations_query)).all()
        timeline: list[tuple[tuple[datetime, int, int, str], HistoryEntry]] = [
            ((t.created_at, 0, t.seq, t.id),
             HistoryEntry(role="user", text=t.text, turn_id=t.id))
            for t in turns
        ]
        timeline += [
            ((g.created_at, 1, 0, g.id),
             HistoryEntry(role="assistant", text=g.heard_text, turn_id=g.turn_id or "",
                          generation_id=g.id, status=g.status))
            for g in generations
        ]
        return [entry for _, entry in sorted(timeline, key=lambda item: item[0])]


    # ----------------------------------------------------------------------------- holding

    def _taken_over(self, row: SessionRow) -> bool:
        return bool(self.owner) and row.owner_id is not None and row.owner_id != self.owner

    async def _held_session(self, session: AsyncSession, session_id: str) -> SessionRow:
        """The session row, locked, if this process may still write to it."""
        row = await _locked_session(session, session_id)
        if self._taken_over(row):
            raise SessionTakenOverError(session_id, row.owner_id or "")
        return row


async def _fail_in_progress(session: AsyncSession, session_ids: list[str], now: datetime) -> None:
    """Generations the sessions' previous holder left in progress did not complete."""
    if session_ids:
        await session.execute(
            update(GenerationRow)
            .where(GenerationRow.session_id.in_(session_ids),
                   GenerationRow.status == "in_progress")
            .values(status="failed", completed_at=now)
        )


async def _last_activity(session: AsyncSession, session_ids: list[str]) -> dict[str, datetime]:
    """The latest turn or generation time of each session (sessions with neither are absent)."""
    if not session_ids:
        return {}
    latest: dict[str, datetime] = {}
    queries = (
        select(TurnRow.session_id, func.max(TurnRow.created_at))
        .where(TurnRow.session_id.in_(session_ids)).group_by(TurnRow.session_id),
        select(GenerationRow.session_id, func.max(GenerationRow.created_at))
        .where(GenerationRow.session_id.in_(session_ids)).group_by(GenerationRow.session_id),
        select(GenerationRow.session_id, func.max(GenerationRow.completed_at))
        .where(GenerationRow.session_id.in_(session_ids)).group_by(GenerationRow.session_id),
    )
    for query in queries:
        for session_id, at in (await session.execute(query)).all():
            if at is not None:
                at = _aware(at)
                latest[session_id] = max(latest.get(session_id, at), at)
    return latest


def _aware(at: datetime) -> datetime:
    """Aggregates may come back naive on SQLite; stored times are UTC."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


async def _locked_session(session: AsyncSession, session_id: str) -> SessionRow:
    row = await session.get(SessionRow, session_id, with_for_update=True)
    if row is None:
        raise SessionNotFoundError(session_id)
    return row


def _apply_generation(row: GenerationRow, **changes: Any) -> None:
    for field, value in changes.items():
        if value is not None:
            setattr(row, field, value)


def _session_record(row: SessionRow) -> SessionRecord:
    return SessionRecord(
        id=row.id, tenant_id=row.tenant_id, subject_ref=row.subject_ref,
        profile_id=row.profile_id, profile_version=row.profile_version, state=row.state,
        effective=dict(row.effective), resume_token_hash=row.resume_token_hash,
        created_at=row.created_at, closed_at=row.closed_at, owner_id=row.owner_id or "",
        lease_expires_at=row.lease_expires_at, channel=row.channel or "web",
        call_sid=row.call_sid or "", followup_id=row.followup_id or "",
    )


def _turn_record(row: TurnRow) -> TurnRecord:
    return TurnRecord(id=row.id, session_id=row.session_id, seq=row.seq, source=row.source,
                      text=row.text, created_at=row.created_at)


def _generation_record(row: GenerationRow) -> GenerationRecord:
    return GenerationRecord(
        id=row.id, session_id=row.session_id, turn_id=row.turn_id, status=row.status,
        generated_text=row.generated_text, heard_text=row.heard_text, played_ms=row.played_ms,
        sent_ms=row.sent_ms, created_at=row.created_at, completed_at=row.completed_at,
    )
