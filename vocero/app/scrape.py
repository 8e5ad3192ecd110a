"""Gauges read when ``/metrics`` is scraped: what the process and the store hold now.

Runner health (``vocero_runner_healthy``) comes from the runners' own status; the follow-up
backlog (``vocero_followups_overdue``) is counted in the store, so every worker reports the
same figure. The alert rules on both are in deploy/prometheus/vocero-rules.yaml.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select

from vocero.app.runtime import Runtime
from vocero.store.models import FollowupRow

WAITING = ("scheduled", "retry", "awaiting_approval")
"""Statuses of a follow-up that still owes a call (SPEC §9)."""


async def refresh_gauges(runtime: Runtime) -> None:
    metrics = runtime.metrics
    for name, runner in runtime.shared_runners.statuses().items():
        metrics.runner_healthy.labels(runner=name).set(1 if runner.health == "ready" else 0)
    overdue = dict.fromkeys(WAITING, 0)
    async with runtime.store.read() as session:
        rows = (await session.execute(
            select(FollowupRow.status, func.count()).where(
                FollowupRow.status.in_(WAITING), FollowupRow.due_at <= datetime.now(UTC))
            .group_by(FollowupRow.status))).all()
    overdue.update({str(status): int(count) for status, count in rows})
    for status, count in overdue.items():
        metrics.followups_overdue.labels(status=status).set(count)
