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
as JSON, and with ``--html FILE`` a self-contained report (inline SVG, nothing fetched).
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import random
import re
import sqlite3
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

from vocero.app.settings import REPO_ROOT
from vocero.bench.stats import percentiles

PROFILES = REPO_ROOT / "fixtures" / "profiles"
IDENTITIES = REPO_ROOT / "fixtures" / "identities.yaml"
SIM_SCRIPT = REPO_ROOT / "fixtures" / "eval" / "sim.yaml"
TOKEN = "demo-token"
"""A fixture caller allowed to read, write and ask for call-backs (fixtures/identities.yaml)."""

GOAL_RSS_MB_PER_HOUR = 10.0
GOAL_SESSIONS = 50
LAG_FLAT_FACTOR = 2.0
"""Lag p99 counts as flat when no window's p99 exceeds the first window's by more than this
factor plus 5 ms (a single slow scrape on a shared machine is not a trend)."""
LAG_FLAT_SLACK_MS = 5.0
TURN_TIMEOUT_S = 20.0
IDLE = {"LISTENING", "AWAITING_CONFIRMATION", "FAILED", "DEGRADED"}
OVERSIZED_BYTES = 80 * 1024
"""Over the relay's 64 KiB frame limit, under the WebSocket server's 1 MiB message limit."""
STEPS = ("lookup", "write", "barge_in", "followup", "resume", "bad_input")
WEIGHTS = (30, 15, 15, 10, 15, 15)
TABLES = {
    "sessions": "sessions",
    "audit_events": "audit_events",
    "operations": "operations",
    "followups": "followups",
}
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
                    "vocero_frames_dropped_total"}:
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

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


# ------------------------------------------------------------------------------ the callers


@dataclass
class Tally:
    """What the callers did, counted over the run."""

    steps: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    sessions_started: int = 0
    sessions_ended: int = 0
    connect_failures: int = 0


