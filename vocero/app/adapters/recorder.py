"""Persists conversations off the hot path: one writer task drains a queue in order, in batches.

The writes are Core statements (:class:`~vocero.store.record_ops.RecordOps`). The writer takes
up to :data:`BATCH` queued writes at a time and, ``batched``, applies them in one transaction
(:meth:`vocero.store.Store.apply`): one commit and one turn of SQLite's write lock for the lot,
which is what keeps it ahead of 50 and more sessions (one transaction per write fell behind and
shed 14,595 writes in an hour-long soak, docs/scaling.md); on a SQLite file the whole batch is
one call into a worker thread, not a round trip to the database thread per statement.

A write the store could not take (it was unreachable: restarted, failed over, or a deadlock
rolled it back) is kept and tried again, with backoff, before any later write, so a store outage
delays the conversation's record but loses none of it and keeps its order. Every write is
idempotent (a turn by its id, the rest upserts), so a batch whose commit was not acknowledged,
or that one bad write rolled back, may be sent again. A write that can never succeed (a
constraint, a session taken over) is dropped on its own and counted; the rest of its batch is
applied.

Which writes may be shed when the backlog passes :data:`QUEUE`, and which never are:

* **kept** (never shed): the caller's turns and the generations (the heard text, from which a
  resumed session's history is rebuilt), session close, resume-token withdrawal, applied
  configuration, and audit events. Past :data:`QUEUE` they are still queued; the backlog is
  bounded by back-pressure instead: :attr:`StoreRecorder.backlogged` turns new sessions away
  (``CAPACITY_EXHAUSTED``, the runtime's readiness), so only sessions already admitted add to it.
* **sheddable**: intermediate session states (the last one is written by the close), spoken-unit
  records and unit audio (evidence for listening reviews). Past :data:`QUEUE` they are refused,
  counted (``queue_full``) and logged, never allowed to block a conversation. A session's state
  still queued is replaced by its next one (only the last counts), so a writer that is behind
  writes one state per session instead of three or four per turn.

Operations (the action plane's outbox) never pass through here: they commit in their own
transaction with their audit event. Every drop is counted through ``on_drop`` (the
``vocero_frames_dropped_total{link="recorder"}`` series the soak samples) and logged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import anyio
import anyio.abc

from vocero.app.adapters.write_queue import (
    BATCH,
    QUEUE,
    RetrySettings,
    WriteQueue,
)
from vocero.store.audit import AuditLog
from vocero.store.models import GenerationStatus, TurnSource
from vocero.store.record_ops import RecordOps
from vocero.store.units import UnitAudioBuffer, UnitEntry

__all__ = ["BATCH", "QUEUE", "RetrySettings", "StoreRecorder", "UnitAudioWriter"]


class StoreRecorder:
    """Implements the orchestrator's ``SessionRecorder``; no call ever blocks. Its writes are
    ``ops``'s, applied through a :class:`~.write_queue.WriteQueue` (``on_drop``, ``retry``,
    ``on_pending`` and ``batched`` are the queue's). Spoken units are kept only with
    ``units``, audit events only with an ``audit`` log (whose clock times them)."""

    def __init__(
        self,
        ops: RecordOps,
        on_drop: Callable[[str], None],
        *,
        units: bool = False,
        audit: AuditLog | None = None,
        retry: RetrySettings | None = None,
        on_pending: Callable[[int], None] | None = None,
        batched: bool = False,
    ) -> None:
        self._ops = ops
        self._units = units
        self._audit = audit
        self._writes = WriteQueue(on_drop, retry=retry, on_pending=on_pending, apply=ops.apply,
                                  batched=batched)
        self._submit = self._writes.submit

    @property
    def pending(self) -> int:
        """Writes queued or being tried, not yet applied."""
        return self._writes.pending

    @property
    def backlogged(self) -> bool:
        """Sheddable writes are refused and new sessions should be turned away until the
        writer catches up (back-pressure; :attr:`WriteQueue.backlogged`)."""
        return self._writes.backlogged

    @property
    def store_unreachable(self) -> bool:
        """The last attempt found the store unreachable; its write and all after it are kept."""
        return self._writes.store_unreachable

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The writer: applies the queued writes until :meth:`stop` and the queue is empty."""
        await self._writes.run(task_status=task_status)

    async def flush(self) -> None:
        """Wait until every queued write was applied (:meth:`WriteQueue.flush`)."""
        await self._writes.flush()

    async def flush_session(self, session_id: str) -> None:
        """Wait until the writes of ``session_id`` were applied, not for anyone else's
        (:meth:`WriteQueue.flush_session`): what a resume needs."""
        await self._writes.flush_session(session_id)

    def stop(self) -> None:
        """No write is taken from now on; the writer applies what is queued, then returns."""
        self._writes.stop()

    def turn(self, session_id: str, turn_id: str, source: str, text: str) -> None:
        self._submit(self._ops.turn(session_id, turn_id, cast(TurnSource, source), text),
                     session_id)

    def generation(
        self,
        session_id: str,
        generation_id: str,
        turn_id: str,
        *,
        status: str,
        generated_text: str,
        heard_text: str,
        played_ms: float,
        sent_ms: float,
    ) -> None:
        self._submit(
            self._ops.generation(
                generation_id=generation_id,
                session_id=session_id,
                turn_id=turn_id,
                status=cast(GenerationStatus, status),
                generated_text=generated_text,
                heard_text=heard_text,
                played_ms=int(played_ms),
                sent_ms=int(sent_ms),
            ),
            session_id,
        )

    def state(self, session_id: str, state: str) -> None:
        self._submit(self._ops.update_session(session_id, state=state), session_id, kept=False,
                     latest="state")

    def configuration(self, session_id: str, effective: dict[str, Any]) -> None:
        """The effective configuration an update applied."""
        self._submit(self._ops.update_session(session_id, effective=effective), session_id)

    def close(self, session_id: str, state: str) -> None:
        self._submit(self._ops.close_session(session_id, state=state), session_id)

    def withdraw_resume(self, session_id: str) -> None:
        """The session's resume token stops working (its client closed it): queued when the
        direct write failed, so that it is withdrawn once the store answers again."""
        self._submit(self._ops.update_session(session_id, resume_token_hash=""), session_id)

    def audit(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        """An audit event of code that cannot wait for the store (a connection closing), with
        the time it happened: appended in order, after an outage too."""
        audit = self._audit
        if audit is not None:
            self._submit(self._ops.audit(kind, data, session_id=session_id, at=audit.now()),
                         session_id)

    def unit(self, entry: UnitEntry) -> None:
        """A spoken unit planned, or decided (docs/grounding.md); without a unit store it is not
        kept."""
        if self._units:
            self._submit(self._ops.unit(entry), entry.session_id, kept=False)

    def unit_audio(self, session_id: str, unit_id: str, *, sample_rate: int) -> UnitAudioWriter:
        """A writer for one admitted unit's audio as synthesized (for ``vocero review``): the
        speaker writes each PCM chunk it submits and closes it when the unit ends; the audio is
        kept in memory (bounded per unit) and saved in one queued write at close."""
        buffer = UnitAudioBuffer(unit_id, sample_rate=sample_rate)
        return UnitAudioWriter(buffer, self._save_audio(session_id))

    def _save_audio(self, session_id: str) -> Callable[[UnitAudioBuffer], None]:
        def save(buffer: UnitAudioBuffer) -> None:
            if self._units and buffer.size:
                self._submit(self._ops.unit_audio(session_id, buffer), session_id, kept=False)

        return save


class UnitAudioWriter:
    """One unit's synthesized audio on its way to the store: ``write`` chunks, then ``close``
    (idempotent; nothing is written after it)."""

    def __init__(self, buffer: UnitAudioBuffer, save: Callable[[UnitAudioBuffer], None]) -> None:
        self._buffer = buffer
        self._save = save
        self._closed = False

    def write(self, pcm16: bytes) -> None:
        if not self._closed:
            self._buffer.write(pcm16)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._save(self._buffer)
