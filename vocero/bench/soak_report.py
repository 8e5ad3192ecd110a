"""The soak's figures and report (``vocero bench soak``, vocero/bench/soak.py): the samples
taken of the server, the summary the goals are judged on, and the self-contained HTML page
(inline SVG charts, nothing fetched) that ``--html FILE`` writes.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from vocero.bench.stats import percentiles

GOAL_RSS_MB_PER_HOUR = 10.0
GOAL_SESSIONS = 50
LAG_FLAT_FACTOR = 2.0
"""Lag p99 counts as flat when no window's p99 exceeds the first window's by more than this
factor plus 5 ms (a single slow scrape on a shared machine is not a trend)."""
LAG_FLAT_SLACK_MS = 5.0
TABLES = {
    "sessions": "sessions",
    "audit_events": "audit_events",
    "operations": "operations",
    "followups": "followups",
}


@dataclass
class Sample:
    t_s: float
    phase: str
    live: int
    rss_mb: float
    fds: float
    threads: float
    tasks: float | None
    loop_lag_ms: float | None
    healthz_ms: float
    active_sessions: float | None
    queues: dict[str, float]
    dropped: dict[str, float]
    """``vocero_frames_dropped_total`` by link and reason (the recorder's lost writes among
    them), counted since the server started."""
    rows: dict[str, int]
    heap_in_use_mb: float | None = None
    heap_free_mb: float | None = None
    """The C allocator's heap (``vocero_process_heap_bytes``): handed out, and kept free inside
    its arenas; ``None`` where the server's C library does not say (not glibc)."""
    heap_trimmed_mb: float | None = None
    """What the server's periodic trim gave back to the kernel since it started
    (``vocero_heap_trimmed_bytes_total``, setting ``heap_trim_s``)."""

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of ``(seconds, value)`` points, per hour; None under 3 points."""
    if len(points) < 3:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return None
    cov = sum((t - mean_t) * (v - mean_v) for t, v in points)
    return cov / var * 3600


def summarize(samples: list[Sample], *, warmup_s: float, duration_s: float, sessions: int,
              runners: str, windows: int = 5) -> dict[str, Any]:
    """The figures the goals are judged on (see vocero/bench/soak.py's docstring)."""
    baseline = [s for s in samples if s.phase == "baseline"]
    load = [s for s in samples if s.phase == "load"]
    after = [s for s in samples if s.phase == "after"]
    start = load[0].t_s if load else 0.0
    steady = [s for s in load if s.t_s - start >= warmup_s]
    growth = slope_per_hour([(s.t_s, s.rss_mb) for s in steady])
    heap_growth = {key: slope_per_hour([(s.t_s, getattr(s, key)) for s in steady
                                        if getattr(s, key) is not None])
                   for key in ("heap_in_use_mb", "heap_free_mb")}

    def level(group: list[Sample], key: str) -> float | None:
        values = [getattr(s, key) for s in group if getattr(s, key) is not None]
        return min(values) if values else None  # the settled level: transient work excluded

    back: dict[str, dict[str, Any]] = {}
    for key in ("fds", "threads", "tasks"):
        before, later = level(baseline, key), level(after, key)
        peak = max((getattr(s, key) or 0 for s in load), default=None)
        back[key] = {"baseline": before, "after": later, "peak_under_load": peak,
                     "returned": before is not None and later is not None and later <= before}
    lag_windows: list[dict[str, Any]] = []
    if load:
        span = max(1e-9, (load[-1].t_s - start) / windows)
        for i in range(windows):
            group = [s for s in load if i * span <= s.t_s - start < (i + 1) * span
                     or (i == windows - 1 and s.t_s - start >= windows * span)]
            lag_windows.append({
                "window": i, "from_s": round(i * span, 1), "to_s": round((i + 1) * span, 1),
                "loop_lag_ms": percentiles([s.loop_lag_ms for s in group
                                            if s.loop_lag_ms is not None], digits=3),
                "healthz_ms": percentiles([s.healthz_ms for s in group], digits=2),
            })
    p99s = [w["loop_lag_ms"].get("p99") for w in lag_windows if w["loop_lag_ms"]["n"]]
    flat = bool(p99s) and max(p99s) <= p99s[0] * LAG_FLAT_FACTOR + LAG_FLAT_SLACK_MS
    rows_first = load[0].rows if load else {}
    rows_last = (after or load)[-1].rows if (after or load) else {}
    goals = {
        "rss_growth_ok": growth is not None and growth <= GOAL_RSS_MB_PER_HOUR,
        "fds_returned": back["fds"]["returned"],
        "tasks_returned": back["tasks"]["returned"],
        "threads_returned": back["threads"]["returned"],
        "lag_p99_flat": flat,
    }
    return {
        "rss_mb": {
            "baseline": level(baseline, "rss_mb"),
            "peak": max((s.rss_mb for s in load), default=None),
            "after": after[-1].rss_mb if after else None,
            "growth_mb_per_hour_after_warmup": None if growth is None else round(growth, 2),
            "warmup_s": warmup_s,
            "samples_in_fit": len(steady),
        },
        "heap_mb": {
            "growth_mb_per_hour_after_warmup": {
                key.removeprefix("heap_").removesuffix("_mb"): None if g is None else round(g, 2)
                for key, g in heap_growth.items()},
            "at_end": {"in_use": (after or load)[-1].heap_in_use_mb if (after or load) else None,
                       "free": (after or load)[-1].heap_free_mb if (after or load) else None},
            "trimmed_by_end": (after or load)[-1].heap_trimmed_mb if (after or load) else None,
        },
        "returned_to_baseline": back,
        "lag_p99_per_window": lag_windows,
        "rows": {"at_start": rows_first, "at_end": rows_last},
        "queue_depth_max": {key: max(s.queues.get(key, 0.0) for s in samples)
                            for key in sorted({k for s in samples for k in s.queues})},
        "dropped_at_end": samples[-1].dropped if samples else {},
        "goals": goals,
        "goals_met": all(goals.values()),
        "goal_text": (f"RSS growth <= {GOAL_RSS_MB_PER_HOUR:g} MB/hour on sim at "
                      f"{GOAL_SESSIONS} sessions; FDs, tasks and threads back to baseline when "
                      "sessions end; event-loop lag p99 flat across windows"),
        "goal_applies": runners == "sim" and sessions >= GOAL_SESSIONS and duration_s >= 300,
    }


def _chart(title: str, points: list[tuple[float, float]], unit: str, *, marks: list[float],
           width: int = 720, height: int = 180) -> str:
    """One series as an inline SVG line chart (time on x), with the phase boundaries marked."""
    pad_l, pad_b, pad_t = 60, 24, 20
    if not points:
        return f"<h3>{html.escape(title)}</h3><p>no samples</p>"
    xs = [t for t, _ in points]
    ys = [v for _, v in points]
    x0, x1 = min(xs), max(xs) or 1.0
    y0, y1 = min(0.0, min(ys)), max(ys)
    y1 = y1 if y1 > y0 else y0 + 1.0

    def px(t: float) -> float:
        return pad_l + (t - x0) / max(1e-9, x1 - x0) * (width - pad_l - 10)

    def py(v: float) -> float:
        return pad_t + (1 - (v - y0) / (y1 - y0)) * (height - pad_t - pad_b)

    path = " ".join(f"{px(t):.1f},{py(v):.1f}" for t, v in points)
    lines = "".join(
        f'<line x1="{px(m):.1f}" y1="{pad_t}" x2="{px(m):.1f}" y2="{height - pad_b}" '
        'stroke="#bbb" stroke-dasharray="4 3"/>' for m in marks)
    return (
        f'<h3>{html.escape(title)}</h3>'
        f'<svg width="{width}" height="{height}" '
        f'role="img" aria-label="{html.escape(title)}">'
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fafafa"/>{lines}'
        f'<polyline fill="none" stroke="#2a6fdb" stroke-width="1.5" points="{path}"/>'
        f'<text x="4" y="{py(y1) + 4:.0f}" font-size="11">{y1:.4g} {html.escape(unit)}</text>'
        f'<text x="4" y="{py(y0):.0f}" font-size="11">{y0:.4g}</text>'
        f'<text x="{pad_l}" y="{height - 6}" font-size="11">{x0:.0f} s</text>'
        f'<text x="{width - 60}" y="{height - 6}" font-size="11">{x1:.0f} s</text>'
        "</svg>"
    )


def render_html(result: dict[str, Any]) -> str:
    """A self-contained page an operator reads: the goals, the figures, the series over time."""
    series = result["series"]
    summary = result["summary"]
    load = [s["t_s"] for s in series if s["phase"] == "load"]
    marks = [load[0], load[-1]] if load else []
    charts = [
        ("Resident memory", "rss_mb", "MB"),
        ("C heap in use", "heap_in_use_mb", "MB"), ("C heap free in arenas", "heap_free_mb", "MB"),
        ("C heap given back by the trim (since start)", "heap_trimmed_mb", "MB"),
        ("Open file descriptors", "fds", ""),
        ("Threads", "threads", ""), ("Asyncio tasks", "tasks", ""),
        ("Event-loop lag (at scrape)", "loop_lag_ms", "ms"),
        ("/healthz answer", "healthz_ms", "ms"),
        ("Live callers", "live", ""),
    ]
    body = [_chart(title, [(s["t_s"], float(s[key])) for s in series if s.get(key) is not None],
                   unit,
                   marks=marks) for title, key, unit in charts]
    for table in TABLES:
        body.append(_chart(f"Rows: {table}", [(s["t_s"], float(s["rows"].get(table, 0)))
                                              for s in series], "", marks=marks))
    goals = "".join(
        f"<tr><td>{html.escape(name)}</td><td class={'ok' if ok else 'bad'}>"
        f"{'met' if ok else 'NOT met'}</td></tr>" for name, ok in summary["goals"].items())
    back = "".join(
        f"<tr><td>{key}</td><td>{v['baseline']}</td><td>{v['peak_under_load']}</td>"
        f"<td>{v['after']}</td></tr>" for key, v in summary["returned_to_baseline"].items())
    windows = "".join(
        f"<tr><td>{w['from_s']}-{w['to_s']} s</td><td>{w['loop_lag_ms'].get('p99', '-')}</td>"
        f"<td>{w['healthz_ms'].get('p99', '-')}</td></tr>" for w in summary["lag_p99_per_window"])
    kinds = result.get("descriptors", {})
    descriptors = "".join(
        f"<tr><td>{html.escape(kind)}</td><td>{kinds.get('baseline', {}).get(kind, 0)}</td>"
        f"<td>{kinds.get('after', {}).get(kind, 0)}</td></tr>"
        for kind in sorted({k for side in kinds.values() for k in side}))
    rss = summary["rss_mb"]
    title = (f"Vocero soak: {result['sessions']} sessions, {result['minutes']:g} min, "
             f"{result['runners']} runners")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:60em}}td,th{{padding:2px 10px;
text-align:left}}.ok{{color:#176b2c}}.bad{{color:#b00020;font-weight:bold}}</style></head>
<body><h1>{html.escape(title)}</h1>
<p>{html.escape(summary['goal_text'])}. The goal applies to a run on sim of at least
{GOAL_SESSIONS} sessions and 5 minutes: {'yes' if summary['goal_applies'] else 'no'}.</p>
<table><tr><th>goal</th><th></th></tr>{goals}</table>
<h2>Figures</h2>
<p>RSS baseline {rss['baseline']} MB, peak {rss['peak']} MB, after {rss['after']} MB; growth after
{rss['warmup_s']:g} s of warm-up: <b>{rss['growth_mb_per_hour_after_warmup']} MB/hour</b>
(least squares over {rss['samples_in_fit']} samples). The C heap's growth over the same
samples, MB/hour: {html.escape(json.dumps(summary['heap_mb']['growth_mb_per_hour_after_warmup']))}
(in use: allocated and held; free: kept in the allocator's arenas). Python's own small-object
arenas are mapped apart and are in neither.</p>
<table><tr><th></th><th>baseline</th><th>peak under load</th><th>after</th></tr>{back}</table>
<table><tr><th>open descriptors</th><th>baseline</th><th>after</th></tr>{descriptors}</table>
<table><tr><th>window</th><th>loop lag p99 (ms)</th><th>/healthz p99 (ms)</th></tr>{windows}
</table>
<p>Queue depth, most seen: {html.escape(json.dumps(summary['queue_depth_max']))}; frames and
writes dropped (since start): {html.escape(json.dumps(summary['dropped_at_end']))}.</p>
<p>Callers: {html.escape(json.dumps(result['callers'], sort_keys=True))}</p>
<h2>Series</h2><p>Dashed lines: first and last sample under load.</p>
{''.join(body)}
</body></html>
"""