class Caller:
    """One caller's WebSocket session, frames read as they come."""

    def __init__(self, url: str, tally: Tally, rng: random.Random) -> None:
        self.url, self.tally, self.rng = url, tally, rng
        self.ws: ClientConnection | None = None
        self.session_id = ""
        self.resume_token = ""
        self.sequence = 0
        self.state = "LISTENING"
        self.pending: dict[str, Any] | None = None
        self.received_ms: dict[str, float] = {}
        self.rate = 16000

    async def send(self, name: str, payload: dict[str, Any] | None = None) -> None:
        assert self.ws is not None
        self.sequence += 1
        await self.ws.send(json.dumps({
            "specversion": "1.0", "type": f"vocero.{name}", "id": f"evt_{uuid.uuid4().hex}",
            "time": datetime.now(UTC).isoformat(), "source": "web-client",
            "data": {"session_id": self.session_id, "sequence": self.sequence,
                     "payload": payload or {}},
        }))

    async def open(self, resume: str = "") -> None:
        self.ws = await connect(self.url, open_timeout=15, max_size=2**22, close_timeout=2)
        self.sequence = 0  # each connection counts its own frames from 1
        await self.send("session.connect.v1", {"token": TOKEN, **(
            {"resume_token": resume} if resume else {})})
        await self.until(lambda kind, _: kind == "session.configuration_applied.v1")
        await self.send("session.update_requested.v1", {
            "client_capabilities": {"audio_codecs": ["pcm16"], "supports_playout_ack": True}})

    async def frame(self) -> tuple[str, dict[str, Any]]:
        assert self.ws is not None
        envelope = json.loads(await self.ws.recv())
        kind = str(envelope.get("type", "")).removeprefix("vocero.")
        payload = dict(envelope.get("data", {}).get("payload", {}))
        if kind == "response.audio_delta.v1":
            # played as it arrives: the read-back is heard once all of it was acknowledged
            generation = str(payload.get("generation_id", ""))
            size = len(str(payload.get("audio", ""))) * 3 // 4
            ms = size / 2 / int(payload.get("sample_rate") or self.rate) * 1000
            self.received_ms[generation] = self.received_ms.get(generation, 0.0) + ms
            await self.send("output.playout_progress.v1", {
                "generation_id": generation, "played_ms": int(self.received_ms[generation]),
                "buffered_ms": 0})
        elif kind == "session.configuration_applied.v1":
            self.session_id = str(payload.get("session_id", self.session_id))
            self.resume_token = str(payload.get("resume_token", ""))
            self.rate = int(payload.get("effective", {}).get("output_sample_rate") or self.rate)
            for rejected in payload.get("rejected_fields") or []:
                if rejected.get("field") == "resume_token":
                    self.tally.outcomes[f"resume_refused_{rejected.get('reason')}"] += 1
        elif kind == "session.state.v1":
            self.state = str(payload.get("state", ""))
        elif kind == "tool.confirmation_required.v1":
            self.pending = payload
        elif kind == "tool.status.v1":
            self.tally.outcomes[f"tool_{payload.get('kind', '')}_{payload.get('status', '')}"] += 1
        elif kind == "error.v1":
            self.tally.errors[str(payload.get("code", ""))] += 1
        return kind, payload

    async def until(self, done: Any, timeout_s: float = TURN_TIMEOUT_S) -> tuple[str, Any]:
        with anyio.fail_after(timeout_s):
            while True:
                kind, payload = await self.frame()
                if done(kind, payload):
                    return kind, payload

    async def turn(self, text: str) -> None:
        """Say ``text`` and read until its answers are done and the session idles."""
        await self.send("input.text.v1", {"text": text})
        await self._settle()

    async def _settle(self) -> None:
        created: set[str] = set()
        finished: set[str] = set()

        def done(kind: str, payload: dict[str, Any]) -> bool:
            generation = str(payload.get("generation_id", ""))
            if kind == "response.created.v1":
                created.add(generation)
            elif kind == "response.completed.v1":
                finished.add(generation)
            return bool(created) and created <= finished and self.state in IDLE

        await self.until(done)

    async def confirm(self) -> None:
        """The read-back was heard (its audio acknowledged, its answer completed): "yes"."""
        if self.pending is None:
            self.tally.outcomes["no_confirmation_asked"] += 1
            return
        self.pending = None
        await self.turn("yes")
        self.tally.outcomes["confirmed"] += 1

    # -------------------------------------------------------------------------- steps

    async def step(self, name: str) -> bool:
        """One step; False when it ended the session (the caller is then replaced)."""
        rng = self.rng
        if name == "lookup":
            await self.turn(rng.choice(("where is my order A123", "track order A124",
                                        "what appointments do I have", "status of order B777")))
        elif name == "write":
            # the agent learns the appointment's current version from the list, then moves it
            await self.turn("what appointments do I have")
            day = rng.choice(("monday", "tuesday", "wednesday", "thursday", "friday"))
            await self.turn(f"move appointment APT-1001 to {day} at {rng.randint(1, 5)} pm")
            await self.confirm()
        elif name == "followup":
            await self.turn(f"call me back tomorrow about my order A12{rng.choice((3, 4))}")
            if self.pending is not None:
                await self.confirm()
        elif name == "barge_in":
            await self.send("input.text.v1", {"text": "what appointments do I have"})
            await self.until(lambda kind, _: kind == "response.audio_delta.v1")
            await self.send("input.speech_started.v1")
            await self.turn("where is my order A123")
        elif name == "resume":
            await self._drop()
            await self.open(resume=self.resume_token)
        elif name == "bad_input":
            assert self.ws is not None
            kind = rng.choice(("malformed", "unknown_type", "oversized"))
            self.tally.outcomes[f"bad_{kind}"] += 1
            if kind == "malformed":
                await self.ws.send('{"specversion": "1.0", "type": ')
                self.sequence += 1  # a rejected frame counts too (docs/protocol.md)
            elif kind == "unknown_type":
                await self.send("no.such_event.v1", {})
            else:
                await self.send("input.text.v1", {"text": "x" * OVERSIZED_BYTES})
            with contextlib.suppress(TimeoutError):
                await self.until(lambda kind, _: kind == "error.v1", timeout_s=5)
        return True

    async def _drop(self) -> None:
        """End the connection without ``session.close.v1`` (a network loss)."""
        if self.ws is not None:
            self.ws.transport.abort()
            with contextlib.suppress(Exception):
                await self.ws.wait_closed()
            self.ws = None

    async def end(self, abrupt: bool) -> None:
        if self.ws is None:
            return
        if abrupt:
            await self._drop()
            return
        with contextlib.suppress(Exception):
            await self.send("session.close.v1")
            await self.ws.close()
        self.ws = None


