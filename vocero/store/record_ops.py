"""The session recorder's writes as Core statements on a synchronous connection, for
:meth:`Store.apply` (docs/scaling.md, issue 46 item 4).

Each method returns one write (a :data:`~vocero.store.engine.CoreWrite`): nothing runs until a
batch of them is applied, in one transaction and, on a SQLite file, in one call into a worker
thread. They store exactly what their ORM counterparts store (:class:`Conversations`'s
``add_turn``, ``upsert_generation``, ``update_session`` and ``close_session``,
:class:`UnitRepository`'s ``record`` and ``save_audio``, :meth:`AuditLog.record`): the same rows,
columns and audit chain, the same idempotence (a write sent again after a lost acknowledgement
changes nothing) and the same errors (a session not found or taken over, an id of another
session), with fewer statements: an upsert instead of a read and then an insert or update, and
an update guarded by its holder instead of a locking read first. On PostgreSQL the rows a write
numbers (turns, units) are still serialised by locking the session row first.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import structlog
from sqlalchemy import (
    ColumnElement,
    Connection,
    Table,
    case,
    func,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from vocero.contracts.clock import SystemClock
from vocero.contracts.ports import Clock
from vocero.store.audit_tx import append_on
from vocero.store.engine import CoreWrite, Store
from vocero.store.models import (
    DEFAULT_CHAIN,
    GenerationRow,
    GenerationStatus,
    SessionRow,
    SpokenUnitRow,
    TurnRow,
    TurnSource,
    UnitAudioRow,
)
from vocero.store.repositories import SessionNotFoundError, SessionTakenOverError
from vocero.store.units import DECIDED, MAX_SESSION_AUDIO_BYTES, UnitAudioBuffer, UnitEntry

log = structlog.get_logger("vocero.store.conversations")

SESSIONS = cast(Table, SessionRow.__table__)
TURNS = cast(Table, TurnRow.__table__)
GENERATIONS = cast(Table, GenerationRow.__table__)
UNITS = cast(Table, SpokenUnitRow.__table__)
AUDIO = cast(Table, UnitAudioRow.__table__)
_UNIT_DECISION = ("disposition", "reason_code", "decided_at", "admitted_at", "audio_offset_ms")
"""What a unit's later write changes until the unit is decided (then it is final)."""
_AUDIO_COLUMNS = ("session_id", "sample_rate", "pcm", "truncated", "created_at")


def _insert(connection: Connection, table: Table) -> Any:
    """The dialect's ``INSERT`` (both have ``ON CONFLICT``)."""
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)


def _next_seq(table: Table, session_id: str) -> ColumnElement[Any]:
    """The session's next ``seq`` in ``table``, computed by the statement that inserts it."""
    return (
        select(func.coalesce(func.max(table.c.seq), 0) + 1)
        .where(table.c.session_id == session_id)
        .correlate(None)
        .scalar_subquery()
    )


