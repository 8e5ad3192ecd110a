"""The recorder's write queue (:mod:`.recorder`): one writer task drains it in order, in batches,
trying writes again while the store cannot be reached and shedding only sheddable writes past
:data:`QUEUE` (the recorder's docstring says which are which)."""

from __future__ import annotations

import contextlib
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import anyio
import structlog

from vocero.store.engine import WriteFailedError, unreachable

log = structlog.get_logger("vocero.recorder")

Write = Callable[..., Any]
"""A queued write: awaited with no argument (``Write`` of the default :data:`Apply`), or
whatever the queue's ``apply`` takes (the store's Core writes)."""
Batch = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens one transaction that the writes applied inside it join (``Store.batch``)."""
Apply = Callable[[Sequence[Write]], Awaitable[None]]
"""Applies writes in one transaction; a write that failed surfaces as
:class:`~vocero.store.engine.WriteFailedError` naming it (``Store.apply``)."""

QUEUE = 4096
"""The backlog past which sheddable writes are refused and new sessions are turned away."""
BATCH = 64
"""Writes applied in one transaction at most (SQLite's write lock is held that long)."""
LINGER_S = 0.02
"""How long the writer, woken from idle by a write, waits for the writes that follow it before
it takes a batch (a flush ends the wait at once). A typed turn submits its writes (the turn,
states, units) while its answer is being produced: applied at once, the store's work
(SQLAlchemy on the event loop, SQLite on its thread) ran between the turn and its first audio
frame, 1.3 ms of the loop's time a turn on the sim runners (issue 46 item 5); after the wait
they are applied in one batch, once the first audio is out."""


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """How a write the store could not take is tried again."""

    first_s: float = 0.05
    max_s: float = 2.0
    """The wait between attempts doubles from ``first_s`` up to this."""
    give_up_s: float = 600.0
    """A write still failing this long after its first attempt is dropped (and counted), so a
    fault mistaken for an outage cannot hold the record back for ever."""


@dataclass(frozen=True, slots=True, eq=False)
class _Queued:
    write: Write
    session_id: str
    kept: bool
    """Carries a guarantee: never shed for room (see the module's docstring)."""
    latest: str = ""
    """A write of which only the session's latest matters (its state): a newer one of the
    same name replaces it while it is still queued."""


class _CannotSucceed(Exception):
    """The write at ``index`` of a batch failed for good (not an unreachable store)."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def awaiting(batch: Batch | None) -> Apply:
    """The :data:`Apply` of writes that are awaited one after the other, inside ``batch``'s
    transaction when there is one."""

    async def apply(writes: Sequence[Write]) -> None:
        transaction = batch() if batch is not None else contextlib.nullcontext()
        index: int | None = None
        try:
            async with transaction:
                for index, write in enumerate(writes):  # noqa: B007 (read on failure)
                    await write()
                index = None
        except Exception as exc:
            if index is not None:
                raise WriteFailedError(index) from exc
            raise

    return apply


class WriteQueue:
    """Queued writes, applied in order by :meth:`run`; no call but the flushes ever waits.
    ``on_drop`` hears why a write was lost: ``queue_full`` (a sheddable write past
    :data:`QUEUE`), ``stopped`` (submitted after shutdown began), ``write_failed`` (it can never
    succeed) or ``store_unreachable`` (given up after ``RetrySettings.give_up_s``).

    Writes are applied by ``apply`` (one call, one transaction), up to :data:`BATCH` at a time
    when ``batched``, else one at a time; without ``apply`` they are awaited, in ``batch``'s
    transaction when given (then batched)."""

    def __init__(
        self,
        on_drop: Callable[[str], None],
        *,
        retry: RetrySettings | None = None,
        on_pending: Callable[[int], None] | None = None,
        batch: Batch | None = None,
        linger_s: float = LINGER_S,
        apply: Apply | None = None,
        batched: bool = False,
    ) -> None:
        self._on_drop = on_drop
        self._linger_s = linger_s
        self._on_pending = on_pending or (lambda _n: None)
        """Hears the number of writes not yet applied whenever it changes (a gauge: the
        backlog an outage or an overload builds up)."""
        self._retry = retry or RetrySettings()
        self._apply_writes = apply or awaiting(batch)
        self._batched = batched if apply is not None else batch is not None
        """``False``: each write is its own transaction."""
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
        self._latest: dict[tuple[str, str], _Queued] = {}
        """The queued (not yet taken) write of each session and ``latest`` name."""
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
                    await self._linger()
                    continue
                batch = [self._take() for _ in range(min(BATCH, len(self._queue)))]
                try:
                    await self._apply(batch)
                finally:
                    self._done(batch)
        except anyio.get_cancelled_exc_class():
            if self._pending:
                log.error("recorder.unwritten", writes=self._pending)
            raise

    async def _linger(self) -> None:
        """Let the writes that follow the first one (and the work that submitted them) come
        before the batch is taken: up to ``linger_s``, unless someone waits for the writes (a
        flush ends the wait; a stop during it takes effect when it ends)."""
        if self._linger_s <= 0 or self._stopped or self._flushing or self._session_flushes:
            return
        self._wake = anyio.Event()
        with anyio.move_on_after(self._linger_s):
            await self._wake.wait()

    def _take(self) -> _Queued:
        item = self._queue.popleft()
        if item.latest and self._latest.get((item.session_id, item.latest)) is item:
            del self._latest[(item.session_id, item.latest)]  # being applied: not replaceable
        return item

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
        if not self._batched:
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
        try:
            with anyio.CancelScope(shield=True):
                await self._apply_writes([item.write for item in items])
        except WriteFailedError as failed:
            cause = failed.__cause__ if isinstance(failed.__cause__, Exception) else failed
            if not unreachable(cause):
                raise _CannotSucceed(failed.index) from cause
            raise cause from cause.__cause__

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

    def submit(self, write: Write, session_id: str = "", *, kept: bool = True,
               latest: str = "") -> None:
        """Queue ``write``. With ``latest``, a write of the session's with that name still
        queued is replaced: it never runs, and the new one takes its place at the end (what
        would have followed it is unchanged, since only the session's last value of it
        counts). Under a backlog this is what keeps a session's state writes from piling up."""
        if self._stopped:
            log.error("recorder.write_dropped", reason="stopped", kept=kept)
            self._on_drop("stopped")  # after shutdown began
            return
        earlier = self._latest.pop((session_id, latest), None) if latest else None
        if earlier is not None:  # replaced: the backlog does not grow, so nothing is shed
            self._queue.remove(earlier)
            self._pending -= 1
            self._by_session[session_id] -= 1  # the new write keeps the session's count up
        elif not kept and self._pending >= QUEUE:
            if not self._shedding:
                self._shedding = True
                log.warning("recorder.shedding", pending=self._pending)
            self._on_drop("queue_full")
            return
        item = _Queued(write, session_id, kept, latest)
        if latest:
            self._latest[(session_id, latest)] = item
        self._queue.append(item)
        self._by_session[session_id] += 1
        self._pending += 1
        self._on_pending(self._pending)
        self._has_work.set()

    def stop(self) -> None:
        """No write is taken from now on; the writer applies what is queued, then returns."""
        self._stopped = True
        self._has_work.set()


