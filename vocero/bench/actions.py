"""``vocero bench actions``: confirmed writes end to end through the outbox
(ADR-0010; ADR-0006 for processes sharing the store).

A real store, the real MCP gateway and the fixture appointments server over streamable HTTP (its
own process), the per-session coordinator and the outbox worker of a process holding a node
lease (:mod:`vocero.store.leases`), as ``serve`` wires them. Each sample is one confirmed
reschedule: the caller's "yes" is submitted, the final gate authorizes the operation and its
outbox row (held by this process's node), the worker dispatches it with its operation id and
records the owning service's receipt. Figures:

* ``confirm_to_committed_ms``: ``submit_confirmation`` called -> ``committed`` recorded
  (``--iterations`` samples, one session, sequential, nothing else writing).
* ``sustained``: committed operations per second with every lane writing at once (``--n``
  operations each) and the "yes" -> committed percentiles under that load. A lane is one
  session writing to an appointment of its own: concurrent writes to one appointment would be
  refused as stale versions, by design. Two lanes per process (``VOCERO_BENCH_LANES``).
  ``cpu_ms_per_write``: the CPU time the bench processes spent in that window per committed
  write (the fixture server's and PostgreSQL's not included; ``machine`` has the server's): on a
  shared machine a steadier figure than the rate, which depends on what else runs.
* ``exactly_once``: the committed operations in the store against what the fixture server
  applied (its receipts, its appointments' versions) and how often each id was sent.

``--db URL`` picks the store (default: a fresh SQLite file); the bench migrates it and writes
sessions of its own. ``--workers N`` (N > 1 needs PostgreSQL, as ``serve --workers``) runs N
processes (:mod:`vocero.bench.actions_worker`), each with its own store connection, node
lease, action plane and outbox worker, on the one database and the one fixture server.
They start together: each reports ready, the first measures the sequential latency alone, then
all drive their lanes at once and report their samples as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import msgspec
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from sqlalchemy import select

from vocero.app.settings import REPO_ROOT, db_url
from vocero.app.workers import check_shareable
from vocero.bench.actions_worker import WRITE_TOOL, Driver, WorkerPlan, open_rig
from vocero.bench.stats import percentiles
from vocero.store import Store, upgrade_async
from vocero.store.models import OperationRow, OutboxRow

SERVER = REPO_ROOT / "fixtures" / "mcp_servers" / "appointments_server.py"
WRITE_CALL = "reschedule_appointment"
"""The fixture server's name of the write (``appointments.reschedule`` in the profile)."""
LANES_ENV = "VOCERO_BENCH_LANES"
"""Lanes (sessions writing at once) per process; 2 by default."""
READY_S = 120.0
"""How long a worker process may take to connect and warm up."""
RUN_S = 900.0
"""How long one phase (the sequential samples, the sustained run) may take in all."""


# ------------------------------------------------------------------------ the MCP server


def appointment_ids(count: int) -> list[str]:
    return [f"APT-{1001 + i}" for i in range(count)]


def _seed(folder: Path, count: int) -> None:
    """The fixture server's state: ``count`` appointments of tenant acme, version 1 each."""
    seed = {apt: {"appointment_id": apt, "tenant": "acme", "date": "2026-12-03",
                  "time": "10:00", "timezone": "Europe/Madrid", "service": "Boiler inspection",
                  "status": "scheduled", "version": 1} for apt in appointment_ids(count)}
    (folder / "appointments.json").write_text(json.dumps({"appointments": seed, "receipts": {}}))


