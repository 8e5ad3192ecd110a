"""Admission control for one model: a bounded FIFO queue in front of a fixed number of slots.

docs/architecture.md "Admission and back-pressure": every model has its own queue, the queue is
bounded, queued work carries a deadline and expired work is never started. A request that cannot
even queue is rejected at once with :class:`~vocero.contracts.errors.CapacityError` ("service
busy"), which is cheaper for the caller than waiting for a slot it will not get in time.

Cancellation is always honoured first: a caller cancelled while queued leaves the queue at once,
and a slot that was handed to it in the same instant passes on to the next waiter.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from vocero.contracts.errors import CapacityError
from vocero.contracts.ports import Health, RunnerStatus


@dataclass(slots=True, eq=False)
class _Waiter:
    event: anyio.Event = field(default_factory=anyio.Event)
    granted: bool = False


class Admission:
    """``capacity`` concurrent jobs; at most ``max_queue`` more may wait for one of them.

    ``async with admission.slot(deadline_s): ...`` runs the body holding a slot. It raises
    ``CapacityError`` immediately when the queue is full, and when ``deadline_s`` passes while
    the caller is still queued. The deadline bounds the wait only, never the work itself.
    """

    def __init__(self, name: str, *, capacity: int = 1, max_queue: int = 4) -> None:
        if capacity < 1 or max_queue < 0:
            raise ValueError("capacity must be >= 1 and max_queue >= 0")
        self.name = name
        self.capacity = capacity
        self.max_queue = max_queue
        self.rejected = 0
        self.expired = 0
        self._in_flight = 0
        self._waiters: deque[_Waiter] = deque()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def queued(self) -> int:
        return len(self._waiters)

    def status(self, health: Health, detail: str = "") -> RunnerStatus:
        """The runner's status with this queue's load; ``detail`` defaults to the queue counters."""
        counters = f"queued {self.queued}, rejected {self.rejected}, expired {self.expired}"
        return RunnerStatus(
            health=health,
            in_flight=self._in_flight,
            capacity=self.capacity,
            detail=detail or counters,
        )

    def full(self) -> bool:
        """True when a new request would be rejected without waiting."""
        return self._in_flight >= self.capacity and len(self._waiters) >= self.max_queue

    @asynccontextmanager
    async def slot(
        self, deadline_s: float | None = None, *, wait: bool = True
    ) -> AsyncIterator[None]:
        """Hold a slot for the body. ``wait=False`` never queues: best-effort work (a partial
        transcript) is dropped rather than delaying work that counts."""
        if not wait and self._in_flight >= self.capacity:
            self.rejected += 1
            raise CapacityError(f"{self.name}: busy")
        await self._acquire(math.inf if deadline_s is None else deadline_s)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, deadline_s: float) -> None:
        if self._in_flight < self.capacity and not self._waiters:
            self._in_flight += 1
            return
        if len(self._waiters) >= self.max_queue:
            self.rejected += 1
            raise CapacityError(f"{self.name}: queue full")
        waiter = _Waiter()
        self._waiters.append(waiter)
        try:
            with anyio.move_on_after(deadline_s):
                await waiter.event.wait()
        except BaseException:
            self._abandon(waiter)
            raise
        if not waiter.granted:
            self._abandon(waiter)
            self.expired += 1
            raise CapacityError(f"{self.name}: deadline passed while queued")

    def _abandon(self, waiter: _Waiter) -> None:
        if waiter.granted:
            self._release()
        else:
            self._waiters.remove(waiter)

    def _release(self) -> None:
        if self._waiters:
            waiter = self._waiters.popleft()
            waiter.granted = True
            waiter.event.set()
        else:
            self._in_flight -= 1
