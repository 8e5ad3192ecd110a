"""``vocero bench soak --minutes M [--sessions N]``: a steady mix of realistic sessions against a
real ``vocero serve``, watching what the server holds over time (docs/scaling.md "Soak").

The server is a subprocess on a fresh SQLite store, the fixture profiles, identities and the
evaluation suite's simulator script (``fixtures/eval``), as ``vocero eval`` runs it. ``N``
callers are kept live: each runs a few random steps and then ends (closing, or dropping the
socket), and a new caller takes its place at once. The steps:

* ``lookup``: a typed question answered by a read tool;
* ``write``: the appointments listed, then a move the caller must confirm (all callers move the
  same fixture appointment, so some commits are refused as stale, by design): the read-back is
  acknowledged as played
  (``output.playout_progress.v1``) until its answer completes, then the caller says "yes";
* ``barge_in``: a question, and speech over the first audio of its answer;
* ``followup``: a call-back request (confirmed like a write when the server asks);
* ``resume``: the socket dropped without ``session.close.v1``, the session resumed with its
  ``resume_token``;
* ``bad_input``: a malformed frame, an unknown event type, or an oversized frame.

Every ``--sample-s`` seconds the server is sampled: resident memory, open file descriptors and
threads (``/proc/PID``), asyncio tasks and event-loop lag (``GET /metrics``:
``vocero_asyncio_tasks``, ``vocero_event_loop_lag_seconds``, with ``/healthz`` answer time as a
second view of lag), live sessions and queue depths (``/metrics``), and row counts of the store
(sessions, audit events, operations, follow-ups; read from the SQLite file). After the run every
caller ends, the server settles, and the last samples are compared with the baseline taken
before the first caller.

Output: the series and a summary (RSS growth per hour after warm-up, a least-squares slope; FDs,
tasks and threads at baseline against after the sessions ended; lag p99 per window; the goals)
as JSON, and with ``--html FILE`` a self-contained report (inline SVG, nothing fetched). With
``--samples FILE`` every sample is also appended to FILE as one JSON line when it is taken, so a
run cut short (or still running) can be read.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx

from vocero.app.settings import REPO_ROOT
from vocero.bench.soak_callers import TURN_TIMEOUT_S, Tally, _seat
from vocero.bench.soak_report import GOAL_SESSIONS, TABLES, Sample, render_html, summarize

PROFILES = REPO_ROOT / "fixtures" / "profiles"
IDENTITIES = REPO_ROOT / "fixtures" / "identities.yaml"
SIM_SCRIPT = REPO_ROOT / "fixtures" / "eval" / "sim.yaml"
_METRIC = re.compile(r"^(vocero_[a-z_]+)(\{[^}]*\})?\s+([-+0-9.eEna]+)$")


# ------------------------------------------------------------------------------ the server


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in this process's environment (the server subprocess inherits it) while the
    block runs, the previous values back after."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _proc(pid: int) -> dict[str, float]:
    """Resident memory (MB), open file descriptors and threads of ``pid``."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = {key: rest.split() for key, _, rest in (line.partition(":") for line in status)}
    return {
        "rss_mb": round(int(fields["VmRSS"][0]) / 1024, 2),
        "fds": float(len(os.listdir(f"/proc/{pid}/fd"))),
        "threads": float(int(fields["Threads"][0])),
    }


def fd_kinds(pid: int) -> dict[str, int]:
    """What ``pid``'s open descriptors are: sockets, pipes, event/epoll inodes, the store's
    files by name, other files (to tell a leak from a pool that grew)."""
    kinds: Counter[str] = Counter()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(("socket:", "pipe:")):
            kinds[target.split(":", 1)[0]] += 1
        elif target.startswith("anon_inode:"):
            kinds[target.removeprefix("anon_inode:").strip("[]")] += 1
        elif ".db" in Path(target).name:
            kinds["store:" + Path(target).name] += 1
        else:
            kinds["file"] += 1
    return dict(sorted(kinds.items()))


