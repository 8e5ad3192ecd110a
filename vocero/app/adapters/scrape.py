"""Gauges read when ``/metrics`` is scraped: what the process and the store hold now.

Runner health (``vocero_runner_healthy``) comes from the runners' own status; the follow-up
backlog (``vocero_followups_overdue``) is counted in the store, so every worker reports the
same figure. The alert rules on both are in deploy/prometheus/vocero-rules.yaml.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select

from vocero.inference.runner_set import RunnerSet
from vocero.observability.metrics import Metrics
from vocero.store.engine import Store
from vocero.store.models import FollowupRow

WAITING = ("scheduled", "retry", "awaiting_approval")
"""Statuses of a follow-up that still owes a call (docs/followups.md "The queue")."""


async def refresh_gauges(metrics: Metrics, runners: RunnerSet, store: Store) -> None:
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
