"""``vocero serve --workers N`` as an operator runs it: real processes on loopback.

A count the supervisor cannot run is refused before anything starts (exit 2, one clear line):
more than one worker on SQLite, ``0``, a word. On PostgreSQL two workers share the port
(``SO_REUSEPORT``: connections land on both, seen as the node that holds each session), the
store (one ``nodes`` row each, children of the supervisor) and ``/metrics`` (aggregated: any
worker reports every worker's sessions); the supervisor says it listens once; SIGTERM drains
both, live sessions included, and their nodes end ``released``. A worker killed with SIGKILL is
started again, serves on the same port, and the node it left is declared ``dead``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import select

from tests.scaling.support import Appointments, Config, Vocero, client
from tests.support.pg import fresh_db, requires_pg
from tests.support.polling import wait_for as poll
from tests.support.servers import free_port
from vocero.app.settings import REPO_ROOT, db_url
from vocero.app.workers import WorkersError, worker_count
from vocero.store import Store
from vocero.store.leases import process_gone
from vocero.store.models import NodeRow, SessionRow

pytestmark = pytest.mark.slow

ADMITTED = re.compile(r'^vocero_sessions_total\{outcome="admitted"\} ([0-9.]+)$', re.M)
MAX_CONNECTIONS = 40
"""New connections tried before concluding they do not reach both workers (each one lands on
either with even odds: 40 on one worker alone happen about once in 2**39 runs)."""


def refused(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vocero", "serve", "--runners", "sim", "--port", str(free_port()),
         "--db", f"sqlite:///{tmp_path}/v.db", *flags],
        capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)


def test_more_than_one_worker_on_sqlite_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    """(``auto`` is a count like any other: :func:`worker_count` is tested below.)"""
    done = refused(tmp_path, "--workers", "2")
    expected = 2
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip() == (
        f"vocero: --workers {expected} needs a PostgreSQL --db (postgresql://…, the 'postgres' "
        "extra); SQLite serves one worker (docs/scaling.md)")
    assert not (tmp_path / "v.db").exists()  # refused before the database was touched


@pytest.mark.parametrize(("count", "message"), [
    ("0", "vocero: --workers must be at least 1"),
    ("x", "vocero: --workers must be a number or 'auto', not 'x'"),
])
def test_a_worker_count_that_is_not_one_is_refused_with_a_clear_line(
    tmp_path: Path, count: str, message: str
) -> None:
    done = refused(tmp_path, f"--workers={count}")
    assert (done.returncode, done.stdout, done.stderr.strip()) == (2, "", message)
    assert not (tmp_path / "v.db").exists()


def test_auto_is_one_worker_per_core_and_a_count_is_read_as_given() -> None:
    assert worker_count("auto") == worker_count(" AUTO ") == max(1, os.cpu_count() or 1)
    assert worker_count("3") == 3
    with pytest.raises(WorkersError):
        worker_count("1.5")


# ----------------------------------------------------------------------- PostgreSQL


@pytest.fixture
def db() -> Iterator[str]:
    with fresh_db() as url:  # empty: the supervisor migrates it once, before any worker
        yield url


@pytest.fixture
def appointments(tmp_path: Path) -> Iterator[Appointments]:
    server = Appointments(tmp_path)
    server.start()
    yield server
    server.stop()


def wait_for(what: str, check: Any, timeout_s: float = 60.0) -> Any:
    return poll(what, check, timeout_s)


def query(url: str, statement: Any) -> list[Any]:
    async def run() -> list[Any]:
        store = Store.open(db_url(url))
        try:
            async with store.read() as session:
                return list((await session.execute(statement)).all())
        finally:
            await store.close()

    return anyio.run(run)


def nodes(url: str) -> dict[str, Any]:
    """Every ``nodes`` row by id."""
    return {row.id: row for row in query(url, select(
        NodeRow.id, NodeRow.pid, NodeRow.role, NodeRow.ending))}


def owner_of(url: str, session_id: str) -> str:
    [row] = query(url, select(SessionRow.owner_id).where(SessionRow.id == session_id))
    return str(row.owner_id)


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def admitted(node: Vocero) -> float:
    with urllib.request.urlopen(node.url + "/metrics", timeout=10) as response:
        found = ADMITTED.search(response.read().decode())
    assert found, "no vocero_sessions_total{outcome=\"admitted\"} in /metrics"
    return float(found.group(1))


def start_workers(tmp_path: Path, db: str, appointments: Appointments) -> Vocero:
    config = Config(tmp_path, appointments)
    config.write()
    node = Vocero(tmp_path, db, [*config.flags(), "--workers", "2"], name="workers")
    try:
        node.start()  # the supervisor's line, once both listen; then /readyz
        wait_for("both workers ready", lambda: {e.get("worker") for e in node.events(
            "runners.ready")} == {0, 1})
    except BaseException:
        node.stop()  # not left serving when it never got ready
        raise
    return node


def live_nodes(url: str, supervisor: int) -> dict[str, Any]:
    found = {k: v for k, v in nodes(url).items() if v.ending is None}
    assert all(v.role == "serve" and parent_of(v.pid) == supervisor for v in found.values())
    return found


@requires_pg
def test_two_workers_share_port_store_and_metrics_and_sigterm_drains_both(
    tmp_path: Path, db: str, appointments: Appointments
) -> None:
    node = start_workers(tmp_path, db, appointments)
    try:
        workers = live_nodes(db, node.process.pid)
        assert len(workers) == 2 and len({w.pid for w in workers.values()}) == 2
        with ExitStack() as live:
            held: dict[str, str] = {}  # a live session on each worker, to be drained
            opened = 0
            while set(held) != set(workers):
                assert opened < MAX_CONNECTIONS, f"every connection landed on {set(held)}"
                pc = live.enter_context(client(node, "alice-token"))
                opened += 1
                held.setdefault(owner_of(db, pc.session_id), pc.session_id)
            # any worker answers for both: every session admitted anywhere is counted
            assert [admitted(node) for _ in range(6)] == [float(opened)] * 6
            code, seconds = node.terminate()
        assert (code, seconds < 10.5) == (0, True), (code, seconds, node.tail())
        assert all(process_gone(w.pid) for w in workers.values())
        assert {k: v.ending for k, v in nodes(db).items()} == dict.fromkeys(workers, "released")
        closed = query(db, select(SessionRow.id).where(SessionRow.closed_at.is_(None)))
        assert closed == []  # the live sessions were closed by the drain, on both workers
        said = node.join_output()
        rest = "\n".join(said[said.index(node.announced) + 1:])
        assert "vocero listening on" not in rest  # said once, by the supervisor
    finally:
        node.stop()


@requires_pg
def test_a_killed_worker_is_started_again_and_its_node_declared_dead(
    tmp_path: Path, db: str, appointments: Appointments
) -> None:
    node = start_workers(tmp_path, db, appointments)
    try:
        workers = live_nodes(db, node.process.pid)
        doomed, survivor = sorted(workers)
        os.kill(workers[doomed].pid, signal.SIGKILL)

        def restarted() -> set[str]:
            return {k for k, v in nodes(db).items() if v.ending is None} - {doomed, survivor}

        [fresh] = wait_for("a worker in its place", restarted)
        assert wait_for("the killed node declared", lambda: nodes(db)[doomed].ending) == "dead"
        assert set(live_nodes(db, node.process.pid)) == {survivor, fresh}
        exits = node.events("workers.exited")
        assert [e["returncode"] for e in exits] == [-signal.SIGKILL]
        assert node.process.poll() is None
        wait_for("the new worker ready", lambda: len(node.events("runners.ready")) == 3)
        owners: set[str] = set()
        for _ in range(MAX_CONNECTIONS):  # the new worker serves on the same port
            with client(node, "bob-token") as pc:
                owners.add(owner_of(db, pc.session_id))
            if fresh in owners:
                break
        assert fresh in owners and doomed not in owners
        code, _ = node.terminate()
        assert code == 0, node.tail()
        assert {k: v.ending for k, v in nodes(db).items()} == {
            doomed: "dead", survivor: "released", fresh: "released"}
    finally:
        node.stop()


@requires_pg
def test_two_workers_share_one_serving_engine(
    tmp_path: Path, db: str, appointments: Appointments
) -> None:
    from tests.support.engines import Rule, ScriptedEngine

    with ScriptedEngine([Rule(match="hello", text="Hello from the engine.")]) as engine:
        config = Config(tmp_path, appointments)
        config.write()
        node = Vocero(tmp_path, db, [*config.flags(), "--workers", "2", "--llm-url",
                                     engine.url, "--llm-model", "scripted"], name="engine")
        node.start()
        try:
            wait_for("both workers ready", lambda: {e.get("worker") for e in node.events(
                "runners.ready")} == {0, 1})
            probes = [r for r in engine.requests if not r.get("stream")]
            assert len(probes) == 2  # each worker probed the one endpoint at start
            workers = live_nodes(db, node.process.pid)
            with ExitStack() as live:
                held: dict[str, Any] = {}
                opened = 0
                while set(held) != set(workers):
                    assert opened < MAX_CONNECTIONS, f"every connection landed on {set(held)}"
                    pc = live.enter_context(client(node, "alice-token"))
                    opened += 1
                    held.setdefault(owner_of(db, pc.session_id), pc)
                for pc in held.values():  # a turn on each worker, answered by the engine
                    pc.send("input.text.v1", {"text": "hello"})
                    pc.expect("response.completed.v1")
                    said = "".join(p["text"] for p in pc.of_type("response.text_delta.v1"))
                    assert said.startswith("Hello from the engine"), said
            assert len([r for r in engine.requests if r.get("stream")]) == 2
        finally:
            node.stop()