def parse_metrics(text: str) -> dict[str, float]:
    """The ``vocero_*`` series of a Prometheus text page the soak reads: name plus labels."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        match = _METRIC.match(line.strip())
        if match is None:
            continue
        name, labels, value = match.groups()
        if name in {"vocero_asyncio_tasks", "vocero_event_loop_lag_seconds",
                    "vocero_active_sessions", "vocero_queue_depth",
                    "vocero_frames_dropped_total", "vocero_process_heap_bytes",
                    "vocero_heap_trimmed_bytes_total"}:
            with contextlib.suppress(ValueError):
                values[name + (labels or "")] = float(value)
    return values


def _rows(db: Path) -> dict[str, int]:
    """Row counts of the store's tables the soak watches (read-only, straight from the file)."""
    counts: dict[str, int] = {}
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as con:
        for key, table in TABLES.items():
            try:
                counts[key] = int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            except sqlite3.Error:
                counts[key] = -1
    return counts


# ------------------------------------------------------------------------------ sampling


async def _sample(http: httpx.AsyncClient, pid: int, db: Path, t0: float, phase: str,
                  live: int) -> Sample:
    proc = _proc(pid)
    started = time.perf_counter()
    await http.get("/healthz")
    healthz_ms = (time.perf_counter() - started) * 1000
    metrics = parse_metrics((await http.get("/metrics")).text)
    rows = await anyio.to_thread.run_sync(_rows, db)
    lag = metrics.get("vocero_event_loop_lag_seconds")
    return Sample(
        t_s=round(time.monotonic() - t0, 2), phase=phase, live=live,
        rss_mb=proc["rss_mb"], fds=proc["fds"], threads=proc["threads"],
        tasks=metrics.get("vocero_asyncio_tasks"),
        loop_lag_ms=None if lag is None else round(lag * 1000, 3),
        healthz_ms=round(healthz_ms, 2),
        active_sessions=metrics.get("vocero_active_sessions"),
        queues={k: v for k, v in metrics.items() if k.startswith("vocero_queue_depth")},
        dropped={k.removeprefix("vocero_frames_dropped_total"): v for k, v in metrics.items()
                 if k.startswith("vocero_frames_dropped_total")},
        rows=rows,
        heap_in_use_mb=_mb(metrics.get('vocero_process_heap_bytes{part="in_use"}')),
        heap_free_mb=_mb(metrics.get('vocero_process_heap_bytes{part="free"}')),
        heap_trimmed_mb=_mb(metrics.get("vocero_heap_trimmed_bytes_total")),
    )


def _mb(size: float | None) -> float | None:
    return None if size is None else round(size / 2**20, 2)


class _Samples:
    """The samples taken so far, each also appended to ``path`` (JSON lines) as it is taken."""

    def __init__(self, path: Path | None) -> None:
        self.taken: list[Sample] = []
        self._path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("", encoding="utf-8")

    def append(self, sample: Sample) -> None:
        self.taken.append(sample)
        if self._path is not None:
            with self._path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(sample.as_json(), sort_keys=True) + "\n")


# ------------------------------------------------------------------------------ the run


