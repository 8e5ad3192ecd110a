"""One server's tools/calls, from every session that uses it (docs/mcp.md "A call", "Timeouts,
cancellation, retries", "Circuit breaker").

Each call passes the breaker and two bulkheads (the server's, the tool's), opens a question
route on the connection's desk (docs/mcp.md "Questions from a server"), and runs under its
timeout, which stops while the caller answers a question. A stream that breaks mid-call is sent
again (``reissue_broken_streams``); a 2025-11-25 ``-32042`` sends the caller to the server's
pages first. Failures are mapped to ``error.v1`` codes; those that are the server's fault count
against its breaker, and a broken transport tells the supervisor to reconnect.

Whoever builds the connection may pass an :class:`SdkCallObserver`: it is told how long each SDK
tools/call took, so a benchmark can tell the gateway's own cost from the server's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import anyio
import structlog
from mcp.shared.exceptions import MCPError

from vocero.contracts.domain import Principal
from vocero.contracts.errors import ToolCallError, ToolUnavailableError
from vocero.contracts.ports import AuditSink, CallMeta, InputHandler
from vocero.mcp_gateway.adapters import AdapterSession, StreamBrokenError
from vocero.mcp_gateway.delegation import PerCallerTokens, delegated
from vocero.mcp_gateway.errors import (
    ServerAuthError,
    ToolBusyError,
    counts_against_server,
    is_transport_failure,
    map_call_failure,
)
from vocero.mcp_gateway.link import Link
from vocero.mcp_gateway.model import RemoteResult
from vocero.mcp_gateway.outbox import AuditOutbox, record_safely
from vocero.mcp_gateway.questions import (
    CallRoute,
    QuestionDesk,
    route_for,
    visit_links,
    wants_links,
)
from vocero.mcp_gateway.resilience import Bulkhead, CircuitBreaker
from vocero.mcp_gateway.settings import GatewaySettings

log = structlog.get_logger("vocero.mcp_gateway")
_LINK_ROUNDS = 2
"""Times one call may send the caller to a server's pages (2025-11-25 ``-32042``) before the
server's next refusal ends it (``url_elicitation_required``)."""

OPERATION_META = "io.vocero/operation_id"
PRINCIPAL_META = "io.vocero/principal"
PROPOSAL_META = "io.vocero/proposal"


class SdkCallObserver(Protocol):
    """Told how long each SDK tools/call took (each attempt, in the calling task)."""

    def sdk_call(self, wall_s: float, cpu_s: float) -> None:
        """``wall_s`` seconds of wall time, ``cpu_s`` of this thread's CPU time."""


