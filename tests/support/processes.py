"""Ending a server process a test started."""

from __future__ import annotations

import subprocess
from typing import Any


def stop(process: subprocess.Popen[Any], timeout_s: float = 15.0) -> None:
    """SIGTERM (the server drains), then SIGKILL if it has not exited within ``timeout_s``.
    Its standard output stays open: a reader thread may still be draining it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