async def run_soak(*, minutes: float, sessions: int, runners: str = "sim", sample_s: float = 5.0,
                   warmup_s: float | None = None, settle_s: float = 10.0,
                   seed: int = 1, samples_file: Path | None = None) -> dict[str, Any]:
    from vocero.evals.server import Server

    duration_s = minutes * 60
    warm = warmup_s if warmup_s is not None else min(60.0, duration_s / 5)
    work = Path(tempfile.mkdtemp(prefix="vocero-soak-"))
    # headroom over N: a session ended abruptly holds its slot until the server has let go of it
    limits = {"VOCERO_MAX_SESSIONS": str(sessions * 2 + 10),
              "VOCERO_MAX_PENDING_PER_ADDRESS": str(sessions * 2 + 10)}
    with _environment(limits):
        server = Server(runners=runners, profiles=PROFILES, identities=IDENTITIES, work=work,
                        sim_script=str(SIM_SCRIPT) if runners == "sim" else "")
    tally = Tally()
    samples = _Samples(samples_file)
    try:
        await anyio.to_thread.run_sync(server.wait_ready)
        pid, db = server.process.pid, work / "vocero.db"
        stop = anyio.Event()
        t0 = time.monotonic()
        async with httpx.AsyncClient(base_url=server.base, timeout=10.0) as http:
            for _ in range(3):
                samples.append(await _sample(http, pid, db, t0, "baseline", 0))
                await anyio.sleep(min(1.0, sample_s))
            descriptors = {"baseline": fd_kinds(pid)}
            load_start = time.monotonic()
            async with anyio.create_task_group() as callers:
                for seat in range(sessions):
                    callers.start_soon(_seat, server.ws_url, tally, seed * 100_003 + seat, stop)
                while time.monotonic() - load_start < duration_s:
                    await anyio.sleep(sample_s)
                    live = tally.sessions_started - tally.sessions_ended
                    samples.append(await _sample(http, pid, db, t0, "load", live))
                stop.set()  # each caller finishes its step and ends
                with anyio.move_on_after(TURN_TIMEOUT_S * 2):
                    while tally.sessions_started > tally.sessions_ended:  # noqa: ASYNC110
                        await anyio.sleep(0.2)
                callers.cancel_scope.cancel()
            # the server lets go of what the sessions held: wait for it, then sample it settled
            with anyio.move_on_after(settle_s * 3):
                while True:
                    sample = await _sample(http, pid, db, t0, "settling", 0)
                    if not sample.active_sessions:
                        break
                    await anyio.sleep(0.5)
            await anyio.sleep(settle_s)
            for _ in range(3):
                samples.append(await _sample(http, pid, db, t0, "after", 0))
                await anyio.sleep(min(1.0, sample_s))
            descriptors["after"] = fd_kinds(pid)
    finally:
        await anyio.to_thread.run_sync(server.stop)
    summary = summarize(samples.taken, warmup_s=warm, duration_s=duration_s, sessions=sessions,
                        runners=runners)
    before, after = descriptors["baseline"], descriptors["after"]
    summary["returned_to_baseline"]["fds"]["change_by_kind"] = {
        kind: after.get(kind, 0) - before.get(kind, 0) for kind in sorted({*before, *after})
        if after.get(kind, 0) != before.get(kind, 0)}
    return {
        "benchmark": "soak",
        "runners": runners,
        "sessions": sessions,
        "minutes": minutes,
        "sample_s": sample_s,
        "callers": {
            "started": tally.sessions_started, "ended": tally.sessions_ended,
            "connect_failures": tally.connect_failures, "steps": dict(tally.steps),
            "outcomes": dict(tally.outcomes), "errors": dict(tally.errors),
        },
        "summary": summary,
        "descriptors": descriptors,
        "series": [s.as_json() for s in samples.taken],
        "server_problems": server.problems_since(0, limit=20),
        "machine": {"cores": os.cpu_count() or 1},
    }


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    """``vocero bench soak --minutes M [--sessions N] [--runners sim|cpu] [--html FILE]``."""
    result = await run_soak(
        minutes=float(getattr(args, "minutes", 5.0)),
        sessions=int(getattr(args, "sessions", None) or GOAL_SESSIONS),
        runners=str(getattr(args, "runners", "sim")),
        sample_s=float(getattr(args, "sample_s", 5.0)),
        settle_s=float(getattr(args, "settle_s", 10.0)),
        samples_file=Path(args.samples_file) if getattr(args, "samples_file", None) else None,
    )
    if getattr(args, "html_file", None):
        await anyio.Path(args.html_file).write_text(render_html(result), encoding="utf-8")
    return result
