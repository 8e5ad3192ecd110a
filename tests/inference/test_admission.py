from __future__ import annotations

import anyio
import pytest

from vocero.contracts.errors import CapacityError, ErrorCode
from vocero.inference.admission import Admission

pytestmark = pytest.mark.anyio


async def test_a_free_slot_is_taken_at_once() -> None:
    admission = Admission("m", capacity=2, max_queue=0)
    async with admission.slot(1.0), admission.slot(1.0):
        assert admission.in_flight == 2
    assert admission.in_flight == 0


async def test_a_full_queue_rejects_without_waiting() -> None:
    admission = Admission("m", capacity=1, max_queue=1)
    holder, queued = anyio.Event(), anyio.Event()

    async def hold() -> None:
        async with admission.slot():
            await holder.wait()

    async def wait_in_queue() -> None:
        async with admission.slot():
            queued.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(wait_in_queue)
        await anyio.wait_all_tasks_blocked()
        assert admission.full()
        with anyio.fail_after(0.05), pytest.raises(CapacityError) as raised:
            async with admission.slot(10.0):
                pass
        assert raised.value.code is ErrorCode.CAPACITY_EXHAUSTED
        assert raised.value.retryable
        holder.set()
    assert queued.is_set()
    assert (admission.in_flight, admission.queued, admission.rejected) == (0, 0, 1)


async def test_the_deadline_bounds_the_wait_in_the_queue() -> None:
    admission = Admission("m", capacity=1, max_queue=4)
    async with admission.slot():
        with pytest.raises(CapacityError, match="deadline"):
            async with admission.slot(0.01):
                pass
    assert (admission.in_flight, admission.queued, admission.expired) == (0, 0, 1)


async def test_cancelled_waiters_leave_the_queue() -> None:
    admission = Admission("m", capacity=1, max_queue=1)
    async with admission.slot():
        with anyio.move_on_after(0.01):
            async with admission.slot():
                pytest.fail("never admitted")
        assert admission.queued == 0
        async with anyio.create_task_group() as tg:  # the freed place in the queue is usable

            async def queue_again() -> None:
                with pytest.raises(CapacityError):
                    async with admission.slot(0.01):
                        pass

            tg.start_soon(queue_again)
    assert admission.in_flight == 0


async def test_a_slot_granted_to_a_cancelled_waiter_passes_on() -> None:
    admission = Admission("m", capacity=1, max_queue=2)
    order: list[str] = []
    release = anyio.Event()

    async def first() -> None:
        async with admission.slot():
            await release.wait()

    async def second(scope_box: list[anyio.CancelScope]) -> None:
        with anyio.CancelScope() as scope:
            scope_box.append(scope)
            async with admission.slot():
                order.append("second")

    async def third() -> None:
        async with admission.slot():
            order.append("third")

    box: list[anyio.CancelScope] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(second, box)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(third)
        await anyio.wait_all_tasks_blocked()
        release.set()  # hands the slot to "second" ...
        box[0].cancel()  # ... which is cancelled before it runs: "third" must get it
    assert order == ["third"]
    assert (admission.in_flight, admission.queued) == (0, 0)


async def test_waiters_are_served_in_order() -> None:
    admission = Admission("m", capacity=1, max_queue=5)
    served: list[int] = []
    gate = anyio.Event()

    async def job(i: int) -> None:
        async with admission.slot():
            served.append(i)
            await gate.wait()

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(job, i)
            await anyio.wait_all_tasks_blocked()
        gate.set()
    assert served == [0, 1, 2, 3]


async def test_best_effort_work_never_queues() -> None:
    admission = Admission("m", capacity=1, max_queue=5)
    async with admission.slot():
        with pytest.raises(CapacityError, match="busy"):
            async with admission.slot(wait=False):
                pass
    async with admission.slot(wait=False):
        assert admission.in_flight == 1


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError):
        Admission("m", capacity=0)
