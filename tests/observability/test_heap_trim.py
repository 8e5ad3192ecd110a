"""The periodic trim of the C heap (vocero/observability/heap_trim.py; the hour-long soak's
growth, docs/scaling.md "Soak"): driven by a virtual clock against a fake allocator, and the real
glibc trim against holes it made."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Callable

import anyio
import pytest

from tests.support.metric_samples import rendered_samples
from vocero.contracts.clock import VirtualClock
from vocero.observability import allocator
from vocero.observability.heap_trim import run_trims, trimming
from vocero.observability.metrics import Metrics

pytestmark = pytest.mark.anyio


class FakeTrimmer:
    """Answers the bytes each trim released from a script (``None``: cannot trim); signals
    every trim through ``trimmed`` so the test waits on an event, not on time."""

    def __init__(self, answers: list[int | None]) -> None:
        self.answers = answers
        self.calls = 0
        self.trimmed = anyio.Event()

    def trim(self) -> int | None:
        self.calls += 1
        self.trimmed.set()
        return self.answers.pop(0)

    async def next_trim(self) -> None:
        await self.trimmed.wait()
        self.trimmed = anyio.Event()


async def _inline(call: Callable[[], int | None]) -> int | None:
    return call()


async def test_a_trim_each_period_and_what_each_released_is_counted() -> None:
    clock, trimmer, released = VirtualClock(), FakeTrimmer([4096, 0, 12288]), list[int]()
    async with anyio.create_task_group() as tg:
        await tg.start(lambda task_status: run_trims(
            trimmer, clock, 60.0, released.append, offload=_inline, task_status=task_status))
        await clock.waited_on()
        clock.advance(59.9)
        assert trimmer.calls == 0  # not before the period
        for _ in range(3):
            clock.advance(60.0 - (clock.monotonic() % 60.0))
            await trimmer.next_trim()
            await clock.waited_on()  # the next period's wait has begun: the count is in
        assert trimmer.calls == 3
        assert released == [4096, 0, 12288]
        tg.cancel_scope.cancel()


async def test_period_zero_never_trims() -> None:
    clock, trimmer = VirtualClock(), FakeTrimmer([4096])
    with anyio.fail_after(5):
        await run_trims(trimmer, clock, 0, lambda _: None, offload=_inline)  # returns at once
    assert clock.next_deadline() is None
    assert trimmer.calls == 0


async def test_an_allocator_that_cannot_trim_is_not_asked_again() -> None:
    clock, trimmer, released = VirtualClock(), FakeTrimmer([None, 4096]), list[int]()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run_trims(trimmer, clock, 30.0, released.append, offload=_inline))
        await clock.waited_on()
        clock.advance(30.0)
        await trimmer.next_trim()
    # the task group ended on its own: the loop stopped after the first ``None``
    assert clock.next_deadline() is None
    assert trimmer.calls == 1
    assert released == []


async def test_serve_counts_the_released_bytes_on_metrics() -> None:
    """What ``serve`` wires (vocero/app/server.py): the bytes go to
    ``vocero_heap_trimmed_bytes_total``."""
    clock, trimmer, metrics = VirtualClock(), FakeTrimmer([2**20, 3 * 2**20]), Metrics()
    async with trimming(45.0, clock, metrics.heap_trimmed_bytes.inc, trimmer):
        for _ in range(2):
            await clock.waited_on()
            clock.advance(45.0)
            await trimmer.next_trim()
        await clock.waited_on()
    assert rendered_samples(metrics)[("vocero_heap_trimmed_bytes_total", ())] == 4 * 2**20


BLOCK = 64 * 1024
"""Under glibc's mmap threshold (128 KiB): served from an arena, 16 whole pages each."""


def test_glibc_trim_gives_back_the_free_pages_between_live_blocks() -> None:
    """The holes a freed block leaves between live ones stay resident (the arena cannot
    shrink from its top: ``heap().free`` counts them); ``trim`` hands their pages back."""
    gc.collect()
    allocator.trim()  # start from a trimmed heap: what follows is this test's own
    blocks = [bytearray(BLOCK) for _ in range(1600)]  # 100 MiB, every page touched
    del blocks[::2]
    holes = allocator.heap()
    assert holes is not None and holes.free >= 45 * 2**20
    released = allocator.trim()
    assert released is not None
    assert released >= 40 * 2**20
    after = allocator.heap()
    assert after is not None
    assert after.in_use >= holes.in_use - 2**20  # the live blocks stayed where they were
    assert len(blocks) == 800


_ARENAS = r"""
import ctypes, ctypes.util, sys, tempfile, threading
from vocero.observability import allocator

if sys.argv[1] == "single":
    assert allocator.single_arena()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.fopen.restype = ctypes.c_void_p
together = threading.Barrier(4)

def allocate() -> None:
    blocks = [libc.malloc(4096) for _ in range(64)]
    together.wait()  # all four threads alive at once: none can take over another's arena
    for block in blocks:
        libc.free(ctypes.c_void_p(block))

threads = [threading.Thread(target=allocate) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    stream = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    print(open(out.name).read().count("<heap nr="))
"""


@pytest.mark.parametrize(("mode", "arenas"), [("default", 5), ("single", 1)])
def test_single_arena_keeps_every_thread_in_the_main_arena(mode: str, arenas: int) -> None:
    """What ``serve`` sets while ``heap_trim_s`` > 0 (before any thread allocates): four
    threads allocating at once share the main arena, where glibc's default gives each its
    own (a fresh process each: the setting is for the whole process)."""
    done = subprocess.run([sys.executable, "-c", _ARENAS, mode], capture_output=True,
                          text=True, timeout=60, check=True)
    assert int(done.stdout.strip()) == arenas
