"""Repeated failures of one connection, audited once with a count.

A server that keeps refusing (an authorization nobody has given yet, a revoked client, a host
that is down) fails the same way at every reconnection. Each failure used to be one audit event,
kept for years; now the first failure of a kind and reason is audited, the identical ones after
it are counted, and the count is audited once, as ``mcp.failures_coalesced``, when the run ends:
a success (connected, new tokens), the connection stopping, or every ``report_every_s`` while it
lasts, so a long outage still shows in the chain. Sans-IO: it returns the events to record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Event = tuple[str, dict[str, Any]]
COALESCED = "mcp.failures_coalesced"


@dataclass(slots=True)
class _Run:
    since: float
    repeats: int = 0


class FailureRuns:
    def __init__(self, server: str, *, report_every_s: float = 3600.0) -> None:
        self.server = server
        self.report_every_s = report_every_s
        self._runs: dict[tuple[str, str], _Run] = {}

    def failed(self, kind: str, data: dict[str, Any], now: float) -> list[Event]:
        """A failure ``kind`` (its ``reason`` in ``data``): the event itself when it starts a
        run, nothing while it repeats one, the run's count when it is due."""
        key = (kind, str(data.get("reason", "")))
        run = self._runs.get(key)
        if run is None:
            self._runs[key] = _Run(since=now)
            return [(kind, data)]
        run.repeats += 1
        if now - run.since < self.report_every_s:
            return []
        events = [self._count(key, run)]
        self._runs[key] = _Run(since=now)
        return events

    def repeats(self, kind: str, reason: str = "") -> int:
        """Failures counted and not yet reported for that kind and reason."""
        run = self._runs.get((kind, reason))
        return run.repeats if run is not None else 0

    def ended(self) -> list[Event]:
        """Every run is over (a success, or the connection stopped): their counts."""
        runs, self._runs = self._runs, {}
        return [self._count(key, run) for key, run in runs.items() if run.repeats]

    def _count(self, key: tuple[str, str], run: _Run) -> Event:
        kind, reason = key
        data = {"server": self.server, "kind": kind, "reason": reason, "count": run.repeats}
        return COALESCED, data
