"""``vocero bench ttfa``: typed turns to first audio, by what the answer needed.

The suite's run is replaced by recorded turn results (the real run is ``vocero eval``'s, tested
in tests/evals): the bench must count every answered typed turn once, leave out turns spoken
over or skipped, split by kind, and keep standard output for its JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from vocero.bench import ttfa as bench_ttfa
from vocero.evals.client import TurnResult
from vocero.evals.format import load_files
from vocero.evals.runner import ScenarioResult

pytestmark = [pytest.mark.model, pytest.mark.process, pytest.mark.anyio]
SUITE = Path(__file__).resolve().parents[2] / "fixtures" / "eval" / "orders.yaml"


def turns() -> list[TurnResult]:
    return [
        TurnResult(index=1, say="Where is A123?", ttfa_ms=300.0,
                   tool_statuses=[{"status": "committed"}]),
        TurnResult(index=2, say="Open on Saturday?", ttfa_ms=200.0,  # the catalog's search
                   tool_statuses=[{"status": "committed"}],
                   units=[{"claim_keys": ["hours.saturday"]}]),
        TurnResult(index=3, say="Thanks", ttfa_ms=100.0),
        TurnResult(index=4, say="Tell me a story", then="stop", ttfa_ms=50.0),
        TurnResult(index=5, say="skipped", skipped=True, ttfa_ms=None),
        TurnResult(index=6, say="never answered", ttfa_ms=None),
    ]  # fmt: skip


async def test_every_answered_typed_turn_counts_once_by_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario = load_files([str(SUITE)])[0]
    printed: list[str] = []

    def fake_run_all(scenarios: list[Any], options: argparse.Namespace, zones: Any) -> list[Any]:
        assert options.mode == "text" and options.runners == "cpu"
        print("PASS orders/order-status-found")  # eval's own progress line
        printed.append("ran")
        return [ScenarioResult(scenario=scenario, turns=turns())]

    monkeypatch.setattr("vocero.evals.runner.run_all", fake_run_all)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report = await bench_ttfa.ttfa(argparse.Namespace(runners="cpu", suite=str(SUITE)))
    assert printed == ["ran"]
    assert out.getvalue() == "", "standard output is the bench's JSON only"
    assert report["turns"] == 3
    assert report["by_kind"]["tool"]["n"] == 1 and report["by_kind"]["tool"]["max"] == 300.0
    assert report["by_kind"]["claims"]["n"] == 1 and report["by_kind"]["words"]["n"] == 1
    assert report["ttfa_ms"]["max"] == 300.0
    assert [s["say"] for s in report["slowest"]] == ["Where is A123?", "Open on Saturday?",
                                                      "Thanks"]
