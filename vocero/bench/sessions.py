"""``vocero bench sessions --n N``: N concurrent realtime sessions against a server subprocess.

Each session streams 20 ms of caller audio 50 times a second and receives the agent's audio at
50 frames a second (the simulator speaks in 20 ms chunks, the client plays it in real time and
reports playout every 50 ms, and each completed answer starts the next turn).

The sessions are spread over several load-generator processes (:mod:`vocero.bench.client`),
each with its own event loop, so that the generator is not the bottleneck. All sessions connect
first; then every worker starts streaming at one agreed instant, first turns spread over a ramp;
after a warm-up the measured window opens. ``VOCERO_BENCH_WORKERS`` overrides the number of
generator processes (by default one per hundred sessions, at most one per core).

Reported per direction: frames per second against the target (N x 50). Frame lag is the arrival
time of a ``response.audio_delta.v1`` minus the server's envelope ``time`` (1 ms resolution);
late frames are those that arrived after the caller's playout buffer ran dry. Server figures
(CPU time, resident memory idle and at peak, summed over the supervisor and its workers) come
from ``/proc``; the generator's CPU time is reported too, because on a small machine it competes
with the server for the same cores.

``--workers N`` runs the server as ``serve --workers N`` (N > 1 needs a PostgreSQL ``--db``).
``--search`` looks for the most sessions held within limits (p95 lag <= 20 ms, <= 0.5 % late
frames, every frame flowing): from ``--n`` upwards by a quarter until a run fails, then halving
the gap down to ten sessions; each probe is a fresh server.
"""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx
import msgspec
import yaml
from anyio.streams.buffered import BufferedByteReceiveStream

from vocero.bench.client import Ready, Start, WorkerPlan, WorkerResult
from vocero.bench.stats import percentiles

SCRIPT = {
    "tts": {"ms_per_char": 60, "chunk_ms": 20},
    "llm": [
        {
            "match": ".*",
            "reply": "Thanks for calling. Your order left our warehouse this "
            "morning and should reach you by Thursday afternoon.",
        }
    ],
}
FRAMES_PER_S = 50
GOAL_SESSIONS = 500
GOAL_P95_MS = 20.0
SENT_FLOWING = 0.99
"""Share of the target send rate that counts as all frames flowing (the generator kept up)."""
RECEIVED_FLOWING = 0.95
"""Share of the target receive rate that counts as flowing: the agent is silent for a moment
between two answers (the last playout report, then the next turn), about 2 % of the time."""
LATE_FLOWING = 0.005
"""Share of received agent frames that may arrive after the caller's buffer ran dry."""
SEARCH_RESOLUTION = 10
SESSIONS_PER_WORKER = 100
WARMUP_S = 2.0
MAX_LINE = 64 * 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _proc_status_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _proc_cpu_s(pid: int) -> float:
    """User + system CPU time of a process, all threads, from ``/proc/PID/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_busy_s() -> float:
    """CPU seconds the whole machine spent busy (all cores), from ``/proc/stat``."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def default_workers(n: int) -> int:
    return max(1, min(os.cpu_count() or 1, math.ceil(n / SESSIONS_PER_WORKER)))


def split(n: int, parts: int) -> list[int]:
    """``n`` sessions over ``parts`` workers, as evenly as possible."""
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


@dataclass
class _Worker:
    process: anyio.abc.Process
    lines: BufferedByteReceiveStream
    ready: Ready | None = None
    result: WorkerResult | None = None

    async def line(self) -> bytes:
        return await self.lines.receive_until(b"\n", MAX_LINE)


def _family(pid: int) -> list[int]:
    """``pid`` and its children (the workers of ``serve --workers N``)."""
    pids = [pid]
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            pids += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return pids


def _family_rss_mb(pid: int) -> float:
    total = 0.0
    for each in _family(pid):
        try:
            total += _proc_status_mb(each, "VmRSS")
        except OSError:
            continue
    return total


def _family_cpu_s(pid: int) -> float:
    total = 0.0
    for each in _family(pid):
        try:
            total += _proc_cpu_s(each)
        except OSError:
            continue
    return total


