"""The retention purge: ``vocero purge`` (one pass) and the periodic pass inside ``serve``.

``vocero purge [--db URL] [--now RFC3339] [--retention FILE]`` erases what the retention
policy (vocero/store/retention.py; docs/operators.md) no longer allows at ``--now`` (default:
the current time), records what it erased in the audit log and prints the report as JSON.
``serve`` runs the same pass a minute after it starts and then every ``--purge-every-s`` seconds
(default hourly; 0: off).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from vocero.app.commands.output import parse_now, run_json_command

if TYPE_CHECKING:  # the store loads when a purge runs, not when the CLI parses its flags
    from vocero.contracts.ports import Timers
    from vocero.store.engine import Store
    from vocero.store.retention import PurgeReport, RetentionPolicy

log = structlog.get_logger("vocero.purge")
FIRST_PASS_AFTER_S = 60.0


def add_purge_arguments(parser: argparse.ArgumentParser) -> None:
    from vocero.app.settings import Settings, add_retention_arguments

    parser.add_argument("--db", default=os.environ.get("VOCERO_DB", Settings().db))
    parser.add_argument("--now", default=os.environ.get("VOCERO_NOW") or None,
                        help="RFC3339 instant the purge runs at (default: now)")
    add_retention_arguments(parser)


def purge_command(args: argparse.Namespace) -> int:
    """Standard output carries the JSON report only."""
    from vocero.app.settings import db_url
    from vocero.store.retention import load_policy

    def body() -> tuple[int, Any]:
        now = parse_now(args.now)
        policy = load_policy(args.retention)  # a ConfigError names the file and the class
        return 0, anyio.run(_purge_once, db_url(args.db), policy, now).public()

    return run_json_command(body)


async def _purge_once(url: str, policy: RetentionPolicy, now: datetime) -> PurgeReport:
    from vocero.store.engine import Store
    from vocero.store.migrate import upgrade_async
    from vocero.store.retention import purge

    await upgrade_async(url)
    store = Store.open(url)
    try:
        return await purge(store, policy, now)
    finally:
        await store.close()


async def run_purges(
    store: Store, policy: RetentionPolicy, clock: Timers, period_s: float, *,
    on_pass: Callable[[PurgeReport], None] | None = None, first_after_s: float = 0.0,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """A purge ``first_after_s`` after start, then every ``period_s`` seconds of ``clock`` until
    cancelled (0: never). A failed pass is logged; the next one tries again. ``on_pass`` sees
    every report."""
    from vocero.store.retention import purge

    task_status.started()
    if period_s <= 0:
        return
    if first_after_s > 0:
        await clock.sleep(first_after_s)
    while True:
        try:
            report = await purge(store, policy, datetime.fromtimestamp(clock.now(), UTC))
            if report.erased:
                log.info("retention.pass", erased=report.erased)
            if on_pass is not None:
                on_pass(report)
        except Exception:
            log.exception("retention.pass_failed")
        await clock.sleep(period_s)


@asynccontextmanager
async def purging(store: Store, retention: str, period_s: float, clock: Timers) -> (
    AsyncIterator[None]
):
    """Periodic purges for as long as the block runs (what ``serve`` wraps its runtime in)."""
    from vocero.store.retention import load_policy

    policy = load_policy(retention)
    async with anyio.create_task_group() as tg:
        # The first pass waits a minute: a server's start is busy enough without it.
        await tg.start(partial(run_purges, store, policy, clock, period_s,
                               first_after_s=min(period_s, FIRST_PASS_AFTER_S)))
        try:
            yield
        finally:
            tg.cancel_scope.cancel()
