"""``vocero bench actions``: a short run on SQLite in one process and, with ``--workers 2``, two
real processes on one PostgreSQL; every operation the store says committed had exactly one
effect at the fixture server, sent once under its own id, dispatched by its own process."""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Any

import anyio
import pytest
from sqlalchemy import select

from tests.support.pg import fresh_db, requires_pg
from vocero.app.settings import REPO_ROOT, db_url
from vocero.bench.actions import actions
from vocero.store import Store
from vocero.store.models import NodeRow

pytestmark = pytest.mark.slow

ITERATIONS, PER_LANE, LANES = 3, 3, 2
WARM_UPS = 3


def run(db: str = "", workers: int = 1) -> dict[str, Any]:
    args = argparse.Namespace(iterations=ITERATIONS, n=PER_LANE, workers=workers, db=db)
    report: dict[str, Any] = anyio.run(actions, args)
    return report


def assert_shape(report: dict[str, Any], *, store: str, workers: int) -> None:
    assert (report["bench"], report["store"], report["workers"]) == ("actions", store, workers)
    assert report["failures"] == {}
    assert report["confirm_to_committed_ms"]["n"] == ITERATIONS
    sustained = report["sustained"]
    writes = workers * LANES * PER_LANE
    assert (sustained["lanes"], sustained["operations"], sustained["committed"]) == (
        workers * LANES, writes, writes)
    assert sustained["confirm_to_committed_ms"]["n"] == writes
    assert sustained["ops_per_s"] > 0 and sustained["seconds"] > 0
    assert sustained["nodes"] == workers  # one node lease per process
    assert len(sustained["cpu_s_per_worker"]) == workers
    assert all(cpu > 0 for cpu in sustained["cpu_s_per_worker"])
    assert sustained["cpu_ms_per_write"] > 0
    assert report["machine"]["mcp_server_cpu_s"] > 0
    # every write of the run: the sequential samples, the warm-ups, the sustained lanes
    every = ITERATIONS + WARM_UPS + workers * (WARM_UPS + LANES * PER_LANE)
    once = report["exactly_once"]
    assert once == {
        "operations": every, "committed": every, "applied": every, "effects": every,
        "sent": every, "sent_more_than_once": 0, "committed_not_applied": 0,
        "applied_not_committed": 0, "dispatched_by": workers, "ok": True,
    }


def test_one_process_on_sqlite_commits_each_write_once() -> None:
    assert_shape(run(), store="sqlite", workers=1)


def test_more_than_one_worker_on_sqlite_is_refused_clearly() -> None:
    done = subprocess.run([sys.executable, "-m", "vocero", "bench", "actions", "--workers", "2"],
                          capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("vocero: --workers 2 needs a PostgreSQL --db"), done.stderr


async def node_endings(url: str) -> list[tuple[str, str | None]]:
    store = Store.open(db_url(url))
    try:
        async with store.read() as session:
            rows = (await session.execute(select(NodeRow.role, NodeRow.ending))).all()
    finally:
        await store.close()
    return sorted((row.role, row.ending) for row in rows)


@requires_pg
def test_two_worker_processes_on_postgresql_commit_each_write_once() -> None:
    with fresh_db() as url:  # empty: the bench migrates it
        assert_shape(run(url, workers=2), store="postgresql", workers=2)
        # two processes held their own node lease and handed it back when done
        assert anyio.run(node_endings, url) == [("bench", "released")] * 2