@dataclass
class _Probe:
    """The server's resources (all its processes), sampled while the benchmark runs."""

    pid: int
    peak_rss_mb: float = 0.0
    idle_rss_mb: float = 0.0
    marks: dict[str, tuple[float, float, float]] = field(default_factory=dict)

    def sample(self) -> None:
        self.peak_rss_mb = max(self.peak_rss_mb, _family_rss_mb(self.pid))

    def mark(self, name: str) -> None:
        self.marks[name] = (time.monotonic(), _family_cpu_s(self.pid), _machine_busy_s())

    def between(self, first: str, last: str) -> tuple[float, float, float]:
        (t0, cpu0, busy0), (t1, cpu1, busy1) = self.marks[first], self.marks[last]
        return t1 - t0, cpu1 - cpu0, busy1 - busy0


async def wait_ready(port: int, server_workers: int = 1) -> None:
    """Every worker answers ``/readyz`` 200 (the port spreads the polls over them, so this
    waits for as many answers in a row, from fresh connections, as there are workers)."""
    in_a_row = 0
    for _ in range(1200):
        try:
            async with httpx.AsyncClient() as http:  # a new connection: any worker may answer
                ready = (await http.get(f"http://127.0.0.1:{port}/readyz", timeout=2))
            in_a_row = in_a_row + 1 if ready.status_code == 200 else 0
        except httpx.HTTPError:
            in_a_row = 0
        if in_a_row >= 3 * server_workers:
            return
        await anyio.sleep(0.1)
    raise RuntimeError("server never became ready")


async def _start_server(
    port: int, n: int, workdir: Path, *, server_workers: int = 1, db: str = ""
) -> anyio.abc.Process:
    script = workdir / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    env = {
        **os.environ,
        "VOCERO_MAX_SESSIONS": str(n + 10),
        # the load generators open up to 16 connections each at once, all from loopback
        "VOCERO_MAX_PENDING_PER_ADDRESS": str(n + 10),
    }
    command = [
        sys.executable,
        "-m",
        "vocero",
        "serve",
        "--runners",
        "sim",
        "--port",
        str(port),
        "--sim-script",
        str(script),
        "--db",
        db or f"sqlite+aiosqlite:///{workdir}/bench.db",
        "--log-format",
        "json",
        "--workers",
        str(server_workers),
    ]
    return await anyio.open_process(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )


async def _start_workers(plans: list[WorkerPlan]) -> list[_Worker]:
    workers = []
    for plan in plans:
        process = await anyio.open_process(
            [
                sys.executable,
                "-m",
                "vocero.bench.client",
                msgspec.json.encode(plan).decode(),
            ],
            stderr=None,
        )
        assert process.stdout is not None
        workers.append(_Worker(process, BufferedByteReceiveStream(process.stdout)))
    return workers


async def run_sessions(
    n: int,
    *,
    duration_s: float = 10.0,
    workers: int | None = None,
    server_workers: int = 1,
    db: str = "",
) -> dict[str, Any]:
    """One run of ``n`` sessions; ``workers`` load-generator processes, ``server_workers``
    server processes (``serve --workers``) on ``db`` (a fresh SQLite file by default)."""
    count = workers or int(os.environ.get("VOCERO_BENCH_WORKERS", "0")) or default_workers(n)
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="vocero-bench-"))
    server = await _start_server(port, n, workdir, server_workers=server_workers, db=db)
    pool: list[_Worker] = []
    try:
        await wait_ready(port, server_workers)
        shares = split(n, count)
        plans = [
            WorkerPlan(
                host="127.0.0.1",
                port=port,
                sessions=share,
                first_index=sum(shares[:i]),
                total=n,
                warmup_s=WARMUP_S,
                duration_s=duration_s,
            )
            for i, share in enumerate(shares)
            if share
        ]
        probe = _Probe(server.pid)
        probe.idle_rss_mb = _family_rss_mb(server.pid)
        pool = await _start_workers(plans)
        with anyio.fail_after(120 + n * 0.2):
            for worker in pool:
                worker.ready = msgspec.json.decode(await worker.line(), type=Ready)
        start = time.time() + 0.2
        for worker in pool:
            assert worker.process.stdin is not None
            await worker.process.stdin.send(msgspec.json.encode(Start(at=start)) + b"\n")
        parent_cpu = time.process_time()
        with anyio.fail_after(WARMUP_S + duration_s + 60):
            await _measure(pool, probe, start + WARMUP_S, duration_s)
        parent_cpu = time.process_time() - parent_cpu
        probe.sample()
        peak = probe.peak_rss_mb if server_workers > 1 else max(
            probe.peak_rss_mb, _proc_status_mb(server.pid, "VmHWM"))
        report = _report(n, duration_s, pool, probe, peak, parent_cpu)
        report["server"] |= {
            "workers": server_workers,
            "store": "postgresql" if db.startswith("postgres") else "sqlite",
            "idle_rss_mb": round(probe.idle_rss_mb, 1),
            "memory_per_session_mb": round(max(0.0, peak - probe.idle_rss_mb) / max(1, n), 3),
        }
        return report
    finally:
        for worker in pool:
            if worker.process.returncode is None:
                worker.process.kill()
        server.terminate()
        with anyio.move_on_after(15):
            await server.wait()


