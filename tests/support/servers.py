"""Servers a test runs as processes of its own: ``vocero serve``, a fixture MCP server over HTTP,
a serving engine. One free port, one process harness, one readiness wait.

:class:`ServerProcess` starts the command, keeps everything it prints (a reader thread drains
standard output, so a chatty server never blocks on a full pipe), waits until it is ready (a
line it prints, a port it listens on, then an optional check of what it answers), names its exit
status and the tail of its output when it dies or never gets ready, and stops it (SIGTERM, then
SIGKILL). The harnesses of the suites (``tests/scaling/support.py``, ``tests/console``, ...)
subclass it or build one; none starts a process by hand.

No event crosses a process boundary, so readiness is polled (:func:`tests.support.polling.
wait_for`); in-process servers (uvicorn in a thread) wait on ``server.started`` the same way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, ClassVar, Self

from tests.support.polling import wait_for
from vocero.app.settings import REPO_ROOT

READY_LINE = "vocero listening on "
"""What ``vocero serve`` prints on standard output once it accepts connections."""
FIXTURE_SERVERS = REPO_ROOT / "fixtures" / "mcp_servers"


def free_port() -> int:
    """A loopback port nothing listens on now (the OS's pick: random, so parallel test workers
    do not collide)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accepts(port: int) -> bool:
    """Whether something accepts connections on ``127.0.0.1:port``."""
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


