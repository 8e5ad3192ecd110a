"""Gauges read when ``/metrics`` is scraped: what the process and the store hold now.

Runner health (``vocero_runner_healthy``) comes from the runners' own status; the follow-up
backlog (``vocero_followups_overdue``) is counted in the store, so every worker reports the
same figure. The alert rules on both are in deploy/prometheus/vocero-rules.yaml. The event
loop's own (``vocero_asyncio_tasks``, ``vocero_event_loop_lag_seconds``: how long a callback
scheduled at scrape waited) and the C heap's (``vocero_process_heap_bytes``: in use and free
inside the allocator's arenas) are what ``vocero bench soak`` watches (docs/scaling.md).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from sqlalchemy import func, select

from vocero.inference.runner_set import RunnerSet
from vocero.observability import allocator
from vocero.observability.metrics import Metrics
from vocero.store.engine import Store
from vocero.store.models import FollowupRow

WAITING = ("scheduled", "retry", "awaiting_approval")
"""Statuses of a follow-up that still owes a call (docs/followups.md "The queue")."""


async def loop_lag_s() -> float:
    """How long a callback scheduled now waits for the event loop to run it (seconds)."""
    loop = asyncio.get_running_loop()
    ran: asyncio.Future[float] = loop.create_future()
    start = time.perf_counter()  # uvloop's loop.time() counts whole milliseconds

    def mark() -> None:
        if not ran.done():
            ran.set_result(time.perf_counter())

    loop.call_soon(mark)
    return await ran - start


async def refresh_gauges(metrics: Metrics, runners: RunnerSet, store: Store) -> None:
    metrics.asyncio_tasks.set(len(asyncio.all_tasks()))
    held = allocator.heap()
    if held is not None:
        for part in ("in_use", "free", "mapped"):
            metrics.heap_bytes.labels(part=part).set(getattr(held, part))
    metrics.event_loop_lag.set(await loop_lag_s())
    for name, runner in runners.statuses().items():
        metrics.runner_healthy.labels(runner=name).set(1 if runner.health == "ready" else 0)
    overdue = dict.fromkeys(WAITING, 0)
    async with store.read() as session:
        rows = (await session.execute(
            select(FollowupRow.status, func.count()).where(
                FollowupRow.status.in_(WAITING), FollowupRow.due_at <= datetime.now(UTC))
            .group_by(FollowupRow.status))).all()
    overdue.update({str(status): int(count) for status, count in rows})
    for status, count in overdue.items():
        metrics.followups_overdue.labels(status=status).set(count)
