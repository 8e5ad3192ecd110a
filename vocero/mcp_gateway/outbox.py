"""The audit events of one server connection, queued where they happen and recorded later.

Much of what a connection audits happens in plain callbacks that cannot await: the breaker
changing state, a pin changing, the OAuth guard failing. Those queue their event here; the
connection records the queue at its next await point (:meth:`AuditOutbox.flush`). Repeated
failures go through :class:`~vocero.mcp_gateway.failures.FailureRuns`, so a server that keeps
failing the same way is audited once, with a count (docs/mcp.md "OAuth 2.1"). An audit outage
never takes the MCP plane down: :func:`record_safely` logs it instead.
"""

from __future__ import annotations

from typing import Any

import structlog

from vocero.contracts.ports import AuditSink, Timers
from vocero.mcp_gateway.failures import COALESCED, Event, FailureRuns

log = structlog.get_logger("vocero.mcp_gateway")


async def record_safely(
    audit: AuditSink, kind: str, data: dict[str, Any], *, session_id: str = ""
) -> None:
    """Audit without letting an audit outage take the MCP plane down: failures are logged."""
    try:
        await audit.record(kind, data, session_id=session_id)
    except Exception as exc:  # boundary: the sink belongs to another plane
        log.error("mcp.audit_failed", kind=kind, error=type(exc).__name__)


class AuditOutbox:
    """One connection's audit events: queued from callbacks, recorded in order by ``flush``,
    repeated failures counted instead of recorded one by one."""

    def __init__(self, server: str, audit: AuditSink, clock: Timers) -> None:
        self._audit = audit
        self._clock = clock
        self._failures = FailureRuns(server)
        self._events: list[Event] = []

    @property
    def pending(self) -> bool:
        """Whether events wait to be recorded."""
        return bool(self._events)

    def queue(self, kind: str, data: dict[str, Any]) -> None:
        """Record ``kind`` at the next flush."""
        if kind == COALESCED:
            log.info(COALESCED, **data)
        self._events.append((kind, data))

    def failed(self, kind: str, data: dict[str, Any]) -> None:
        """A failure to audit: the first of a run is, the identical ones after it are counted."""
        for event in self._failures.failed(kind, data, self._clock.monotonic()):
            self.queue(*event)

    def succeeded(self) -> None:
        """Every run of failures is over: their counts are recorded."""
        for event in self._failures.ended():
            self.queue(*event)

    async def record(self, kind: str, data: dict[str, Any]) -> None:
        """Record ``kind`` now, ahead of anything queued."""
        await record_safely(self._audit, kind, data)

    async def flush(self) -> None:
        """Record what is queued, in order."""
        events, self._events = self._events, []
        for kind, data in events:
            await record_safely(self._audit, kind, data)
