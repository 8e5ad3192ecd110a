"""The recorder's writer, woken from idle, waits briefly for the writes that follow the first
(a turn submits its turn, states and units while its answer is being produced) and applies them
in one batch, after the first audio rather than in its way (issue 46 item 5); whoever waits for
the writes (a flush, a session's flush) does not wait for that pause."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import pytest

from vocero.app.adapters.write_queue import WriteQueue

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Batches:
    """A store's ``batch``: records which writes each transaction applied."""

    def __init__(self) -> None:
        self.applied: list[list[str]] = []
        self.empty = anyio.Event()

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        self.applied.append([])
        yield

    def write(self, name: str) -> Callable[[], Awaitable[None]]:
        async def apply() -> None:
            self.applied[-1].append(name)

        return apply

    def pending(self, count: int) -> None:
        if count == 0:
            self.empty.set()


async def turn_work(steps: int) -> None:
    """A turn's answer being produced: the event loop turns over between its writes."""
    for _ in range(steps):
        await anyio.lowlevel.checkpoint()


async def test_the_writes_of_a_turn_are_applied_together_after_it() -> None:
    store = Batches()
    queue = WriteQueue(lambda _reason: None, batch=store.batch, on_pending=store.pending,
                       linger_s=0.5)  # fmt: skip
    async with anyio.create_task_group() as tg:
        await tg.start(queue.run)
        queue.submit(store.write("turn"), "ses_1")
        await turn_work(20)
        queue.submit(store.write("state"), "ses_1")
        await turn_work(20)
        queue.submit(store.write("unit"), "ses_1")
        assert store.applied == []  # nothing of the store's work ran during the turn
        with anyio.fail_after(5):
            await store.empty.wait()  # not a flush: the writer's own pause ends
        queue.stop()
    assert store.applied == [["turn", "state", "unit"]]


async def test_without_the_pause_the_writer_applies_each_write_as_it_comes() -> None:
    """The same turn with no pause: the store's work runs in the middle of it (what the pause
    moves out of the way)."""
    store = Batches()
    queue = WriteQueue(lambda _reason: None, batch=store.batch, on_pending=store.pending,
                       linger_s=0)  # fmt: skip
    async with anyio.create_task_group() as tg:
        await tg.start(queue.run)
        queue.submit(store.write("turn"), "ses_1")
        await turn_work(20)
        queue.submit(store.write("state"), "ses_1")
        await turn_work(20)
        assert store.applied == [["turn"], ["state"]]
        queue.stop()


@pytest.mark.parametrize("which", ["all", "session"])
async def test_a_flush_does_not_wait_for_the_pause(which: str) -> None:
    store = Batches()
    queue = WriteQueue(lambda _reason: None, batch=store.batch, linger_s=3600)
    async with anyio.create_task_group() as tg:
        await tg.start(queue.run)
        queue.submit(store.write("turn"), "ses_1")
        await turn_work(5)  # the writer is pausing now
        queue.submit(store.write("state"), "ses_1")
        with anyio.fail_after(5):
            await (queue.flush() if which == "all" else queue.flush_session("ses_1"))
        assert store.applied == [["turn", "state"]]
        queue.stop()
        queue.submit(store.write("late"), "ses_1")  # refused after the stop, as before
    assert store.applied == [["turn", "state"]]
