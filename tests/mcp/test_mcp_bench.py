"""``run_bench`` stays runnable: a tiny run over stdio, on both revisions, returns the figures
the CLI prints."""

from __future__ import annotations

import pytest

from vocero.bench.gateway import GOAL_P95_MS, run_bench
from vocero.bench.stats import percentiles

pytestmark = pytest.mark.anyio


async def test_run_bench_reports_overhead_per_revision_and_transport() -> None:
    report = await run_bench(calls=6, warmup=1, transports=("stdio",))

    assert set(report["protocols"]) == {"2025-11-25", "2026-07-28"}
    assert report["goal_p95_overhead_ms"] == GOAL_P95_MS == 0.5
    for revision in report["protocols"].values():
        stdio = revision["stdio"]
        assert set(stdio) >= {"bare_sdk_ms", "gateway_ms", "overhead_ms", "overhead_cpu_ms"}
        assert 0 < stdio["overhead_ms"]["p50"] < stdio["gateway_ms"]["p50"]
        assert stdio["audit_events"] >= 7
    assert isinstance(report["meets_goal"], bool)


def test_percentiles_in_milliseconds_are_measured_samples() -> None:
    """The one percentile function of every benchmark (vocero/bench/stats.py): seconds scaled
    to milliseconds, each percentile a sample that was measured (rank floor(q·n))."""
    figures = percentiles([i / 1000 for i in range(100, 0, -1)], scale=1000, digits=3)
    assert figures == {"n": 100, "p50": 51.0, "p95": 96.0, "p99": 100.0, "max": 100.0,
                       "mean": 50.5}
    assert percentiles([], scale=1000) == {"n": 0}
