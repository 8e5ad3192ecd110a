"""``vocero followups tick`` (docs/followups.md "The queue"): one pass of the follow-up queue, its
outcomes as JSON. The flags are kept light: the wiring
(:func:`vocero.app.adapters.followups.tick_plane`) loads only when the pass runs."""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime

import anyio

from vocero.app.commands.output import parse_now, run_json_command

BUSY_WAIT_S = 30.0
"""How long ``vocero followups tick`` waits for another process's pass to end."""


def add_tick_arguments(parser: argparse.ArgumentParser) -> None:
    """``vocero followups tick [--db URL] [--now RFC3339] [--profiles DIR]
    [--identities FILE]`` (each flag also reads ``VOCERO_<FLAG>``)."""
    from vocero.app.settings import Settings, add_telephony_arguments

    defaults = Settings()
    env = os.environ.get
    parser.add_argument("--db", default=env("VOCERO_DB", defaults.db))
    parser.add_argument("--now", default=env("VOCERO_NOW") or None,
                        help="RFC3339 instant the pass runs at (default: now)")
    parser.add_argument("--profiles", default=env("VOCERO_PROFILES", defaults.profiles))
    parser.add_argument("--identities", default=env("VOCERO_IDENTITIES", defaults.identities))
    parser.add_argument("--settle-s", dest="settle_s", type=float, default=20.0,
                        help="how long to wait for placed calls to settle")
    add_telephony_arguments(parser)  # the built-in call tool carrier.call rings through these


def tick_command(args: argparse.Namespace) -> int:
    """``vocero followups tick``: standard output carries the JSON outcomes only."""
    return run_json_command(lambda: (0, anyio.run(_tick, args, parse_now(args.now))))


async def _tick(args: argparse.Namespace, now: datetime) -> dict[str, object]:
    from vocero.app.adapters.followups import tick_plane
    from vocero.followups import TickOutcome, outcomes_json
    from vocero.followups.queue import QueueBusyError

    async with tick_plane(args, now) as (services, _, clock):
        assert services.queue is not None
        outcomes: list[TickOutcome] | None = None
        with anyio.move_on_after(BUSY_WAIT_S):
            while outcomes is None:
                try:
                    outcomes = await services.queue.tick(datetime.fromtimestamp(clock.now(), UTC))
                except QueueBusyError:  # a server's pass is running: wait for it to end
                    await anyio.sleep(0.5)
    if outcomes is None:
        return outcomes_json(now, []) | {"held_elsewhere": True}
    return outcomes_json(now, outcomes)