class ToolCalls:
    """The calls to one server: breaker, bulkheads, question route, timeout, error mapping."""

    def __init__(
        self,
        name: str,
        *,
        link: Link,
        breaker: CircuitBreaker,
        desk: QuestionDesk,
        tools: Iterable[str],
        unavailable: Callable[[], ToolUnavailableError],
        outbox: AuditOutbox,
        audit: AuditSink,
        settings: GatewaySettings,
        max_concurrency: int,
        observer: SdkCallObserver | None = None,
        delegation: PerCallerTokens | None = None,
    ) -> None:
        self.name = name
        self._delegation = delegation
        self._link = link
        self._breaker = breaker
        self._desk = desk
        self._unavailable = unavailable
        self._outbox = outbox
        self._audit = audit
        self._settings = settings
        self._observer = observer
        self._server_bulkhead = Bulkhead(max_concurrency)
        self._tool_bulkheads = {tool: Bulkhead(settings.tool_concurrency) for tool in tools}

    async def invoke(
        self,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any],
        *,
        timeout_s: float,
        on_dispatched: Callable[[], None] | None = None,
        call: CallMeta | None = None,
        ask: InputHandler | None = None,
        model_tool: str = "",
    ) -> tuple[RemoteResult, CallRoute]:
        """Send one tools/call through the breaker, the bulkheads and the timeout.

        Returns the result with the call's :class:`CallRoute` (what its questions came to).
        On a delegated server the caller's own token is had first: without one the call
        fails closed (:class:`DelegationUnavailable`) before anything is sent or counted.
        """
        bearer = None
        if self._delegation is not None:
            bearer = await self._delegation.bearer_for((call or _meta_of(meta)).principal)
        if not self._breaker.allow():
            raise ToolUnavailableError("circuit_open")
        session = self._link.session
        if session is None:
            self._breaker.record_failure()
            await self._outbox.flush()
            raise self._unavailable()
        tool_bulkhead = self._tool_bulkheads[tool]
        if not self._server_bulkhead.try_enter():
            self._breaker.release_probe()
            raise ToolBusyError("server_busy")
        if not tool_bulkhead.try_enter():
            self._server_bulkhead.leave()
            self._breaker.release_probe()
            raise ToolBusyError("tool_busy")
        route = route_for(
            self.name,
            model_tool or tool,
            call or _meta_of(meta),
            ask,
            audit=self._audit_input,
            timeout_s=self._settings.input_timeout_s,
            max_fields=self._settings.max_input_fields,
        )
        try:
            with self._desk.open(route), delegated(str(meta.get(OPERATION_META, "")), bearer):
                result = await self._send(
                    session, tool, arguments, meta, timeout_s, on_dispatched, route
                )
            return result, route
        finally:
            tool_bulkhead.leave()
            self._server_bulkhead.leave()

    async def _send(
        self,
        session: AdapterSession,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any],
        timeout_s: float,
        on_dispatched: Callable[[], None] | None,
        route: CallRoute,
    ) -> RemoteResult:
        dispatched = False
        try:
            with anyio.fail_after(timeout_s) as deadline:
                route.deadline = deadline
                if on_dispatched is not None:
                    on_dispatched()
                dispatched = True
                result = await self._exchange(session, tool, arguments, meta, timeout_s, route)
        except anyio.get_cancelled_exc_class():
            self._breaker.release_probe()
            raise
        except Exception as exc:
            error: ToolCallError = map_call_failure(exc, dispatched=dispatched)
            if route.auth_failure:
                error = ServerAuthError(route.auth_failure)
            if counts_against_server(error):
                self._breaker.record_failure()
            else:
                self._breaker.record_success()
            if is_transport_failure(exc) and not route.auth_failure:
                self._link.mark_lost()
            await self._outbox.flush()
            raise error from exc
        self._breaker.record_success()
        if self._outbox.pending:
            await self._outbox.flush()
        return result

    async def _exchange(
        self,
        session: AdapterSession,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any],
        timeout_s: float,
        route: CallRoute,
    ) -> RemoteResult:
        """The SDK call, sent again after a broken stream or the caller's visit to a page."""
        reissues = self._settings.reissue_broken_streams
        link_rounds = _LINK_ROUNDS
        # The SDK's own read timeout is a backstop: the caller's scope is the real bound, and it
        # moves while the caller answers a question (2025-11-25 keeps the request open then).
        backstop_s = timeout_s + self._settings.input_timeout_s + 1.0
        while True:
            sent, sent_cpu = time.perf_counter(), time.thread_time()
            try:
                return await session.call_tool(tool, arguments, meta, timeout_s=backstop_s)
            except StreamBrokenError:
                if reissues <= 0:
                    raise ToolUnavailableError("stream_broken", possibly_executed=True) from None
                reissues -= 1
                await self._reissued(tool, meta)
            except MCPError as exc:
                if not wants_links(exc, session.protocol_version) or link_rounds <= 0:
                    raise
                link_rounds -= 1  # nothing ran: the server sent the caller to a page
                await visit_links(route, self._desk, exc)
            finally:
                if self._observer is not None:
                    self._observer.sdk_call(
                        time.perf_counter() - sent, time.thread_time() - sent_cpu
                    )

    async def _reissued(self, tool: str, meta: dict[str, Any]) -> None:
        log.warning("mcp.request_reissued", server=self.name, tool=tool)
        data = {"server": self.name, "tool": tool, "operation_id": meta.get(OPERATION_META, "")}
        await record_safely(self._audit, "mcp.request_reissued", data)

    async def _audit_input(self, kind: str, data: dict[str, Any]) -> None:
        await record_safely(self._audit, kind, data)


def _meta_of(meta: dict[str, Any]) -> CallMeta:
    principal = meta.get(PRINCIPAL_META) or {}
    proposal = meta.get(PROPOSAL_META) or {}
    return CallMeta(
        operation_id=str(meta.get(OPERATION_META, "")),
        principal=Principal(
            subject_ref=str(principal.get("subject_ref", "")),
            tenant_id=str(principal.get("tenant_id", "")),
            scopes=list(principal.get("scopes") or []),
        ),
        proposal_id=str(proposal.get("proposal_id", "")),
        revision=int(proposal.get("revision", 0) or 0),
    )
