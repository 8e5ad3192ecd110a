"""``vocero bench ttfa``: a typed caller turn -> the first audio of the agent's answer.

The turns are a conversation suite's (``fixtures/eval`` by default: the demo's everyday
dialogues), typed in text mode into a real ``vocero serve`` with the chosen runners (``--runners
cpu``: the default agent), exactly as ``vocero eval`` drives them; each turn's time is from its
``input.text.v1`` to the first ``response.audio_delta.v1`` of its answer. Turns that are spoken
over (barge-in) or skipped are left out. Figures are split by what the answer needed: a tool
(a lookup or a change, through the MCP gateway), the claim catalog, or words alone.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

import anyio

from vocero.bench.stats import percentiles

SUITE = "fixtures/eval"


async def ttfa(args: argparse.Namespace) -> dict[str, Any]:
    from vocero.evals.command import caller_zones
    from vocero.evals.format import load_files
    from vocero.evals.runner import run_all

    suite = getattr(args, "suite", None) or SUITE
    options = argparse.Namespace(
        paths=[suite], runners=args.runners, mode="text", profiles="fixtures/profiles",
        identities="fixtures/identities.yaml", junit=None, report=None, only=None,
    )  # fmt: skip
    scenarios = load_files([suite])
    zones = caller_zones(Path(options.identities))
    results = await anyio.to_thread.run_sync(lambda: _quietly(run_all, scenarios, options, zones))
    by_kind: dict[str, list[float]] = {"tool": [], "claims": [], "words": []}
    slowest: list[tuple[float, str, str]] = []
    for result in results:
        for turn in result.turns:
            if turn.ttfa_ms is None or turn.skipped or turn.then:
                continue
            by_kind[_kind(turn)].append(turn.ttfa_ms)
            slowest.append((turn.ttfa_ms, result.scenario.name, turn.say))
    every = [v for values in by_kind.values() for v in values]
    slowest.sort(reverse=True)
    return {
        "bench": "ttfa",
        "runners": args.runners,
        "suite": suite,
        "scenarios_passed": f"{sum(r.passed for r in results)}/{len(results)}",
        "turns": len(every),
        "ttfa_ms": _figures(every),
        "by_kind": {kind: _figures(values) for kind, values in by_kind.items()},
        "slowest": [{"ms": round(ms, 1), "scenario": name, "say": say}
                    for ms, name, say in slowest[:5]],
    }  # fmt: skip


def _quietly(run: Any, *args: Any) -> Any:
    """``vocero eval`` prints a line a scenario; standard output carries the bench's JSON."""
    with contextlib.redirect_stdout(sys.stderr):
        return run(*args)


def _kind(turn: Any) -> str:
    """``claims`` (answered from the catalog, through its search), ``tool`` (a business tool
    or a proposal), or ``words`` (the profile's own words)."""
    if any(unit.get("claim_keys") for unit in turn.units):
        return "claims"
    if turn.tool_statuses or turn.confirmations:
        return "tool"
    return "words"


def _figures(values: list[float]) -> dict[str, float]:
    return {k: round(v, 1) for k, v in percentiles(values).items()}
