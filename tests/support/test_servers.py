"""The server-process harness itself: ready on a line or a port, a process that dies before it is
ready fails with its exit status and what it printed, stop ends it (SIGKILL when SIGTERM is
ignored)."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from tests.support.servers import ServerProcess, accepts, free_port

pytestmark = pytest.mark.process


def python(code: str) -> list[str]:
    """A stand-in server. Its ``time.sleep(60)`` is the server staying up until the harness
    stops it (each test ends it by SIGTERM or SIGKILL long before); the test itself never sleeps
    to wait for anything, it waits on the harness's readiness and exit."""
    return [sys.executable, "-c", code]


def test_ready_on_its_line_and_stopped_by_sigterm() -> None:
    with ServerProcess("printer", python(
        "import time\nprint('warming up', flush=True)\nprint('listening on x', flush=True)\n"
        "time.sleep(60)"), ready_line="listening on") as server:
        assert server.announced == "listening on x"
        assert server.lines[:2] == ["warming up", "listening on x"]
    assert server.process.returncode == -signal.SIGTERM


def test_ready_when_its_port_accepts_connections() -> None:
    port = free_port()
    # the stand-in binds, then listens only 0.3 s later: the harness must wait for the port to
    # accept, not merely for the process to exist
    code = (f"import socket, time\ns = socket.socket()\ns.bind(('127.0.0.1', {port}))\n"
            "time.sleep(0.3)\ns.listen()\ntime.sleep(60)")
    with ServerProcess("listener", python(code), port=port):
        assert accepts(port)
    assert not accepts(port)


def test_a_process_that_exits_before_it_is_ready_fails_with_its_output() -> None:
    server = ServerProcess("crasher", python("import sys\nprint('no config')\nsys.exit(3)"),
                           ready_line="listening on")
    with pytest.raises(AssertionError, match=r"crasher exited \(3\)[\s\S]*no config"):
        server.__enter__()
    assert not server.alive


def test_a_server_ignoring_sigterm_is_killed_after_its_grace() -> None:
    code = ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('up', flush=True)\ntime.sleep(60)")
    server = ServerProcess("stubborn", python(code), ready_line="up").spawn().wait_ready()
    started = time.monotonic()
    server.stop(grace_s=0.5)
    assert server.process.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 10
