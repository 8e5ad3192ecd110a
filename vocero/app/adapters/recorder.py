"""Persists conversations off the hot path: one writer task drains a bounded queue in order.

A write the store could not take (it was unreachable: restarted, failed over, or a deadlock
rolled it back) is kept and tried again, with backoff, before any later write, so a store outage
delays the conversation's record but loses none of it and keeps its order. Every write is
idempotent (a turn by its id, the rest upserts), so a commit whose acknowledgement was lost may
be sent again. Only a write that can never succeed (a constraint, a session taken over) is
dropped, and so is what does not fit the queue; both are counted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from vocero.store.audit import AuditLog
from vocero.store.engine import unreachable
from vocero.store.models import GenerationStatus, TurnSource
from vocero.store.repositories import Conversations
from vocero.store.units import UnitAudioBuffer, UnitEntry, UnitRepository

log = structlog.get_logger("vocero.recorder")

Write = Callable[[], Awaitable[Any]]
QUEUE = 4096


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """How a write the store could not take is tried again."""

    first_s: float = 0.05
    max_s: float = 2.0
    """The wait between attempts doubles from ``first_s`` up to this."""
    give_up_s: float = 600.0
    """A write still failing this long after its first attempt is dropped (and counted), so a
    fault mistaken for an outage cannot hold the record back for ever. Outages longer than the
    queue's worth of writes drop the newest writes first (``queue_full``)."""


