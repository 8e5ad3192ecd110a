"""``vocero bench NAME``: the project's benchmarks, printed (and optionally saved) as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

Bench = Callable[[argparse.Namespace], Awaitable[dict[str, Any]]]


def _registry() -> dict[str, Bench]:
    from vocero.bench import (
        actions,
        audit,
        auth,
        dialogue,
        followups,
        grounding,
        interruptions,
        network,
        phone,
        realtime,
        soak,
        ttfa,
        wire_cost,
    )

    return {
        "overhead": realtime.overhead,
        "barge-in": realtime.barge_in,
        "sessions": realtime.sessions,
        "actions": actions.actions,
        "ttfs": realtime.ttfs,
        "turns": realtime.turns,
        "mcp": realtime.mcp,
        "grounding": grounding.grounding,
        "followups": followups.followups,
        "audit": audit.audit,
        "auth": auth.auth,
        "dialogue": dialogue.dialogue,
        "ttfa": ttfa.ttfa,
        "phone": phone.phone,
        "soak": soak.soak,
        "false-interruptions": interruptions.false_interruptions,
        "network": network.network,
        "client": wire_cost.client,
    }


def bench_command(args: argparse.Namespace) -> int:
    """``vocero bench NAME``: run one benchmark, print its JSON (and save it with ``--json``)."""
    return anyio.run(run_bench, args)


async def run_bench(args: argparse.Namespace) -> int:
    from vocero.observability.logging import configure_logging

    # Standard output carries the JSON result only; every log line goes to standard error.
    configure_logging("console", "warning", route_stdlib=True)
    benches = _registry()
    if args.name not in benches:
        print(
            f"unknown benchmark {args.name!r}; known: {', '.join(sorted(benches))}", file=sys.stderr
        )
        return 2
    from vocero.app.workers import WorkersError

    try:
        result = await benches[args.name](args)
    except WorkersError as exc:  # e.g. --workers 2 on SQLite, refused as ``serve`` does
        print(f"vocero: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2, sort_keys=True)
    print(text)
    if args.json_file:
        await anyio.Path(args.json_file).write_text(text + "\n", encoding="utf-8")
    return 0
