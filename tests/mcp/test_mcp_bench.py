"""``run_bench`` stays runnable: a tiny run over stdio, on both revisions, returns the figures
the CLI prints."""

from __future__ import annotations

import pytest

from vocero.mcp_gateway.bench import GOAL_P95_MS, percentiles, run_bench

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


def test_percentiles_in_milliseconds() -> None:
    figures = percentiles([i / 1000 for i in range(1, 101)])
    assert figures["p50"] == pytest.approx(50.5)
    assert figures["p95"] == pytest.approx(95.05)