async def _caller(url: str, tally: Tally, rng: random.Random, stop: anyio.Event) -> None:
    """One caller's life: connect, a few steps, end; a failure ends it early."""
    caller = Caller(url, tally, rng)
    tally.sessions_started += 1
    try:
        await caller.open()
    except (OSError, WebSocketException, TimeoutError) as exc:
        tally.connect_failures += 1
        tally.sessions_ended += 1
        tally.errors[f"connect_{type(exc).__name__}"] += 1
        await anyio.sleep(1.0)  # refused (capacity): wait a moment, as a caller redialling
        return
    abrupt = rng.random() < 0.2
    try:
        for _ in range(rng.randint(3, 8)):
            if stop.is_set():
                break
            name = rng.choices(STEPS, WEIGHTS)[0]
            tally.steps[name] += 1
            await caller.step(name)
            await anyio.sleep(rng.uniform(0.2, 1.5))  # the caller thinks before the next line
    except TimeoutError:
        tally.errors["turn_timeout"] += 1
    except (OSError, WebSocketException) as exc:
        tally.errors[f"closed_{type(exc).__name__}"] += 1
    except (ValueError, KeyError, TypeError) as exc:  # a frame this caller did not expect
        tally.errors[f"unexpected_{type(exc).__name__}"] += 1
    finally:
        tally.outcomes["abrupt_end" if abrupt else "closed_end"] += 1
        with anyio.CancelScope(shield=True):
            await caller.end(abrupt)
        tally.sessions_ended += 1


async def _seat(url: str, tally: Tally, seed: int, stop: anyio.Event) -> None:
    """One of the N seats: a new caller as soon as the last one ended, until ``stop``."""
    rng = random.Random(seed)
    await anyio.sleep(rng.uniform(0, 2.0))  # callers do not all dial at once
    while not stop.is_set():
        await _caller(url, tally, rng, stop)


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
    )


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
    """The figures the goals are judged on (see the module docstring)."""
    baseline = [s for s in samples if s.phase == "baseline"]
    load = [s for s in samples if s.phase == "load"]
    after = [s for s in samples if s.phase == "after"]
    start = load[0].t_s if load else 0.0
    steady = [s for s in load if s.t_s - start >= warmup_s]
    growth = slope_per_hour([(s.t_s, s.rss_mb) for s in steady])

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


# ------------------------------------------------------------------------------ the run


async def run_soak(*, minutes: float, sessions: int, runners: str = "sim", sample_s: float = 5.0,
                   warmup_s: float | None = None, settle_s: float = 10.0,
                   seed: int = 1) -> dict[str, Any]:
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
    samples: list[Sample] = []
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
    summary = summarize(samples, warmup_s=warm, duration_s=duration_s, sessions=sessions,
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
        "series": [s.as_json() for s in samples],
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
    )
    if getattr(args, "html_file", None):
        await anyio.Path(args.html_file).write_text(render_html(result), encoding="utf-8")
    return result


# ------------------------------------------------------------------------------ the report


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
        ("Resident memory", "rss_mb", "MB"), ("Open file descriptors", "fds", ""),
        ("Threads", "threads", ""), ("Asyncio tasks", "tasks", ""),
        ("Event-loop lag (at scrape)", "loop_lag_ms", "ms"),
        ("/healthz answer", "healthz_ms", "ms"),
        ("Live callers", "live", ""),
    ]
    body = [_chart(title, [(s["t_s"], float(s[key])) for s in series if s[key] is not None], unit,
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
(least squares over {rss['samples_in_fit']} samples).</p>
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
