"""``vocero bench grounding`` measures the planner and the admission check per unit."""

from __future__ import annotations

import argparse

import pytest

from vocero.bench.command import _registry
from vocero.bench.grounding import GOAL_P95_MS, grounding

pytestmark = pytest.mark.anyio


async def test_the_grounding_bench_reports_per_unit_costs() -> None:
    assert _registry()["grounding"] is grounding
    report = await grounding(argparse.Namespace(iterations=3))
    assert report["goal_p95_ms"] == GOAL_P95_MS
    cases = {"all", "claims", "checked_model_text", "assisted_paraphrase", "readout"}
    assert set(report["planner"]) == cases
    for case in cases:
        assert report["planner"][case]["n"] >= 30 and report["planner"][case]["p95"] > 0
    assert report["admission_check"]["n"] >= 120
    assert isinstance(report["within_goal"], bool)