async def _measure(
    pool: list[_Worker], probe: _Probe, window_start: float, duration_s: float
) -> None:
    """Sample the server through the measured window while the workers report."""
    async with anyio.create_task_group() as tg:
        for worker in pool:
            tg.start_soon(_collect, worker)
        await anyio.sleep(max(0.0, window_start - time.time()))
        probe.mark("start")
        while time.time() < window_start + duration_s:
            probe.sample()
            await anyio.sleep(0.25)
        probe.mark("end")


async def _collect(worker: _Worker) -> None:
    worker.result = msgspec.json.decode(await worker.line(), type=WorkerResult)
    await worker.process.wait()


def _report(
    n: int,
    duration_s: float,
    pool: list[_Worker],
    probe: _Probe,
    peak_rss_mb: float,
    parent_cpu_s: float,
) -> dict[str, Any]:
    results = [w.result for w in pool if w.result is not None]
    errors: Counter[str] = Counter()
    for r in results:
        errors.update(r.errors)
    wall_s, server_cpu_s, machine_busy_s = probe.between("start", "end")
    generator_cpu_s = sum(r.cpu_s for r in results) + parent_cpu_s * duration_s / wall_s
    target = n * FRAMES_PER_S
    connected = sum(r.connected for r in results)
    dropped = sum(r.dropped for r in results)
    sent = sum(r.sent for r in results)
    received = sum(r.received for r in results)
    reports = sum(r.reports for r in results)
    late = sum(r.late_frames for r in results)
    lag = percentiles([lag for r in results for lag in r.lags_ms])
    checks = {
        "all_connected": connected == n,
        "none_dropped": dropped == 0,
        "no_errors": not errors,
        "sent_flowing": sent / duration_s >= SENT_FLOWING * target,
        "received_flowing": received / duration_s >= RECEIVED_FLOWING * target,
        "few_late_frames": late <= LATE_FLOWING * max(1, received),
        "p95_lag": lag.get("p95", math.inf) <= GOAL_P95_MS,
    }
    within = all(checks.values())
    # the per-session CPU cost (issue 46 item 4): CPU seconds a process spent in the window per
    # minute of one session; process CPU time, so comparable on a loaded machine too
    session_minutes = max(1, n) * wall_s / 60.0
    cores = os.cpu_count() or 1
    rss_mb = round(peak_rss_mb, 1)
    return {
        "benchmark": "sessions",
        "sessions": {
            "requested": n,
            "connected": connected,
            "dropped": dropped,
            "permessage_deflate": sum(w.ready.deflate for w in pool if w.ready is not None),
        },
        "duration_s": duration_s,
        "warmup_s": WARMUP_S,
        "frames_per_s": {
            "target_each_way": target,
            "sent": round(sent / duration_s, 1),
            "received": round(received / duration_s, 1),
            "sent_ratio": round(sent / duration_s / target, 4),
            "received_ratio": round(received / duration_s / target, 4),
            "playout_reports": round(reports / duration_s, 1),
        },
        "outbound_frame_lag_ms": lag,
        "late_frames": {
            "count": late,
            "ratio": round(late / max(1, received), 5),
            "gap_ms_total": round(sum(r.gap_ms for r in results), 1),
        },
        "errors": dict(errors),
        "server": {
            "peak_rss_mb": rss_mb,
            "cpu_s": round(server_cpu_s, 2),
            "cpu_share_of_one_core": round(server_cpu_s / wall_s, 3),
            "cpu_us_per_message": round(server_cpu_s / max(1, sent + received + reports) * 1e6, 1),
            "cpu_s_per_session_minute": round(server_cpu_s / session_minutes, 4),
        },
        "generator": {
            "workers": len(pool),
            "cpu_s": round(generator_cpu_s, 2),
            "cpu_share_of_one_core": round(generator_cpu_s / wall_s, 3),
            "cpu_s_per_session_minute": round(generator_cpu_s / session_minutes, 4),
            "send_slip_ms": percentiles([slip for r in results for slip in r.send_slip_ms]),
        },
        "machine": {
            "cores": cores,
            "busy_share": round(machine_busy_s / (wall_s * cores), 3),
            "other_cpu_s": round(max(0.0, machine_busy_s - server_cpu_s - generator_cpu_s), 2),
        },
        "checks": checks,
        "within_limits": within,
        "goal": f"{GOAL_SESSIONS} sessions, p95 lag <= {GOAL_P95_MS:g} ms, all frames flowing",
        "goal_met": within and n >= GOAL_SESSIONS,
        "note": (
            f"the load generator ({len(pool)} process{'es' if len(pool) != 1 else ''}) runs on "
            f"the same {cores} cores as "
            "the server (one process, one event loop); its CPU use is reported above, and "
            "'other_cpu_s' is what the rest of the machine used in the window. Lag is arrival "
            "minus the server's envelope time (1 ms resolution); a late frame arrived after the "
            "caller's playout buffer ran dry. cpu_us_per_message counts caller audio, agent "
            "audio and playout reports alike; cpu_s_per_session_minute is CPU time over "
            "session-minutes in the window."
        ),
    }


