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
from sqlalchemy import Connection

from vocero.contracts.clock import SystemClock
from vocero.contracts.ports import Clock
from vocero.store import record_statements as sql
from vocero.store.audit_tx import append_on
from vocero.store.engine import CoreWrite, Store
from vocero.store.models import DEFAULT_CHAIN, GenerationStatus, TurnSource
from vocero.store.repositories import SessionNotFoundError, SessionTakenOverError
from vocero.store.units import MAX_SESSION_AUDIO_BYTES, UnitAudioBuffer, UnitEntry

log = structlog.get_logger("vocero.store.conversations")


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

    def _held(self, connection: Connection, session_id: str) -> None:
        """Lock the session row (PostgreSQL) if this process may still write to it; raises as
        ``Conversations._held_session`` does."""
        found = connection.execute(sql.session_holder(), {"p_session": session_id}).first()
        if found is None:
            raise SessionNotFoundError(session_id)
        holder = cast(str | None, found[0])
        if self.owner and holder is not None and holder != self.owner:
            raise SessionTakenOverError(session_id, holder)

    def _update_held(self, connection: Connection, statement: Any,
                     values: dict[str, Any]) -> bool:
        """Run an update of a session this process may write to; whether it changed a row."""
        if self.owner:
            values = values | {"p_owner": self.owner}
        return bool(connection.execute(statement, values).rowcount)

    def turn(self, session_id: str, turn_id: str, source: TurnSource, text: str) -> CoreWrite:
        """``Conversations.add_turn``: appended with the next ``seq``; an id already there is
        left as it is (refused when it is another session's)."""

        def write(connection: Connection) -> None:
            self._held(connection, session_id)
            row = {"id": turn_id, "session_id": session_id, "source": source, "text": text,
                   "created_at": self._now()}
            statement = sql.turn_insert(connection.dialect.name)
            if connection.execute(statement, row).rowcount == 0:
                owner = connection.scalar(sql.turn_session(), {"p_turn": turn_id})
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
            statement = sql.generation_upsert(connection.dialect.name, tuple(changes), final)
            if connection.execute(statement, row).rowcount == 0:
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
        statement = sql.session_update(tuple(values), bool(self.owner)) if values else None
        params = {f"p_{name}": value for name, value in values.items()}
        params["p_session"] = session_id

        def write(connection: Connection) -> None:
            if statement is not None and self._update_held(connection, statement, params):
                return
            self._held(connection, session_id)  # raises why it was not updated

        return write

    def close_session(self, session_id: str, *, state: str = "CLOSING") -> CoreWrite:
        """``Conversations.close_session``: closed now, the first ``closed_at`` kept; a session
        another process took over is left as it is."""

        def write(connection: Connection) -> None:
            params = {"p_session": session_id, "p_state": state, "p_now": self._now()}
            if self._update_held(connection, sql.session_close(bool(self.owner)), params):
                return
            found = connection.execute(sql.session_holder(), {"p_session": session_id}).first()
            if found is None:
                raise SessionNotFoundError(session_id)
            log.info("session.close_skipped", session_id=session_id, owner_id=found[0])

        return write

    def unit(self, entry: UnitEntry) -> CoreWrite:
        """``UnitRepository.record``: inserted with the session's next ``seq``, or updated; a
        decided unit keeps its decision and only takes the audio length (the longest) and the
        synthesis settings."""
        row = {
            "unit_id": entry.unit_id, "session_id": entry.session_id,
            "generation_id": entry.generation_id, "turn_id": entry.turn_id,
            "question_revision": entry.question_revision, "index": entry.index,
            "kind": entry.kind, "text": entry.text, "claim_keys": list(entry.claim_keys),
            "evidence": [dict(e) for e in entry.evidence], "planned_at": entry.planned_at,
            "disposition": entry.disposition, "reason_code": entry.reason_code,
            "decided_at": entry.decided_at, "admitted_at": entry.admitted_at,
            "audio_offset_ms": entry.audio_offset_ms, "audio_ms": max(entry.audio_ms, 0.0),
            "synthesis": dict(entry.synthesis), "p_audio_ms": entry.audio_ms,
        }

        def write(connection: Connection) -> None:
            dialect = connection.dialect.name
            if dialect == "postgresql":  # SQLite has one writer at a time: its transaction
                connection.execute(sql.session_holder(), {"p_session": entry.session_id})
            connection.execute(sql.unit_upsert(dialect, bool(entry.synthesis)), row)

        return write

    def unit_audio(self, session_id: str, buffer: UnitAudioBuffer, *,
                   session_limit: int = MAX_SESSION_AUDIO_BYTES) -> CoreWrite:
        """``UnitRepository.save_audio``: kept unless the unit is unknown or the session's
        audio budget is spent (then nothing is written, and that is no error)."""

        def write(connection: Connection) -> None:
            pcm = buffer.pcm()
            room = {"p_unit": buffer.unit_id, "p_session": session_id}
            found, spent = connection.execute(sql.audio_room(), room).one()
            if not found or int(spent or 0) + len(pcm) > session_limit:
                return
            connection.execute(sql.audio_upsert(connection.dialect.name), {
                "unit_id": buffer.unit_id, "session_id": session_id,
                "sample_rate": buffer.sample_rate, "pcm": pcm, "truncated": buffer.truncated,
                "created_at": self._now(),
            })

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
