"""``vocero bench followups``: what a queue pass costs with 100,000 stored follow-ups.

A fresh SQLite store (migrated, on disk) gets 100,000 follow-ups of a realistic mix: most are
history (placed, missed, refused), a fifth are scheduled over the next month, some are retries,
tasks and call-backs held for approval, and a few dozen are due now. Measured:

* ``selection_ms`` - the reads a pass makes before it acts (attempts in flight, held follow-ups
  to close as missed, due phone follow-ups, oldest first), per pass; goal <= 50 ms;
* ``tick_ms`` - a whole pass that places two calls through a stand-in for the policy plane
  (it answers ``placed`` at once), i.e. the queue's own bookkeeping;
* the SQLite query plan of the due selection (it must use ``ix_followups_status_due_at``);
* the ``promised_unbooked`` detector's precision and recall on ``fixtures/followups``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import insert, text

from vocero.app.settings import REPO_ROOT
from vocero.bench.stats import percentiles
from vocero.contracts.domain import AgentProfile, Caller, FollowupSettings, ProfileMatch
from vocero.contracts.secrets import Secret
from vocero.contracts.system_actions import SystemAction, SystemActionState
from vocero.followups import FollowupQueue, QueueSettings, SqlFollowupStore
from vocero.followups.lifecycle import LATE_AFTER
from vocero.followups.promises import score
from vocero.store.engine import Store
from vocero.store.migrate import upgrade_async
from vocero.store.models import FollowupRow, SessionRow

ROWS = 100_000
DUE_NOW = 40
NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
PROFILE = AgentProfile(id="bench", version="1", match=ProfileMatch(tenant="acme"),
                       followups=FollowupSettings(call_tool="calls.place", max_per_tick=2,
                                                  daily_budget=10**9))


class _Placed:
    """A stand-in for the policy plane: every call is placed at once."""

    async def submit(self, action: SystemAction) -> SystemActionState:
        return SystemActionState(operation_id=action.operation_id, status="committed",
                                 receipt={"content": {"status": "placed"}}, settled=True)

    async def state(self, operation_id: str) -> SystemActionState | None:
        return None

    async def wait(self, ids: Sequence[str], timeout_s: float) -> dict[str, SystemActionState]:
        return {i: SystemActionState(operation_id=i, status="committed", settled=True,
                                     receipt={"content": {"status": "placed"}}) for i in ids}


class _Everyone:
    def caller(self, tenant: str, subject_ref: str) -> Caller | None:
        return Caller(token=Secret("bench-token"), subject=subject_ref, tenant=tenant,
                      phone="+34600000000", scopes=["followups:write"])


def _row(index: int) -> dict[str, Any]:
    """One stored follow-up of the mix; the last ``DUE_NOW`` are due now."""
    kind = index % 100
    if index >= ROWS - DUE_NOW:
        status, due = "scheduled", NOW - timedelta(minutes=ROWS - index)
    elif kind < 60:
        status, due = "placed", NOW - timedelta(hours=1 + index % 2000)
    elif kind < 75:
        status, due = ("missed" if kind % 2 else "refused"), NOW - timedelta(days=2 + kind)
    elif kind < 95:
        status, due = "scheduled", NOW + timedelta(minutes=10 + index % 43_000)
    elif kind < 97:
        status, due = "retry", NOW + timedelta(minutes=5 + index % 60)
    elif kind < 99:
        status, due = "task", NOW - timedelta(hours=index % 100)
    else:
        status, due = "awaiting_approval", NOW - timedelta(hours=index % 20)
    return {
        "id": f"fup_{index:024d}", "session_id": "ses_bench", "tenant_id": "acme",
        "subject_ref": f"sub_{index % 5000:08d}", "profile_id": "bench", "profile_version": "1",
        "when_text": "tomorrow at 4", "due_at": due, "promised_at": due,
        "timezone": "Europe/Madrid", "channel": "task" if status == "task" else "phone",
        "reason": "bench", "status": status, "attempts": 0, "outcome_reason": "",
        "attempt_operation_id": None, "approved_by": "", "operation_id": f"op_{index:024d}",
        "created_at": NOW, "updated_at": NOW,
    }


async def _fill(store: Store) -> None:
    async with store.write() as session:
        await session.execute(insert(SessionRow).values(
            id="ses_bench", tenant_id="acme", subject_ref="sub_bench", profile_id="bench",
            profile_version="1", state="CLOSING", effective={}, resume_token_hash=None,
            created_at=NOW, closed_at=None))
    for start in range(0, ROWS, 5000):
        async with store.write() as session:
            await session.execute(insert(FollowupRow),
                                  [_row(i) for i in range(start, min(start + 5000, ROWS))])


async def _selection(sql: SqlFollowupStore, limit: int) -> tuple[float, int]:
    started = time.perf_counter()
    selected = await sql.selection(NOW, NOW - LATE_AFTER, limit)
    return (time.perf_counter() - started) * 1000, len(selected.due)


async def _plan(store: Store) -> list[str]:
    query = text("EXPLAIN QUERY PLAN SELECT id FROM followups WHERE status IN "
                 "('scheduled', 'retry') AND due_at <= :now AND channel = 'phone' AND "
                 "attempt_operation_id IS NULL ORDER BY due_at LIMIT 200")
    async with store.read() as session:
        rows = (await session.execute(query, {"now": NOW.replace(tzinfo=None)})).all()
    return [str(row[-1]) for row in rows]


def _detector() -> dict[str, Any]:
    corpus = yaml.safe_load((REPO_ROOT / "fixtures" / "followups" / "promises.yaml").read_text())
    found = {}
    for section in ("items", "held_out"):
        result = score((i["text"], bool(i["promise"])) for i in corpus[section])
        found[section] = {"precision": result.precision, "recall": result.recall,
                          "n": result.total, "misses": list(result.misses),
                          "false_alarms": list(result.false_alarms)}
    return found


async def followups(args: argparse.Namespace) -> dict[str, Any]:
    passes = max(10, min(args.iterations, 500))
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        await upgrade_async(url)
        store = Store.open(url)
        try:
            started = time.perf_counter()
            await _fill(store)
            fill_s = time.perf_counter() - started
            sql = SqlFollowupStore(store)
            settings = QueueSettings()
            await _selection(sql, settings.scan_limit)  # warm the page cache once
            samples, due = [], 0
            for _ in range(passes):
                elapsed, due = await _selection(sql, settings.scan_limit)
                samples.append(elapsed)
            queue = FollowupQueue(sql, _Placed(), profiles=lambda _i, _v: PROFILE,
                                  directory=_Everyone(), settings=settings)
            ticks = []
            for index in range(10):
                started = time.perf_counter()
                await queue.tick(NOW + timedelta(seconds=index))
                ticks.append((time.perf_counter() - started) * 1000)
            plan = await _plan(store)
        finally:
            await store.close()
    selection = percentiles(samples)
    return {
        "rows": ROWS, "due_now": due, "fill_s": round(fill_s, 2),
        "selection_ms": selection, "selection_goal_ms": 50,
        "selection_within_goal": selection["p95"] <= 50,
        "tick_ms": percentiles(ticks), "due_query_plan": plan, "detector": _detector(),
    }
