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
    from vocero.app import (
        bench_dialogue,
        bench_ttfa,
        benches,
        benches_actions,
        benches_audit,
        benches_followups,
        benches_grounding,
    )

    return {
        "overhead": benches.overhead,
        "barge-in": benches.barge_in,
        "sessions": benches.sessions,
        "actions": benches_actions.actions,
        "ttfs": benches.ttfs,
        "turns": benches.turns,
        "mcp": benches.mcp,
        "grounding": benches_grounding.grounding,
        "followups": benches_followups.followups,
        "audit": benches_audit.audit,
        "dialogue": bench_dialogue.dialogue,
        "ttfa": bench_ttfa.ttfa,
    }


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
