"""Waiting on another process (a ``vocero serve``, a fixture MCP server, PostgreSQL).

No event crosses a process boundary: what such a process did is only seen by asking it (its
HTTP API, its record file, its log, the shared store). This polls that question every
``every_s`` until it answers truthy, and fails with ``what`` once ``timeout_s`` has passed.
In-process tests wait on events or the virtual clock instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(what: str | Callable[[], str], check: Callable[[], T], timeout_s: float = 30.0,
             every_s: float = 0.05) -> T:
    """``what`` may be a function: it is asked only on failure (a process's log tail then)."""
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        time.sleep(every_s)  # another process's state: there is no event to wait on
    return found

