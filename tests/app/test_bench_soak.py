"""``vocero bench soak``: a 20-second run of three callers against a real ``vocero serve`` on the
sim runners reports the series the issue asks for (sampled from the server while the callers
wrote to the store), the summary's figures, and an HTML report that fetches nothing."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from vocero.bench.soak import parse_metrics, soak
from vocero.bench.soak_report import Sample, slope_per_hour, summarize

pytestmark = [pytest.mark.process, pytest.mark.slow]

SERIES_KEYS = {"t_s", "phase", "live", "rss_mb", "fds", "threads", "tasks", "loop_lag_ms",
               "healthz_ms", "active_sessions", "queues", "dropped", "rows"}
ROWS = {"sessions", "audit_events", "operations", "followups"}


def test_a_short_soak_reports_series_summary_and_a_self_contained_page(tmp_path: Path) -> None:
    page, lines = tmp_path / "soak.html", tmp_path / "samples" / "soak.jsonl"
    args = argparse.Namespace(minutes=20 / 60, sessions=3, runners="sim", sample_s=2.0,
                              settle_s=3.0, html_file=str(page), samples_file=str(lines))
    report: dict[str, Any] = anyio.run(soak, args)

    series = report["series"]
    assert {s["phase"] for s in series} == {"baseline", "load", "after"}
    assert all(set(s) >= SERIES_KEYS and set(s["rows"]) >= ROWS for s in series)
    load = [s for s in series if s["phase"] == "load"]
    assert len(load) >= 5
    # the server's own gauges were read (the scrape-time asyncio gauges exist) and the callers
    # were live on it
    assert all(s["tasks"] is not None and s["loop_lag_ms"] is not None for s in series)
    # and the C heap's (glibc): in use and free inside the arenas, in MB
    assert all(s["heap_in_use_mb"] > 1 and s["heap_free_mb"] >= 0 for s in series)
    assert max(s["active_sessions"] for s in load) >= 1
    assert max(s["tasks"] for s in load) > min(s["tasks"] for s in series if
                                              s["phase"] == "baseline")
    # the callers' steps reached the store: sessions, audit events and operations grew
    first, last = series[0]["rows"], series[-1]["rows"]
    assert last["sessions"] > first["sessions"] >= 0
    assert last["audit_events"] > first["audit_events"]
    assert last["operations"] > first["operations"]
    assert report["callers"]["started"] >= 3 and report["callers"]["connect_failures"] == 0
    callers = report["callers"]
    assert callers["outcomes"].get("confirmed", 0) >= 1 or callers["steps"].get("write", 0) == 0

    summary = report["summary"]
    assert isinstance(summary["rss_mb"]["growth_mb_per_hour_after_warmup"], float)
    assert set(summary["heap_mb"]["growth_mb_per_hour_after_warmup"]) == {"in_use", "free"}
    for key in ("fds", "tasks", "threads"):
        figures = summary["returned_to_baseline"][key]
        assert figures["baseline"] is not None and figures["after"] is not None
        assert isinstance(figures["returned"], bool)
    windows = summary["lag_p99_per_window"]
    assert len(windows) == 5 and all("p99" in w["loop_lag_ms"] for w in windows
                                     if w["loop_lag_ms"]["n"])
    assert set(summary["goals"]) == {"rss_growth_ok", "fds_returned", "tasks_returned",
                                     "threads_returned", "lag_p99_flat"}
    assert summary["goal_applies"] is False  # 3 sessions for 20 s is not the goal's run
    json.dumps(report)
    # every sample was also appended as it was taken (a run cut short can still be read)
    written = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines()]
    assert written == series

    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and text.count("<svg") >= 7
    assert "<script" not in text
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", text, re.IGNORECASE)
    assert not re.search(r"https?://", text)


def _sample(t: float, phase: str, rss: float, fds: float, tasks: float, lag: float) -> Sample:
    return Sample(t_s=t, phase=phase, live=0, rss_mb=rss, fds=fds, threads=7.0, tasks=tasks,
                  loop_lag_ms=lag, healthz_ms=1.0, active_sessions=0.0, queues={}, dropped={},
                  rows={})


def test_summary_flags_growth_a_leaked_descriptor_and_rising_lag() -> None:
    samples = [_sample(t, "baseline", 100.0, 30, 40, 0.1) for t in (0, 1, 2)]
    # 1 MB a minute after warm-up: 60 MB/hour; lag rising from 0.1 to 40 ms
    samples += [_sample(10 + 60 * i, "load", 100.0 + i, 60, 90, 0.1 + 10 * i) for i in range(6)]
    samples += [_sample(400 + t, "after", 106.0, 31, 40, 0.1) for t in (0, 1, 2)]
    summary = summarize(samples, warmup_s=30, duration_s=300, sessions=50, runners="sim")
    assert summary["rss_mb"]["growth_mb_per_hour_after_warmup"] == pytest.approx(60.0)
    goals = summary["goals"]
    assert goals == {"rss_growth_ok": False, "fds_returned": False, "tasks_returned": True,
                     "threads_returned": True, "lag_p99_flat": False}
    assert summary["goal_applies"] is True and summary["goals_met"] is False
    assert slope_per_hour([(0, 5.0), (1800, 5.0), (3600, 5.0)]) == 0.0


def test_metrics_page_parsing_keeps_the_soak_series() -> None:
    page = "\n".join([
        "# HELP vocero_asyncio_tasks Asyncio tasks",
        "vocero_asyncio_tasks 42.0",
        "vocero_event_loop_lag_seconds 0.0015",
        'vocero_queue_depth{link="recorder"} 3.0',
        "vocero_active_sessions 2.0",
        'vocero_frames_dropped_total{link="recorder",reason="queue_full"} 7.0',
        "vocero_sessions_total{outcome=\"admitted\"} 9.0",
        'vocero_process_heap_bytes{part="in_use"} 7.3e+07',
    ])
    assert parse_metrics(page) == {
        "vocero_asyncio_tasks": 42.0, "vocero_event_loop_lag_seconds": 0.0015,
        'vocero_queue_depth{link="recorder"}': 3.0, "vocero_active_sessions": 2.0,
        'vocero_frames_dropped_total{link="recorder",reason="queue_full"}': 7.0,
        'vocero_process_heap_bytes{part="in_use"}': 7.3e7}
