"""Persists conversations off the hot path: one writer task drains a queue in order, in batches.

The writer takes up to :data:`BATCH` queued writes at a time and, given the store's ``batch``
(:meth:`vocero.store.Store.batch`), applies them in one transaction: one commit and one turn of
SQLite's write lock for the lot, which is what keeps it ahead of 50 and more sessions (one
transaction per write fell behind and shed 14,595 writes in an hour-long soak, docs/scaling.md).

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
  counted (``queue_full``) and logged, never allowed to block a conversation.

Operations (the action plane's outbox) never pass through here: they commit in their own
transaction with their audit event. Every drop is counted through ``on_drop`` (the
``vocero_frames_dropped_total{link="recorder"}`` series the soak samples) and logged.
"""

from __future__ import annotations

import contextlib
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, cast

import anyio
import structlog

from vocero.store.audit import AuditLog
from vocero.store.engine import unreachable
from vocero.store.models import GenerationStatus, TurnSource
from vocero.store.repositories import Conversations
from vocero.store.units import UnitAudioBuffer, UnitEntry, UnitRepository

log = structlog.get_logger("vocero.recorder")

Write = Callable[[], Awaitable[Any]]
Batch = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens one transaction that the writes applied inside it join (``Store.batch``)."""
QUEUE = 4096
"""The backlog past which sheddable writes are refused and new sessions are turned away."""
BATCH = 64
"""Writes applied in one transaction at most (SQLite's write lock is held that long)."""


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """How a write the store could not take is tried again."""

    first_s: float = 0.05
    max_s: float = 2.0
    """The wait between attempts doubles from ``first_s`` up to this."""
    give_up_s: float = 600.0
    """A write still failing this long after its first attempt is dropped (and counted), so a
    fault mistaken for an outage cannot hold the record back for ever."""


@dataclass(frozen=True, slots=True)
class _Queued:
    write: Write
    session_id: str
    kept: bool
    """Carries a guarantee: never shed for room (see the module's docstring)."""


class _CannotSucceed(Exception):
    """The write at ``index`` of a batch failed for good (not an unreachable store)."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


class StoreRecorder:
    """Implements the orchestrator's ``SessionRecorder``; no call ever blocks. ``on_drop``
    hears why a write was lost: ``queue_full`` (a sheddable write past :data:`QUEUE`),
    ``stopped`` (submitted after shutdown began), ``write_failed`` (it can never succeed) or
    ``store_unreachable`` (given up after ``RetrySettings.give_up_s``)."""

    def __init__(
        self,
        conversations: Conversations,
        on_drop: Callable[[str], None],
        *,
        units: UnitRepository | None = None,
        audit: AuditLog | None = None,
        retry: RetrySettings | None = None,
        on_pending: Callable[[int], None] | None = None,
        batch: Batch | None = None,
    ) -> None:
        self._conversations = conversations
        self._units = units
        self._audit = audit
        self._on_drop = on_drop
        self._on_pending = on_pending or (lambda _n: None)
        """Hears the number of writes not yet applied whenever it changes (a gauge: the
        backlog an outage or an overload builds up)."""
        self._retry = retry or RetrySettings()
        self._batch = batch
        """``None``: each write is its own transaction."""
        self._queue: deque[_Queued] = deque()
        self._has_work = anyio.Event()
        self._stopped = False
        self._pending = 0
        self._by_session: Counter[str] = Counter()
        """Writes of each session queued or being applied (no entry once none are)."""
        self._shedding = False
        self._unreachable_since: float | None = None
        """When the write being retried first failed; ``None`` while the store takes writes."""
        self._wake = anyio.Event()
        """Set by a flush to end the writer's wait between attempts early."""
        self._flushing: list[anyio.Event] = []
        """Flushes waiting: released when nothing is pending, or when an attempt failed."""
        self._session_flushes: dict[str, list[anyio.Event]] = {}
        """Flushes of one session waiting: released when none of its writes is pending, or
        when an attempt failed."""

    @property
    def pending(self) -> int:
        """Writes queued or being tried, not yet applied."""
        return self._pending

    @property
    def backlogged(self) -> bool:
        """The backlog passed :data:`QUEUE`: sheddable writes are refused, and new sessions
        should be turned away until the writer catches up (back-pressure)."""
        return self._pending >= QUEUE

    @property
    def store_unreachable(self) -> bool:
        """The last attempt found the store unreachable; its write and all after it are kept."""
        return self._unreachable_since is not None

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        try:
            while True:
                if not self._queue:
                    if self._stopped:
                        return
                    self._has_work = anyio.Event()
                    await self._has_work.wait()
                    continue
                batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
                try:
                    await self._apply(batch)
                finally:
                    self._done(batch)
        except anyio.get_cancelled_exc_class():
            if self._pending:
                log.error("recorder.unwritten", writes=self._pending)
            raise

    def _done(self, batch: list[_Queued]) -> None:
        """The writes of ``batch`` are applied (or dropped): release who waits for them."""
        self._pending -= len(batch)
        for item in batch:
            left = self._by_session[item.session_id] - 1
            if left > 0:
                self._by_session[item.session_id] = left
                continue
            del self._by_session[item.session_id]
            for waiting in self._session_flushes.pop(item.session_id, ()):
                waiting.set()
        self._on_pending(self._pending)
        if self._pending == 0:
            self._shedding = False
            self._release_flushes()

    async def _apply(self, batch: list[_Queued]) -> None:
        """Apply ``batch``: together when the store batches, else one write at a time."""
        if self._batch is None:
            for item in batch:
                await self._apply_together([item])
        else:
            await self._apply_together(batch)

    async def _apply_together(self, batch: list[_Queued]) -> None:
        """Apply the writes in one transaction, trying again while the store cannot be reached;
        a write that can never succeed is dropped and the others are applied without it."""
        delay = self._retry.first_s
        items = list(batch)
        while items:
            try:
                await self._attempt(items)
            except _CannotSucceed as failed:
                log.error("recorder.write_failed", exc_info=failed.__cause__,
                          kept=items[failed.index].kept)
                self._on_drop("write_failed")
                del items[failed.index]
                continue
            except Exception as exc:
                if not unreachable(exc):  # at commit: which write is unknown, one at a time
                    if len(items) == 1:
                        log.exception("recorder.write_failed", kept=items[0].kept)
                        self._on_drop("write_failed")
                        return
                    for item in items:
                        await self._apply_together([item])
                    return
                if not await self._wait_to_retry(exc, delay):
                    del items[0]  # given up: the next write gets its own allowance
                    continue
                delay = min(delay * 2, self._retry.max_s)
            else:
                if self._unreachable_since is not None:
                    log.info("recorder.store_reachable", pending=self._pending,
                             after_s=round(anyio.current_time() - self._unreachable_since, 1))
                    self._unreachable_since = None
                return

    async def _attempt(self, items: list[_Queued]) -> None:
        """One transaction for ``items``; raises :class:`_CannotSucceed` naming the write that
        failed for good, or what failed otherwise (the store, or the commit)."""
        transaction = self._batch() if self._batch is not None else contextlib.nullcontext()
        index: int | None = None
        try:
            with anyio.CancelScope(shield=True):
                async with transaction:
                    for index, item in enumerate(items):  # noqa: B007 (read on failure)
                        await item.write()
                    index = None
        except Exception as exc:
            if index is not None and not unreachable(exc):
                raise _CannotSucceed(index) from exc
            raise

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
        if self._unreachable_since is not None:
            for waiting_for_session in self._session_flushes.values():
                for waiting in waiting_for_session:
                    waiting.set()
            self._session_flushes.clear()

    async def flush(self) -> None:
        """Wait until every queued write has been applied, or, while the store cannot be
        reached, until one more attempt has found it so (tried at once, not after the backoff):
        what follows a flush reads the store, and would fail the same way. The writes are kept."""
        if self._pending == 0:
            return
        done = anyio.Event()
        self._flushing.append(done)
        self._wake.set()
        try:
            await done.wait()
        finally:
            with contextlib.suppress(ValueError):
                self._flushing.remove(done)

    async def flush_session(self, session_id: str) -> None:
        """Wait until the writes of ``session_id`` queued so far have been applied (or, while
        the store cannot be reached, one more attempt found it so), not for anyone else's: its
        queued writes move ahead of every other session's (their order kept), so the wait is
        at most the batch being applied and the session's own. What a resume needs."""
        if not self._by_session.get(session_id):
            return
        mine = [item for item in self._queue if item.session_id == session_id]
        if mine:
            others = [item for item in self._queue if item.session_id != session_id]
            self._queue.clear()
            self._queue.extend(mine)
            self._queue.extend(others)
        done = anyio.Event()
        waiting = self._session_flushes.setdefault(session_id, [])
        waiting.append(done)
        self._wake.set()
        try:
            await done.wait()
        finally:
            if not done.is_set():  # cancelled (a bounded wait ran out): no waiter left behind
                with contextlib.suppress(ValueError):
                    waiting.remove(done)
                if not waiting and self._session_flushes.get(session_id) is waiting:
                    del self._session_flushes[session_id]

    def _submit(self, write: Write, session_id: str = "", *, kept: bool = True) -> None:
        if self._stopped:
            log.error("recorder.write_dropped", reason="stopped", kept=kept)
            self._on_drop("stopped")  # after shutdown began
            return
        if not kept and self._pending >= QUEUE:
            if not self._shedding:
                self._shedding = True
                log.warning("recorder.shedding", pending=self._pending)
            self._on_drop("queue_full")
            return
        self._queue.append(_Queued(write, session_id, kept))
        self._by_session[session_id] += 1
        self._pending += 1
        self._on_pending(self._pending)
        self._has_work.set()

    def turn(self, session_id: str, turn_id: str, source: str, text: str) -> None:
        c = self._conversations
        kind = cast(TurnSource, source)
        self._submit(
            lambda: c.add_turn(session_id=session_id, turn_id=turn_id, source=kind, text=text),
            session_id,
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
            ),
            session_id,
        )

    def state(self, session_id: str, state: str) -> None:
        c = self._conversations
        self._submit(lambda: c.update_session(session_id, state=state), session_id, kept=False)

    def configuration(self, session_id: str, effective: dict[str, Any]) -> None:
        """The effective configuration an update applied."""
        c = self._conversations
        self._submit(lambda: c.update_session(session_id, effective=effective), session_id)

    def close(self, session_id: str, state: str) -> None:
        c = self._conversations
        self._submit(lambda: c.close_session(session_id, state=state), session_id)

    def withdraw_resume(self, session_id: str) -> None:
        """The session's resume token stops working (its client closed it): queued when the
        direct write failed, so that it is withdrawn once the store answers again."""
        c = self._conversations
        self._submit(lambda: c.update_session(session_id, resume_token_hash=""), session_id)

    def audit(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        """An audit event of code that cannot wait for the store (a connection closing), with
        the time it happened: appended in order, after an outage too."""
        audit = self._audit
        if audit is not None:
            at = audit.now()
            self._submit(lambda: audit.record(kind, data, session_id=session_id, at=at),
                         session_id)

    def unit(self, entry: UnitEntry) -> None:
        """A spoken unit planned, or decided (docs/grounding.md); without a unit store it is not
        kept."""
        units = self._units
        if units is not None:
            self._submit(lambda: units.record(entry), entry.session_id, kept=False)

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
                self._submit(lambda: units.save_audio(session_id, buffer), session_id,
                             kept=False)

        return save

    def stop(self) -> None:
        """No write is taken from now on; the writer applies what is queued, then returns."""
        self._stopped = True
        self._has_work.set()


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