async def search_sessions(
    start: int,
    *,
    duration_s: float = 10.0,
    server_workers: int = 1,
    db: str = "",
    limit: int = 2000,
) -> dict[str, Any]:
    """The most sessions held within limits: up from ``start`` by a quarter until a run fails,
    then the gap halved down to :data:`SEARCH_RESOLUTION`. Every probe is reported."""
    probes: list[dict[str, Any]] = []

    async def held(n: int) -> bool:
        report = await run_sessions(n, duration_s=duration_s, server_workers=server_workers,
                                    db=db)
        probes.append({
            "sessions": n, "within_limits": report["within_limits"],
            "failed": sorted(k for k, ok in report["checks"].items() if not ok),
            "p95_lag_ms": report["outbound_frame_lag_ms"].get("p95"),
            "late_ratio": report["late_frames"]["ratio"],
            "received_ratio": report["frames_per_s"]["received_ratio"],
            "peak_rss_mb": report["server"]["peak_rss_mb"],
            "memory_per_session_mb": report["server"]["memory_per_session_mb"],
            "server_cpu_share": report["server"]["cpu_share_of_one_core"],
            "generator_cpu_share": report["generator"]["cpu_share_of_one_core"],
        })
        return bool(report["within_limits"])

    good, bad = 0, 0
    n = max(1, start)
    while n <= limit:
        if not await held(n):
            bad = n
            break
        good, n = n, max(n + SEARCH_RESOLUTION, int(n * 1.25))
    while bad and bad - good > SEARCH_RESOLUTION:
        middle = (good + bad) // 2
        if await held(middle):
            good = middle
        else:
            bad = middle
    best = next((p for p in probes if p["sessions"] == good), None)
    return {
        "benchmark": "sessions_search",
        "server_workers": server_workers,
        "store": "postgresql" if db.startswith("postgres") else "sqlite",
        "duration_s": duration_s,
        "limits": {"p95_lag_ms": GOAL_P95_MS, "late_ratio": LATE_FLOWING,
                   "received_ratio": RECEIVED_FLOWING, "sent_ratio": SENT_FLOWING},
        "sessions_held": good,
        "first_failing": bad or None,
        "memory_per_session_mb": best["memory_per_session_mb"] if best else None,
        "peak_rss_mb": best["peak_rss_mb"] if best else None,
        "probes": probes,
        "cores": os.cpu_count() or 1,
    }


async def sessions_command(args: Any) -> dict[str, Any]:
    """``vocero bench sessions [--n N] [--workers W] [--db URL] [--search]``."""
    server_workers = max(1, int(getattr(args, "workers", 1) or 1))
    db = str(getattr(args, "db", "") or "")
    duration_s = float(getattr(args, "duration", 10.0))
    if getattr(args, "search", False):
        return await search_sessions(args.n, duration_s=duration_s,
                                     server_workers=server_workers, db=db)
    return await run_sessions(args.n, duration_s=duration_s, server_workers=server_workers,
                              db=db)
