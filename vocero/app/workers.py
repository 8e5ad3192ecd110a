"""``vocero serve --workers N``: N server processes sharing one port and one store.

The supervisor (this module, no event loop) loads the configuration once to fail fast, migrates
the database once (N processes racing on an empty database would each try to create it), then
starts N ``vocero serve`` processes. Each binds the same address with ``SO_REUSEPORT``: the
kernel spreads new connections over them, and a worker that dies stops receiving any. Every
worker is a full Vocero process (its own event loop, runners, outbox worker and node lease on
the store, :mod:`vocero.store.leases`); what one holds is taken over by the others when it dies.

The supervisor prints ``vocero listening on …`` once every worker listens. ``GET /metrics`` of
any worker answers for all of them (prometheus_client's multiprocess mode, in a directory the
supervisor owns). SIGTERM or SIGINT is passed on to every worker; each drains as a single server
does, and the supervisor exits 0 when all have, within 10 s. A worker that exits on its own is
started again (its sessions were taken over meanwhile), unless workers keep dying.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import IO

import structlog

from vocero.app.settings import Settings, db_url

log = structlog.get_logger("vocero.app.workers")

WORKER_ENV = "VOCERO_WORKER_INDEX"
"""Set in a worker's environment: it binds with ``SO_REUSEPORT`` and says which one it is."""
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
DRAIN_S = 9.5
"""SIGTERM to exit: workers drain in parallel (each within 8 s), stragglers are killed here."""
START_S = 120.0
"""How long a worker may take to listen (CPU runners load their models first)."""
CRASHES_ALLOWED = 5
"""Unexpected worker exits within :data:`CRASH_WINDOW_S` before the supervisor gives up."""
CRASH_WINDOW_S = 60.0


class WorkersError(RuntimeError):
    """The workers cannot be run (a bad count, a database that cannot be shared)."""


def worker_count(value: str) -> int:
    """``--workers``: a positive number, or ``auto`` (one per core)."""
    if value.strip().lower() == "auto":
        return max(1, os.cpu_count() or 1)
    try:
        count = int(value)
    except ValueError:
        raise WorkersError(f"--workers must be a number or 'auto', not {value!r}") from None
    if count < 1:
        raise WorkersError("--workers must be at least 1")
    return count


def check_shareable(url: str, count: int) -> None:
    """More than one worker needs a database several processes can write: PostgreSQL.

    SQLite would hold (WAL, one writer at a time across processes, leases claimed inside
    ``BEGIN IMMEDIATE``), but measured it does not pay (docs/scaling.md): every write of every
    worker queues on one file lock, and under load the wait reaches the busy timeout."""
    if count > 1 and not url.startswith(("postgresql", "postgres")):
        raise WorkersError(
            f"--workers {count} needs a PostgreSQL --db (postgresql://…, the 'postgres' extra); "
            "SQLite serves one worker (docs/scaling.md)"
        )


@dataclass
class _Worker:
    index: int
    process: subprocess.Popen[str]
    started: float = field(default_factory=time.monotonic)
    listening: threading.Event = field(default_factory=threading.Event)


class Supervisor:
    def __init__(self, settings: Settings, argv: Sequence[str], count: int) -> None:
        self.settings = settings
        self.argv = list(argv)
        self.count = count
        self.workers: dict[int, _Worker] = {}
        self.stopping = threading.Event()
        self.crashes: list[float] = []
        self.metrics_dir = tempfile.mkdtemp(prefix="vocero-metrics-")

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            for index in range(self.count):
                self._start(index)
            if not self._wait_listening():
                self._stop_all()
                return 1
            print(f"vocero listening on {self.settings.scheme}://{self.settings.host}:"
                  f"{self.settings.port}",
                  flush=True)
            log.info("workers.listening", workers=self.count)
            return self._watch()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            shutil.rmtree(self.metrics_dir, ignore_errors=True)

    # ---------------------------------------------------------------------------- workers

    def _start(self, index: int) -> None:
        env = {**os.environ, WORKER_ENV: str(index), MULTIPROC_ENV: self.metrics_dir}
        process = subprocess.Popen(
            [sys.executable, "-m", "vocero", "serve", *self.argv, "--workers", "1"],
            env=env, stdout=subprocess.PIPE, text=True,
        )
        worker = self.workers[index] = _Worker(index, process)
        threading.Thread(target=_relay, args=(worker,), daemon=True).start()
        log.info("workers.started", worker=index, pid=process.pid)

    def _wait_listening(self) -> bool:
        deadline = time.monotonic() + START_S
        for worker in list(self.workers.values()):
            while not worker.listening.wait(0.1):
                if self.stopping.is_set():
                    return False
                if worker.process.poll() is not None or time.monotonic() > deadline:
                    log.error("workers.failed_to_listen", worker=worker.index,
                              returncode=worker.process.returncode)
                    return False
        return True

    def _watch(self) -> int:
        while not self.stopping.wait(0.2):
            for index, worker in list(self.workers.items()):
                code = worker.process.poll()
                if code is None:
                    continue
                _mark_dead(worker.process.pid)
                log.error("workers.exited", worker=index, returncode=code)
                if self._crashing():
                    self._stop_all()
                    return 1
                self._start(index)
        return self._stop_all()

    def _crashing(self) -> bool:
        now = time.monotonic()
        self.crashes = [t for t in self.crashes if now - t < CRASH_WINDOW_S] + [now]
        return len(self.crashes) > CRASHES_ALLOWED

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping.set()

    def _stop_all(self) -> int:
        """SIGTERM every worker, wait for the drains, kill what is left; 0 if all drained."""
        for worker in self.workers.values():
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + DRAIN_S
        status = 0
        for worker in self.workers.values():
            try:
                code = worker.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.kill()
                code = worker.process.wait()
            status = status or (0 if code == 0 else 1)
        log.info("workers.stopped", status=status)
        return status


def _relay(worker: _Worker) -> None:
    """The worker's standard output: its listening line marks it up, nothing else is shown."""
    stream: IO[str] | None = worker.process.stdout
    if stream is None:
        return
    for line in stream:
        if line.startswith("vocero listening on "):
            worker.listening.set()


def _mark_dead(pid: int) -> None:
    """Its live gauges (sessions) no longer count in the aggregated ``/metrics``."""
    try:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
    except Exception:  # a metrics file that cannot be removed only skews a gauge
        log.warning("workers.metrics_cleanup_failed", pid=pid)


def serve_workers(settings: Settings, argv: Sequence[str], count: int) -> int:
    """Run ``count`` workers of ``vocero serve`` with the same flags (``argv``)."""
    from vocero.app.runtime import load_config
    from vocero.store.migrate import upgrade

    url = db_url(settings.db)
    check_shareable(url, count)
    load_config(settings)  # a bad file fails here, once, before any worker starts
    upgrade(url)  # once, before N processes would race to create the schema
    return Supervisor(settings, argv, count).run()


def worker_index() -> int | None:
    """This process's index among the workers, or ``None`` when it serves alone."""
    value = os.environ.get(WORKER_ENV, "")
    return int(value) if value.isdigit() else None