@dataclass
class _Server:
    url: str
    pid: int

    def cpu_s(self) -> float:
        """CPU seconds the server used so far (``/proc``; 0 where there is none)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _appointments_server(folder: Path, appointments: int) -> Iterator[_Server]:
    _seed(folder, appointments)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "VOCERO_MCP_STATE": str(folder / "appointments.json"),
           "VOCERO_MCP_RECORD": str(folder / "calls.jsonl")}
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--transport", "http", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the appointments fixture server did not start") from None
                time.sleep(0.05)
        yield _Server(f"http://127.0.0.1:{port}/mcp", process.pid)
    finally:
        process.kill()
        process.wait()


# --------------------------------------------------------------------- N processes


@dataclass
class _Process:
    process: Process
    lines: BufferedByteReceiveStream
    errors: Path
    messages: list[dict[str, Any]] = field(default_factory=list)

    async def tell(self, command: str) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(command.encode() + b"\n")

    async def hear(self, phase: str) -> dict[str, Any]:
        try:
            line = await self.lines.receive_until(b"\n", 16 * 1024 * 1024)
        except (anyio.EndOfStream, anyio.IncompleteRead):
            tail = self.errors.read_text()[-2000:]
            raise RuntimeError(f"a bench worker exited before {phase!r}: {tail}") from None
        message: dict[str, Any] = json.loads(line)
        if message.get("phase") != phase:
            raise RuntimeError(f"a bench worker answered {message!r}, expected {phase!r}")
        self.messages.append(message)
        return message


async def _spawn(plan: WorkerPlan, folder: Path) -> _Process:
    errors = folder / f"worker-{plan.index}.log"
    with errors.open("wb") as sink:
        process = await anyio.open_process(
            [sys.executable, "-m", "vocero.bench.actions_worker",
             msgspec.json.encode(plan).decode()], stderr=sink)
    assert process.stdout is not None
    return _Process(process, BufferedByteReceiveStream(process.stdout), errors)


async def _run_processes(plans: Sequence[WorkerPlan], folder: Path) -> list[dict[str, Any]]:
    """Start every worker, wait until all are ready, let the first measure latency alone, then
    run all at once; their ``latency`` and ``sustained`` messages (first worker first)."""
    workers = [await _spawn(plan, folder) for plan in plans]
    try:
        with anyio.fail_after(READY_S):
            for each in workers:
                await each.hear("ready")
        with anyio.fail_after(RUN_S):
            for each in workers:
                await each.tell("latency")
            for each in workers:
                await each.hear("latency")
            for each in workers:
                await each.tell("sustained")
            for each in workers:
                await each.hear("sustained")
        with anyio.fail_after(30):
            for each in workers:
                if await each.process.wait() != 0:
                    raise RuntimeError(f"a bench worker failed: {each.errors.read_text()[-2000:]}")
    finally:
        for each in workers:
            if each.process.returncode is None:
                each.process.kill()
                with anyio.move_on_after(10, shield=True):
                    await each.process.wait()
            await each.process.aclose()
    return [m for each in workers for m in each.messages if m["phase"] != "ready"]


async def _run_here(plan: WorkerPlan) -> list[dict[str, Any]]:
    """One process: the same phases, in this process."""
    async with open_rig(plan.db, plan.mcp_url) as rig:
        driver = Driver(rig, plan)
        await driver.open()
        return [await driver.latency(), await driver.sustained()]


# ------------------------------------------------------------------------ the checks


async def exactly_once(db: str, sessions: Sequence[str], folder: Path) -> dict[str, Any]:
    """The store's committed writes of ``sessions`` against the fixture server's effects."""
    store = Store.open(db)
    try:
        async with store.read() as session:
            rows = (await session.execute(
                select(OperationRow.id, OperationRow.status, OutboxRow.claimed_by)
                .join(OutboxRow, OutboxRow.operation_id == OperationRow.id, isouter=True)
                .where(OperationRow.session_id.in_(list(sessions)),
                       OperationRow.tool == WRITE_TOOL))).all()
    finally:
        await store.close()
    committed = {row.id for row in rows if row.status == "committed"}
    state = json.loads((folder / "appointments.json").read_text())
    applied = set(state["receipts"])
    effects = sum(a["version"] - 1 for a in state["appointments"].values())
    calls = folder / "calls.jsonl"
    lines = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    sent = Counter(line["meta"].get("io.vocero/operation_id", "") for line in lines
                   if line["tool"] == WRITE_CALL)
    return {
        "operations": len(rows), "committed": len(committed), "applied": len(applied),
        "effects": effects, "sent": sum(sent.values()),
        "sent_more_than_once": sum(1 for count in sent.values() if count > 1),
        "committed_not_applied": len(committed - applied),
        "applied_not_committed": len(applied - committed),
        "dispatched_by": len({row.claimed_by for row in rows if row.status == "committed"}),
        "ok": committed == applied and effects == len(committed) and set(sent) == committed,
    }


# ---------------------------------------------------------------------------- the bench


def _lanes_per_worker() -> int:
    return max(1, int(os.environ.get(LANES_ENV, "") or 2))


def _plans(db: str, url: str, workers: int, lanes: int, per_lane: int,
           iterations: int) -> list[WorkerPlan]:
    """Appointment 1 for the sequential samples, then one per lane, never shared."""
    ids = appointment_ids(1 + workers * lanes)
    return [WorkerPlan(index=i, db=db, mcp_url=url, lanes=ids[1 + i * lanes:1 + (i + 1) * lanes],
                       per_lane=per_lane, latency_appointment=ids[0] if i == 0 else "",
                       iterations=iterations if i == 0 else 0) for i in range(workers)]


async def actions(args: argparse.Namespace) -> dict[str, Any]:
    """``vocero bench actions [--iterations K] [--n N] [--db URL] [--workers W]``."""
    iterations = max(1, int(getattr(args, "iterations", 200)))
    per_lane = max(1, int(getattr(args, "n", 50)))
    workers = max(1, int(getattr(args, "workers", 1) or 1))
    given = str(getattr(args, "db", "") or "")
    lanes = _lanes_per_worker()
    load = round(os.getloadavg()[0], 2)
    check_shareable(db_url(given) if given else "sqlite", workers)  # WorkersError: refused
    with tempfile.TemporaryDirectory(prefix="vocero-bench-actions-") as tmp:
        folder = Path(tmp)
        db = db_url(given) if given else f"sqlite+aiosqlite:///{folder / 'bench.db'}"
        await upgrade_async(db)  # once, before N processes would race to create the schema
        with _appointments_server(folder, 1 + workers * lanes) as server:
            plans = _plans(db, server.url, workers, lanes, per_lane, iterations)
            messages = (await _run_processes(plans, folder) if workers > 1
                        else await _run_here(plans[0]))
            server_cpu = server.cpu_s()
            runs = [m for m in messages if m["phase"] == "sustained"]
            once = await exactly_once(db, [s for m in runs for s in m["sessions"]], folder)
    report = _report(db, workers, lanes, messages, once)
    report["machine"] = {"cores": os.cpu_count() or 1, "load_1m_at_start": load,
                         "mcp_server_cpu_s": round(server_cpu, 3)}
    return report


def _report(db: str, workers: int, lanes: int, messages: list[dict[str, Any]],
            once: dict[str, Any]) -> dict[str, Any]:
    runs = [m for m in messages if m["phase"] == "sustained"]
    latency = [s for m in messages if m["phase"] == "latency" for s in m["samples_ms"]]
    under_load = [s for m in runs for s in m["samples_ms"]]
    wall = max(m["ended"] for m in runs) - min(m["started"] for m in runs)
    committed = len(under_load)
    failures: Counter[str] = Counter()
    for m in runs:
        failures.update(m["failures"])
    return {
        "bench": "actions",
        "store": "postgresql" if db.startswith("postgres") else "sqlite",
        "workers": workers,
        "transport": "streamable-http, fixture appointments server",
        "confirm_to_committed_ms": percentiles(latency, digits=3),
        "sustained": {
            "lanes": workers * lanes, "lanes_per_worker": lanes,
            "operations": sum(m["operations"] for m in runs), "committed": committed,
            "seconds": round(wall, 3), "ops_per_s": round(committed / wall, 2) if wall else 0.0,
            "confirm_to_committed_ms": percentiles(under_load, digits=3),
            "nodes": len({m["node"] for m in runs}),
            "cpu_s_per_worker": [m["cpu_s"] for m in runs],
            "cpu_ms_per_write": round(1000 * sum(m["cpu_s"] for m in runs) / committed, 2)
            if committed else 0.0,
        },
        "exactly_once": once,
        "failures": dict(failures),
    }
