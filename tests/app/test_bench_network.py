"""``vocero bench network``: one session through a laggy path with a 2 s stall, against a real
``vocero serve`` on the sim runners, reports the caller-side figures and the guarantees it
checked (a stalled answer is flushed and ends ``interrupted``, never ``completed`` short)."""

from __future__ import annotations

import anyio
import pytest

from vocero.bench.network import LAGGY, Case, run_network

pytestmark = [pytest.mark.process, pytest.mark.slow]


def test_a_stalled_session_reports_figures_and_the_guarantees_it_checked() -> None:
    report = anyio.run(lambda: run_network(sessions=1, cases=(Case(LAGGY, "stall"),)))
    case = report["cases"]["rtt150_jitter40_stall2s"]
    assert report["guarantees_held"] and case["violations"] == {}, case
    assert case["checks"] == {"barge_in_stops": 1, "heard_within_played": 2,
                              "paced_within_max_lead": 2,
                              "stalled_answer_not_completed_unless_heard_whole": 1}
    assert case["ttfs_ms"]["n"] == 2 and case["ttfs_ms"]["p50"] >= 2 * LAGGY.min_one_way_s * 1000
    assert case["barge_in_stop_ms"]["n"] == 1 and case["barge_in_stop_ms"]["p50"] > 0
    assert case["stale_frames_after_stop"] == 0
    assert 0 < case["max_lead_seen_ms"] <= 402
    assert sum(case["outcomes"].values()) == 1