class StoreRecorder:
    """Implements the orchestrator's ``SessionRecorder``. When the queue is full (the database
    is far behind, or away) a write is refused and counted, never allowed to block a
    conversation. ``on_drop`` hears why a write was lost: ``queue_full``, ``stopped`` (submitted
    after shutdown began), ``write_failed`` (it can never succeed) or ``store_unreachable``
    (given up after ``RetrySettings.give_up_s``)."""

    def __init__(
        self,
        conversations: Conversations,
        on_drop: Callable[[str], None],
        *,
        units: UnitRepository | None = None,
        audit: AuditLog | None = None,
        retry: RetrySettings | None = None,
        on_pending: Callable[[int], None] | None = None,
    ) -> None:
        self._conversations = conversations
        self._units = units
        self._audit = audit
        self._on_drop = on_drop
        self._on_pending = on_pending or (lambda _n: None)
        """Hears the number of writes not yet applied whenever it changes (a gauge: the
        backlog an outage builds up)."""
        self._retry = retry or RetrySettings()
        self._send: MemoryObjectSendStream[Write]
        self._receive: MemoryObjectReceiveStream[Write]
        self._send, self._receive = anyio.create_memory_object_stream[Write](QUEUE)
        self._pending = 0
        self._unreachable_since: float | None = None
        """When the write being retried first failed; ``None`` while the store takes writes."""
        self._wake = anyio.Event()
        """Set by :meth:`flush` to end the writer's wait between attempts early."""
        self._flushing: list[anyio.Event] = []
        """Flushes waiting: released when nothing is pending, or when an attempt failed."""

    @property
    def pending(self) -> int:
        """Writes queued or being tried, not yet applied."""
        return self._pending

    @property
    def store_unreachable(self) -> bool:
        """The last attempt found the store unreachable; its write and all after it are kept."""
        return self._unreachable_since is not None

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        try:
            async with self._receive:
                async for write in self._receive:
                    try:
                        await self._apply(write)
                    finally:
                        self._pending -= 1
                        self._on_pending(self._pending)
                        if self._pending == 0:
                            self._release_flushes()
        except anyio.get_cancelled_exc_class():
            if self._pending:
                log.error("recorder.unwritten", writes=self._pending)
            raise

    async def _apply(self, write: Write) -> None:
        """Apply one write, trying again while the store cannot be reached."""
        delay = self._retry.first_s
        while True:
            try:
                with anyio.CancelScope(shield=True):
                    await write()
            except Exception as exc:
                if not unreachable(exc):
                    log.exception("recorder.write_failed")
                    self._on_drop("write_failed")
                    return
                if not await self._wait_to_retry(exc, delay):
                    return
                delay = min(delay * 2, self._retry.max_s)
            else:
                if self._unreachable_since is not None:
                    log.info("recorder.store_reachable", pending=self._pending,
                             after_s=round(anyio.current_time() - self._unreachable_since, 1))
                    self._unreachable_since = None
                return

    async def _wait_to_retry(self, exc: Exception, delay: float) -> bool:
        """After an attempt found the store unreachable: wait ``delay`` (less if a flush asks)
        and say to try again, or give the write up (False) once it has failed for
        ``give_up_s``."""
        now = anyio.current_time()
        if self._unreachable_since is None:
            self._unreachable_since = now
            log.warning("recorder.store_unreachable", error=repr(exc), pending=self._pending)
        self._release_flushes()  # a flush waits for one attempt, not for the outage
        if now - self._unreachable_since >= self._retry.give_up_s:
            log.error("recorder.write_abandoned", error=repr(exc),
                      after_s=round(now - self._unreachable_since, 1))
            self._on_drop("store_unreachable")
            self._unreachable_since = now  # the next write gets its own allowance
            return False
        self._wake = anyio.Event()
        with anyio.move_on_after(delay):
            await self._wake.wait()
        return True

    def _release_flushes(self) -> None:
        for waiting in self._flushing:
            waiting.set()
        self._flushing.clear()

    async def flush(self) -> None:
        """Wait until every queued write has been applied, or, while the store cannot be
        reached, until one more attempt has found it so (tried at once, not after the backoff):
        what follows a flush reads the store, and would fail the same way. The writes are kept."""
        if self._pending == 0:
            return
        done = anyio.Event()
        self._flushing.append(done)
        self._wake.set()
        await done.wait()

    def _submit(self, write: Write) -> None:
        try:
            self._send.send_nowait(write)
        except anyio.WouldBlock:
            self._on_drop("queue_full")
            return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._on_drop("stopped")  # after shutdown began
            return
        self._pending += 1
        self._on_pending(self._pending)

    def turn(self, session_id: str, turn_id: str, source: str, text: str) -> None:
        c = self._conversations
        kind = cast(TurnSource, source)
        self._submit(
            lambda: c.add_turn(session_id=session_id, turn_id=turn_id, source=kind, text=text)
        )

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
        c = self._conversations
        self._submit(
            lambda: c.upsert_generation(
                generation_id=generation_id,
                session_id=session_id,
                turn_id=turn_id,
                status=cast(GenerationStatus, status),
                generated_text=generated_text,
                heard_text=heard_text,
                played_ms=int(played_ms),
                sent_ms=int(sent_ms),
            )
        )

    def state(self, session_id: str, state: str) -> None:
        c = self._conversations
        self._submit(lambda: c.update_session(session_id, state=state))

    def configuration(self, session_id: str, effective: dict[str, Any]) -> None:
        """The effective configuration an update applied."""
        c = self._conversations
        self._submit(lambda: c.update_session(session_id, effective=effective))

    def close(self, session_id: str, state: str) -> None:
        c = self._conversations
        self._submit(lambda: c.close_session(session_id, state=state))

    def withdraw_resume(self, session_id: str) -> None:
        """The session's resume token stops working (its client closed it): queued when the
        direct write failed, so that it is withdrawn once the store answers again."""
        c = self._conversations
        self._submit(lambda: c.update_session(session_id, resume_token_hash=""))

    def audit(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        """An audit event of code that cannot wait for the store (a connection closing), with
        the time it happened: appended in order, after an outage too."""
        audit = self._audit
        if audit is not None:
            at = audit.now()
            self._submit(lambda: audit.record(kind, data, session_id=session_id, at=at))

    def unit(self, entry: UnitEntry) -> None:
        """A spoken unit planned, or decided (docs/grounding.md); without a unit store it is not
        kept."""
        units = self._units
        if units is not None:
            self._submit(lambda: units.record(entry))

    def unit_audio(self, session_id: str, unit_id: str, *, sample_rate: int) -> UnitAudioWriter:
        """A writer for one admitted unit's audio as synthesized (for ``vocero review``): the
        speaker writes each PCM chunk it submits and closes it when the unit ends; the audio is
        kept in memory (bounded per unit) and saved in one queued write at close."""
        buffer = UnitAudioBuffer(unit_id, sample_rate=sample_rate)
        return UnitAudioWriter(buffer, self._save_audio(session_id))

    def _save_audio(self, session_id: str) -> Callable[[UnitAudioBuffer], None]:
        units = self._units

        def save(buffer: UnitAudioBuffer) -> None:
            if units is not None and buffer.size:
                self._submit(lambda: units.save_audio(session_id, buffer))

        return save

    def stop(self) -> None:
        self._send.close()


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
