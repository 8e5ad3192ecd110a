"""Keeps the C allocator's free pages given back to the kernel (``serve``, ``heap_trim_s``).

glibc gives each thread that allocates while the others hold their arenas an arena of its own,
and keeps what is freed there: the store's worker threads (the recorder's batches, SQLite's
statements and page caches) come and go, and the free space at the top of their arenas stayed
resident. In the sim soak at 50 sessions that was all of the resident growth after warm-up
(docs/scaling.md "Soak": nine thread arenas holding 27 MB with 7 MB in use after 20 minutes, the
C heap in use flat). ``malloc_trim`` never shrinks a thread arena's top, so with ``heap_trim_s``
above 0 ``serve`` first keeps every thread in the main arena
(:func:`vocero.observability.allocator.single_arena`), then trims every ``heap_trim_s`` seconds:
the free pages inside the arena and the free space at its top go back to the kernel. A trim takes
about 1 ms (10 ms when it releases tens of MB) and runs in a worker thread, off the event loop;
the bytes it released are counted (``vocero_heap_trimmed_bytes_total``).

The allocator is a port (:class:`Trimmer`): :data:`GLIBC` in the server, a fake in tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Protocol

import anyio
import anyio.to_thread
import structlog
from anyio.abc import TaskStatus

from vocero.contracts.ports import Timers
from vocero.observability import allocator

log = structlog.get_logger(__name__)


class Trimmer(Protocol):
    def trim(self) -> int | None:
        """Hand the allocator's free pages back; the bytes released, ``None`` where it cannot."""
        ...


class _Glibc:
    def trim(self) -> int | None:
        return allocator.trim()


GLIBC: Trimmer = _Glibc()


async def _in_thread(call: Callable[[], int | None]) -> int | None:
    return await anyio.to_thread.run_sync(call)


async def run_trims(
    trimmer: Trimmer, clock: Timers, period_s: float, on_released: Callable[[int], None], *,
    offload: Callable[[Callable[[], int | None]], Awaitable[int | None]] = _in_thread,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """A trim every ``period_s`` seconds until cancelled (0: never); ``on_released`` is told
    the bytes each one released. Stops for good where the allocator cannot trim."""
    task_status.started()
    if period_s <= 0:
        return
    while True:
        await clock.sleep(period_s)
        released = await offload(trimmer.trim)
        if released is None:
            log.info("heap.trim_unavailable")
            return
        on_released(released)


@asynccontextmanager
async def trimming(period_s: float, clock: Timers, on_released: Callable[[int], None],
                   trimmer: Trimmer = GLIBC) -> AsyncIterator[None]:
    """Trims for as long as the block runs (what ``serve`` wraps its runtime in)."""
    async with anyio.create_task_group() as tg:
        await tg.start(run_trims, trimmer, clock, period_s, on_released)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()