class RecordOps:
    """Builds the recorder's writes; ``owner`` and ``clock`` as :class:`Conversations`'s (a
    session held by another process refuses the writes, times are the clock's)."""

    def __init__(self, store: Store, *, owner: str = "", clock: Clock | None = None) -> None:
        self._store = store
        self.owner = owner
        self._clock = clock or SystemClock()

    async def apply(self, writes: Sequence[CoreWrite]) -> None:
        """Apply ``writes`` in one transaction (:meth:`Store.apply`)."""
        await self._store.apply(writes)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), UTC)

    def _not_taken_over(self) -> ColumnElement[bool] | None:
        if not self.owner:
            return None
        return or_(SESSIONS.c.owner_id.is_(None), SESSIONS.c.owner_id == self.owner)

    def _held(self, connection: Connection, session_id: str) -> str | None:
        """Lock the session row (PostgreSQL) if this process may still write to it; its
        holder. Raises as ``Conversations._held_session`` does."""
        query = select(SESSIONS.c.owner_id).where(SESSIONS.c.id == session_id).with_for_update()
        found = connection.execute(query).first()
        if found is None:
            raise SessionNotFoundError(session_id)
        holder = cast(str | None, found[0])
        if self.owner and holder is not None and holder != self.owner:
            raise SessionTakenOverError(session_id, holder)
        return holder

    def turn(self, session_id: str, turn_id: str, source: TurnSource, text: str) -> CoreWrite:
        """``Conversations.add_turn``: appended with the next ``seq``; an id already there is
        left as it is (refused when it is another session's)."""

        def write(connection: Connection) -> None:
            self._held(connection, session_id)
            statement = _insert(connection, TURNS).values(
                id=turn_id, session_id=session_id, seq=_next_seq(TURNS, session_id),
                source=source, text=text, created_at=self._now(),
            ).on_conflict_do_nothing(index_elements=[TURNS.c.id])
            if connection.execute(statement).rowcount == 0:
                owner = connection.scalar(select(TURNS.c.session_id).where(TURNS.c.id == turn_id))
                if owner != session_id:
                    raise ValueError(f"turn {turn_id!r} belongs to another session")

        return write

    def generation(
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
    ) -> CoreWrite:
        """``Conversations.upsert_generation``: ``None`` leaves a field as it is; a final
        status stamps ``completed_at`` once."""
        given = {"status": status, "turn_id": turn_id, "generated_text": generated_text,
                 "heard_text": heard_text, "played_ms": played_ms, "sent_ms": sent_ms}
        changes = {name: value for name, value in given.items() if value is not None}
        final = status != "in_progress"

        def write(connection: Connection) -> None:
            self._held(connection, session_id)
            row: dict[str, Any] = {
                "id": generation_id, "session_id": session_id, "turn_id": None,
                "generated_text": "", "heard_text": "", "played_ms": 0, "sent_ms": 0,
                "created_at": self._now(), "completed_at": None, **changes,
            }
            if final:
                row["completed_at"] = self._now()
            statement = _insert(connection, GENERATIONS).values(row)
            new = statement.excluded
            changed: dict[str, Any] = {name: new[name] for name in changes}
            if final:
                changed["completed_at"] = func.coalesce(GENERATIONS.c.completed_at,
                                                        new.completed_at)
            statement = statement.on_conflict_do_update(
                index_elements=[GENERATIONS.c.id], set_=changed,
                where=GENERATIONS.c.session_id == session_id,
            )
            if connection.execute(statement).rowcount == 0:
                raise ValueError(f"generation {generation_id!r} belongs to another session")

        return write

    def update_session(
        self,
        session_id: str,
        *,
        state: str | None = None,
        effective: dict[str, Any] | None = None,
        resume_token_hash: str | None = None,
    ) -> CoreWrite:
        """``Conversations.update_session``: the fields given change, ``None`` leaves one."""
        values: dict[str, Any] = {}
        if state is not None:
            values["state"] = state
        if effective is not None:
            values["effective"] = dict(effective)
        if resume_token_hash is not None:
            values["resume_token_hash"] = resume_token_hash

        def write(connection: Connection) -> None:
            if values and self._update_held(connection, session_id, values):
                return
            self._held(connection, session_id)  # raises why it was not updated

        return write

    def close_session(self, session_id: str, *, state: str = "CLOSING") -> CoreWrite:
        """``Conversations.close_session``: closed now, the first ``closed_at`` kept; a session
        another process took over is left as it is."""

        def write(connection: Connection) -> None:
            closed_at = func.coalesce(SESSIONS.c.closed_at,
                                      literal(self._now(), SESSIONS.c.closed_at.type))
            values = {"state": state, "closed_at": closed_at, "lease_expires_at": None}
            if self._update_held(connection, session_id, values):
                return
            query = select(SESSIONS.c.owner_id).where(SESSIONS.c.id == session_id)
            found = connection.execute(query).first()
            if found is None:
                raise SessionNotFoundError(session_id)
            log.info("session.close_skipped", session_id=session_id, owner_id=found[0])

        return write

    def _update_held(self, connection: Connection, session_id: str,
                     values: dict[str, Any]) -> bool:
        """Update the session row if this process may write to it; whether it did."""
        statement = update(SESSIONS).where(SESSIONS.c.id == session_id).values(values)
        held = self._not_taken_over()
        if held is not None:
            statement = statement.where(held)
        return bool(connection.execute(statement).rowcount)

    def unit(self, entry: UnitEntry) -> CoreWrite:
        """``UnitRepository.record``: inserted with the session's next ``seq``, or updated; a
        decided unit keeps its decision and only takes the audio length (the longest) and the
        synthesis settings."""
        unit_values = {
            "unit_id": entry.unit_id, "session_id": entry.session_id,
            "generation_id": entry.generation_id, "turn_id": entry.turn_id,
            "question_revision": entry.question_revision, "index": entry.index,
            "kind": entry.kind, "text": entry.text, "claim_keys": list(entry.claim_keys),
            "evidence": [dict(e) for e in entry.evidence], "planned_at": entry.planned_at,
            "disposition": entry.disposition, "reason_code": entry.reason_code,
            "decided_at": entry.decided_at, "admitted_at": entry.admitted_at,
            "audio_offset_ms": entry.audio_offset_ms, "audio_ms": max(entry.audio_ms, 0.0),
            "synthesis": dict(entry.synthesis),
        }

        def write(connection: Connection) -> None:
            postgres = connection.dialect.name == "postgresql"
            if postgres:  # SQLite has one writer at a time: its transaction is the lock
                connection.execute(select(SESSIONS.c.id).where(
                    SESSIONS.c.id == entry.session_id).with_for_update())
            statement = _insert(connection, UNITS).values(
                seq=_next_seq(UNITS, entry.session_id), **unit_values)
            undecided = UNITS.c.disposition.not_in(sorted(DECIDED))
            changed: dict[str, Any] = {
                name: case((undecided, statement.excluded[name]), else_=UNITS.c[name])
                for name in _UNIT_DECISION
            }
            longest = func.greatest if postgres else func.max
            changed["audio_ms"] = longest(literal(entry.audio_ms, UNITS.c.audio_ms.type),
                                          func.coalesce(UNITS.c.audio_ms, 0.0))
            if entry.synthesis:
                changed["synthesis"] = statement.excluded.synthesis
            connection.execute(statement.on_conflict_do_update(
                index_elements=[UNITS.c.unit_id], set_=changed))

        return write

    def unit_audio(self, session_id: str, buffer: UnitAudioBuffer, *,
                   session_limit: int = MAX_SESSION_AUDIO_BYTES) -> CoreWrite:
        """``UnitRepository.save_audio``: kept unless the unit is unknown or the session's
        audio budget is spent (then nothing is written, and that is no error)."""

        def write(connection: Connection) -> None:
            pcm = buffer.pcm()
            known = select(UNITS.c.unit_id).where(UNITS.c.unit_id == buffer.unit_id).exists()
            used = select(func.coalesce(func.sum(func.length(AUDIO.c.pcm)), 0)).where(
                AUDIO.c.session_id == session_id, AUDIO.c.unit_id != buffer.unit_id,
            ).scalar_subquery()
            found, spent = connection.execute(select(known, used)).one()
            if not found or int(spent or 0) + len(pcm) > session_limit:
                return
            statement = _insert(connection, AUDIO).values(
                unit_id=buffer.unit_id, session_id=session_id, sample_rate=buffer.sample_rate,
                pcm=pcm, truncated=buffer.truncated, created_at=self._now(),
            )
            connection.execute(statement.on_conflict_do_update(
                index_elements=[AUDIO.c.unit_id],
                set_={name: statement.excluded[name] for name in _AUDIO_COLUMNS},
            ))

        return write

    def audit(self, kind: str, data: dict[str, Any], *, at: datetime, session_id: str = "",
              actor: str = "vocero", chain: str = DEFAULT_CHAIN) -> CoreWrite:
        """``AuditLog.record``: appended to the hash chain with the time it happened; data that
        is not opaque references only fails the write (nothing appended)."""

        def write(connection: Connection) -> None:
            append_on(connection, kind, data, at=at, session_id=session_id, actor=actor,
                      chain=chain)

        return write


__all__ = ["RecordOps"]
