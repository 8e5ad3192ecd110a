"""The clock port's two implementations: the real one, and a virtual one tests move by hand.

Everything that waits on time (model and synthesis timeouts, pacing, playout grace, how long a
receipt is awaited, confirmation lifetimes) goes through a clock: ``monotonic``/``now`` to read
it, ``sleep``, ``move_on_after`` and ``fail_after`` to wait on it. With :class:`VirtualClock` a test
decides when time passes (:meth:`VirtualClock.advance`), so nothing waits on the wall clock and a
timeout is reached exactly when the test says.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

import anyio


class SystemClock:
    """The real clock; ``monotonic`` may be another monotonic source (benchmarks use
    ``time.perf_counter``)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.monotonic = monotonic

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)

    def move_on_after(
        self, seconds: float | None, *, shield: bool = False
    ) -> AbstractContextManager[anyio.CancelScope]:
        return anyio.move_on_after(seconds, shield=shield)

    def fail_after(
        self, seconds: float | None, *, shield: bool = False
    ) -> AbstractContextManager[anyio.CancelScope]:
        return anyio.fail_after(seconds, shield=shield)

    def deadline(self, seconds: float) -> Deadline:
        return Deadline(seconds, anyio.current_time, anyio.CancelScope())


class Deadline:
    """A timeout that can be pushed back: ``with clock.deadline(s) as d: ... d.extend()``. One
    cancel scope for a whole stream whose every item must come within ``s`` of the last (the
    model's next words), instead of a new scope per item. Raises ``TimeoutError`` on exit when
    the deadline cancelled it."""

    def __init__(
        self, seconds: float, now: Callable[[], float], scope: anyio.CancelScope
    ) -> None:
        self._seconds = seconds
        self._now = now
        self.scope = scope

    def extend(self) -> None:
        self.scope.deadline = self._now() + self._seconds

    def pause(self) -> None:
        self.scope.deadline = math.inf

    def __enter__(self) -> Deadline:
        self.extend()
        self.scope.__enter__()
        return self

    def __exit__(self, *exc: object) -> bool:
        suppressed = bool(self.scope.__exit__(*exc))  # type: ignore[arg-type]
        if self.scope.cancelled_caught and self._now() >= self.scope.deadline:
            raise TimeoutError
        return suppressed


@dataclass(order=True, slots=True)
class _Timer:
    deadline: float
    order: int
    action: Callable[[], None] = field(compare=False)
    fired: bool = field(default=False, compare=False)
    dropped: bool = field(default=False, compare=False)


class VirtualClock:
    """A clock that only moves when told to. Its timers fire, in deadline order, when
    :meth:`advance` passes their deadline."""

    def __init__(self, start: float = 1_780_000_000.0) -> None:
        self._mono = 0.0
        self._wall = start
        self._timers: list[_Timer] = []
        self._order = itertools.count()
        self._scheduled = anyio.Event()

    def monotonic(self) -> float:
        return self._mono

    def now(self) -> float:
        return self._wall

    def advance(self, seconds: float) -> None:
        """Move time on, firing every timer whose deadline is passed (in order)."""
        target = self._mono + seconds
        while self._timers and self._timers[0].deadline <= target:
            timer = heapq.heappop(self._timers)
            if timer.dropped:
                continue
            self._wall += timer.deadline - self._mono
            self._mono = timer.deadline
            timer.fired = True
            timer.action()
        self._wall += target - self._mono
        self._mono = target

    def next_deadline(self) -> float | None:
        """Seconds until the earliest pending timer, or ``None`` when none is pending."""
        live = [t for t in self._timers if not t.dropped]
        return None if not live else max(0.0, min(t.deadline for t in live) - self._mono)

    def _schedule(self, seconds: float, action: Callable[[], None]) -> _Timer:
        timer = _Timer(self._mono + max(0.0, seconds), next(self._order), action)
        heapq.heappush(self._timers, timer)
        self._scheduled.set()
        return timer

    async def waited_on(self) -> None:
        """Return once something waits on this clock (a timer is pending): then advancing it
        reaches that deadline rather than passing before anyone waited."""
        while self.next_deadline() is None:
            self._scheduled = anyio.Event()
            await self._scheduled.wait()

    def deadline(self, seconds: float) -> _VirtualDeadline:
        return _VirtualDeadline(self, seconds)

    async def sleep(self, seconds: float) -> None:
        woken = anyio.Event()
        timer = self._schedule(seconds, woken.set)
        try:
            await woken.wait()
        finally:
            timer.dropped = True

    @contextmanager
    def move_on_after(
        self, seconds: float | None, *, shield: bool = False
    ) -> Iterator[anyio.CancelScope]:
        with self._cancelled_after(seconds, shield) as (scope, _):
            yield scope

    @contextmanager
    def fail_after(
        self, seconds: float | None, *, shield: bool = False
    ) -> Iterator[anyio.CancelScope]:
        with self._cancelled_after(seconds, shield) as (scope, timer):
            yield scope
        if timer is not None and timer.fired and scope.cancelled_caught:
            raise TimeoutError

    @contextmanager
    def _cancelled_after(
        self, seconds: float | None, shield: bool
    ) -> Iterator[tuple[anyio.CancelScope, _Timer | None]]:
        """A scope this clock cancels ``seconds`` on (never for ``None``), with its timer,
        which is dropped when the scope ends."""
        with anyio.CancelScope(shield=shield) as scope:
            timer = None if seconds is None else self._schedule(seconds, scope.cancel)
            try:
                yield scope, timer
            finally:
                if timer is not None:
                    timer.dropped = True


class _VirtualDeadline:
    """:class:`Deadline` on a :class:`VirtualClock`: a timer re-armed at every ``extend``."""

    def __init__(self, clock: VirtualClock, seconds: float) -> None:
        self._clock = clock
        self._seconds = seconds
        self.scope = anyio.CancelScope()
        self._timer: _Timer | None = None

    def extend(self) -> None:
        self.pause()
        self._timer = self._clock._schedule(self._seconds, self.scope.cancel)

    def pause(self) -> None:
        if self._timer is not None:
            self._timer.dropped = True

    def __enter__(self) -> _VirtualDeadline:
        self.extend()
        self.scope.__enter__()
        return self

    def __exit__(self, *exc: object) -> bool:
        timer = self._timer
        self.pause()
        suppressed = bool(self.scope.__exit__(*exc))  # type: ignore[arg-type]
        if self.scope.cancelled_caught and timer is not None and timer.fired:
            raise TimeoutError
        return suppressed