class ServerProcess:
    """One server subprocess: started, waited on until ready, its output kept for failure
    messages, stopped.

    Ready means, in order: ``ready_line`` printed on standard output (``vocero serve``'s
    :data:`READY_LINE`), or else ``port`` accepting connections; then ``ready()`` true, if given
    (``/readyz`` answering 200, an engine listing its models). Standard error goes to ``log``
    when given (a test reads it), else into standard output.
    """

    def __init__(
        self, name: str, command: Sequence[str], *, port: int | None = None,
        ready_line: str | None = None, ready: Callable[[], bool] | None = None,
        env: Mapping[str, str] | None = None, cwd: Path = REPO_ROOT, log: Path | None = None,
    ) -> None:
        self.name = name
        self.command = list(command)
        self.port = port
        self.ready_line = ready_line
        self.ready = ready
        self.env = dict(env or {})
        self.cwd = cwd
        self.log = log
        self.lines: list[str] = []
        """Every line it printed on standard output (and standard error, without a ``log``)."""
        self.announced = ""
        """The ``ready_line`` it printed, whole."""
        self._process: subprocess.Popen[str] | None = None
        self._announced = threading.Event()
        self._reader: threading.Thread | None = None
        self._log_file: IO[str] | None = None

    # ------------------------------------------------------------------------ lifecycle

    @property
    def process(self) -> subprocess.Popen[str]:
        assert self._process is not None, f"{self.name} was not started"
        return self._process

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def spawn(self) -> Self:
        """Start the process (again, after :meth:`stop`: same command, same port). Never a
        second one while the first lives: its handle would be lost and the process leaked."""
        if self._process is not None and self._process.poll() is None:
            raise RuntimeError(f"{self.name} is already running (pid {self._process.pid})")
        self.lines, self.announced = [], ""
        self._announced.clear()
        stderr: IO[str] | int = subprocess.STDOUT
        if self.log is not None:
            self._log_file = stderr = self.log.open("a")
        self._process = subprocess.Popen(
            self.command, cwd=self.cwd, env={**os.environ, **self.env}, stdout=subprocess.PIPE,
            stderr=stderr, text=True, errors="replace")
        self._reader = threading.Thread(target=self._read, args=(self._process,), daemon=True,
                                        name=f"{self.name}-output")
        self._reader.start()
        return self

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.append(line.rstrip("\n"))
            if (self.ready_line is not None and not self._announced.is_set()
                    and line.startswith(self.ready_line)):
                self.announced = line.strip()
                self._announced.set()

    def wait_ready(self, timeout_s: float = 60.0) -> Self:
        """Until ready (see the class); fails with the exit status and the output's tail if the
        process exits first or ``timeout_s`` passes."""
        self.wait_until(f"{self.name} to be ready", self._is_ready, timeout_s)
        return self

    def _is_ready(self) -> bool:
        if self.ready_line is not None:
            if not self._announced.is_set():
                return False
        elif self.port is not None and not accepts(self.port):
            return False
        return self.ready is None or self.ready()

    def wait_until(self, what: str, check: Callable[[], object], timeout_s: float = 30.0) -> None:
        """Poll ``check`` (a question only the process can answer) while the process lives."""

        def alive_and(found: Callable[[], object]) -> object:
            if not self.alive:
                raise AssertionError(f"{self.name} exited ({self.process.poll()}) while waiting "
                                     f"for {what}:\n{self.tail()}")
            return found()

        wait_for(lambda: f"{what}:\n{self.tail()}", lambda: alive_and(check), timeout_s)

    def kill(self) -> None:
        """SIGKILL and reap (its output stays readable until :meth:`stop`)."""
        if self.alive:
            self.process.send_signal(signal.SIGKILL)
        if self._process is not None:
            self._process.wait(timeout=30)

    def terminate(self, timeout_s: float = 30.0) -> tuple[int, float]:
        """SIGTERM and wait: the exit status and how long it took to exit (a drain)."""
        started = time.monotonic()
        self.process.terminate()
        code = self.process.wait(timeout=timeout_s)
        return code, time.monotonic() - started

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM (a server drains), SIGKILL after ``grace_s`` (at once with ``0``); then its
        output is read to the end and closed. Safe to call twice, or unstarted."""
        process = self._process
        if process is None:
            return
        if process.poll() is None and grace_s > 0:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=grace_s)
        if process.poll() is None:
            process.kill()
            process.wait()
        self.join_output()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def join_output(self, timeout_s: float = 5.0) -> list[str]:
        """Once the process has exited: its output, read to the end."""
        if self._reader is not None:
            self._reader.join(timeout=timeout_s)  # a child it left may hold the pipe open
        if self._process is not None and self._process.stdout is not None \
                and (self._reader is None or not self._reader.is_alive()):
            self._process.stdout.close()
        return self.lines

    def tail(self, lines: int = 60) -> str:
        """The last of what it printed (and of its ``log``), for a failure message."""
        text = "\n".join(self.lines[-lines:])
        if self.log is not None and self.log.exists():
            if self._log_file is not None:
                self._log_file.flush()
            text += "\n--- " + self.log.name + "\n" + self.log.read_text(errors="replace")[-3000:]
        return text

    def __enter__(self) -> Self:
        self.spawn()
        try:
            return self.wait_ready()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class RecordingServer:
    """A fixture MCP server, ``fixtures/mcp_servers/<name>_server.py``, over HTTP on a port of
    its own: it records every tools/call in :attr:`record` and keeps its state in :attr:`state`.
    A subclass names it and starts it with the knobs of its own (:meth:`spawn`)."""

    name: ClassVar[str]
    folder: Path
    port: int = field(default_factory=free_port)
    process: ServerProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def record(self) -> Path:
        return self.folder / f"{self.name}.jsonl"

    @property
    def state(self) -> Path:
        return self.folder / f"{self.name}.json"

    def spawn(self, env: Mapping[str, str]) -> None:
        """Start it with ``env`` besides its record and state, and wait until it listens."""
        script = FIXTURE_SERVERS / f"{self.name}_server.py"
        command = [sys.executable, str(script), "--transport", "http", "--port", str(self.port)]
        knobs = {"VOCERO_MCP_RECORD": str(self.record), "VOCERO_MCP_STATE": str(self.state), **env}
        self.process = ServerProcess(f"{self.name} server", command, port=self.port, env=knobs)
        self.process.spawn().wait_ready(timeout_s=30)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(grace_s=0)
