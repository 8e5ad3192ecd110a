"""One long-lived connection per MCP server, supervised; and the process-wide registry of them.

A :class:`ServerConnection` owns its SDK client for as long as the server stays up: it connects,
lists and pins the allowlisted tools, re-lists on list-changed (and every ``relist_interval_s``),
and when the connection ends it reconnects with jittered backoff. Calls from any session share that
client through :meth:`ServerConnection.invoke`, which applies the breaker, the bulkheads and the
timeout. :class:`McpConnections` runs every supervisor in one task group::

    async with anyio.create_task_group() as tg:
        await tg.start(connections.run)   # ready once each server had a first attempt
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Literal

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

from vocero.contracts.clock import SystemClock
from vocero.contracts.domain import AgentProfile, McpServerSpec
from vocero.contracts.errors import ConfigError, ToolChangedError, ToolUnavailableError
from vocero.contracts.ports import AuditSink, Clock
from vocero.mcp_gateway.adapters import AdapterSession, McpAdapter, SessionHooks, select_adapter
from vocero.mcp_gateway.errors import (
    CandidateDisabledError,
    ToolBusyError,
    counts_against_server,
    is_transport_failure,
    map_call_failure,
)
from vocero.mcp_gateway.model import RemoteResult
from vocero.mcp_gateway.pinning import (
    InMemoryPinRepository,
    PinBook,
    PinEvent,
    PinRepository,
    ToolPin,
)
from vocero.mcp_gateway.resilience import BreakerState, Bulkhead, CircuitBreaker, backoff_delay
from vocero.mcp_gateway.settings import GatewaySettings
from vocero.mcp_gateway.validation import Validators, schema_problem

log = structlog.get_logger("vocero.mcp_gateway")

ServerState = Literal["starting", "connected", "disconnected", "refused", "stopped"]
SDK_CALL_TIMES: ContextVar[list[tuple[float, float]] | None] = ContextVar(
    "sdk_call_times", default=None
)
"""Timing probe for ``vocero bench mcp``: when set, each SDK tools/call appends its (wall, thread
CPU) seconds, so the gateway's own overhead is the call's total minus these."""
BUILTIN_SERVER = "vocero"
"""Tools of ``server: vocero`` are Vocero's own (``followups.record``): never routed through MCP."""


class ServerConnection:
    """The supervised connection to one server, shared by every session that uses it."""

    def __init__(
        self,
        name: str,
        spec: McpServerSpec,
        tools: Iterable[str],
        *,
        audit: AuditSink,
        pins: PinRepository,
        settings: GatewaySettings,
        clock: Clock,
    ) -> None:
        self.name = name
        self.spec = spec
        self.settings = settings
        self.state: ServerState = "starting"
        self.protocol_version = ""
        self._audit = audit
        self.pins = PinBook(
            name,
            tools,
            pins,
            now=clock.now,
            auto_approve=settings.auto_approve_first_seen,
            check=lambda tool: schema_problem(tool, settings),
        )
        self.breaker = CircuitBreaker(
            threshold=settings.breaker_failure_threshold,
            reset_s=settings.breaker_reset_s,
            monotonic=clock.monotonic,
            on_change=self._breaker_changed,
        )
        self._server_bulkhead = Bulkhead(spec.max_concurrency)
        self._tool_bulkheads = {
            tool: Bulkhead(settings.tool_concurrency) for tool in self.pins.tools
        }
        self._session: AdapterSession | None = None
        self._events: list[PinEvent] = []
        self.stale = False
        self._lost = False
        self._wake = anyio.Event()
        self._refresh_lock = anyio.Lock()

    # ----------------------------------------------------------------------------- calls

    def active_pin(self, tool: str) -> ToolPin:
        """The pinned definition of an approved tool; otherwise why it cannot be called."""
        pin = self.pins.get(tool)
        if pin is None:
            raise ToolUnavailableError(
                "tool_not_listed" if self.state == "connected" else "not_connected"
            )
        if not pin.active:
            raise ToolChangedError(f"tool_{pin.status}")
        return pin

    async def ensure_fresh(self) -> None:
        """Re-list after a list-changed signal before anything else is called."""
        if not self.stale or self._session is None:
            return
        async with self._refresh_lock:
            session = self._session
            if not self.stale or session is None:
                return
            self.stale = False
            try:
                with anyio.fail_after(self.settings.connect_timeout_s):
                    listing = await session.list_tools()
            except Exception as exc:
                self.stale = True
                if is_transport_failure(exc):
                    self._mark_lost()
                raise map_call_failure(exc, dispatched=False) from exc
            self._events.extend(await self.pins.observe(listing))
        await self.flush_events()

    async def invoke(
        self,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any],
        *,
        timeout_s: float,
        on_dispatched: Callable[[], None] | None = None,
    ) -> RemoteResult:
        """Send one tools/call through the breaker, the bulkheads and the timeout."""
        if not self.breaker.allow():
            raise ToolUnavailableError("circuit_open")
        session = self._session
        if session is None:
            self.breaker.record_failure()
            await self.flush_events()
            raise ToolUnavailableError("not_connected")
        tool_bulkhead = self._tool_bulkheads[tool]
        if not self._server_bulkhead.try_enter():
            self.breaker.release_probe()
            raise ToolBusyError("server_busy")
        if not tool_bulkhead.try_enter():
            self._server_bulkhead.leave()
            self.breaker.release_probe()
            raise ToolBusyError("tool_busy")
        try:
            return await self._send(session, tool, arguments, meta, timeout_s, on_dispatched)
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
    ) -> RemoteResult:
        dispatched = False
        try:
            with anyio.fail_after(timeout_s):
                if on_dispatched is not None:
                    on_dispatched()
                dispatched = True
                sent, sent_cpu = time.perf_counter(), time.thread_time()
                result = await session.call_tool(tool, arguments, meta, timeout_s=timeout_s + 1.0)
                if (probe := SDK_CALL_TIMES.get()) is not None:
                    probe.append((time.perf_counter() - sent, time.thread_time() - sent_cpu))
        except anyio.get_cancelled_exc_class():
            self.breaker.release_probe()
            raise
        except Exception as exc:
            error = map_call_failure(exc, dispatched=dispatched)
            if counts_against_server(error):
                self.breaker.record_failure()
            else:
                self.breaker.record_success()
            if is_transport_failure(exc):
                self._mark_lost()
            await self.flush_events()
            raise error from exc
        self.breaker.record_success()
        if self._events:
            await self.flush_events()
        return result

    # ------------------------------------------------------------------------ supervision

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, serve, reconnect until cancelled. Ready after the first attempt either way."""
        try:
            adapter = select_adapter(self.spec, self.settings)
        except CandidateDisabledError as exc:
            self.state = "refused"
            refused = {"server": self.name, "reason": str(exc)}
            await record_safely(self._audit, "mcp.server_refused", refused)
            task_status.started()
            return
        await self.pins.load()
        started = False
        attempt = 0
        try:
            while True:
                connected = await self._session_once(adapter, task_status if not started else None)
                started = True
                attempt = 0 if connected else attempt + 1
                await record_safely(
                    self._audit,
                    "mcp.server_disconnected" if connected else "mcp.server_connect_failed",
                    {"server": self.name, "breaker": self.breaker.state},
                )
                delay = backoff_delay(
                    attempt, self.settings.reconnect_initial_s, self.settings.reconnect_max_s
                )
                await anyio.sleep(max(delay, self.settings.reconnect_initial_s / 4))
        finally:
            self.state = "stopped"
            self._session = None

    async def _session_once(
        self, adapter: McpAdapter, task_status: TaskStatus[None] | None
    ) -> bool:
        """One connection's lifetime; returns whether it got as far as serving."""
        self._lost = False
        connected = False
        hooks = SessionHooks(tools_changed=self._tools_changed, lost=self._mark_lost)
        try:
            async with adapter.open(
                self.name, self.spec, hooks, connect_timeout_s=self.settings.connect_timeout_s
            ) as session:
                await self._attach(session)
                connected = True
                if task_status is not None:
                    task_status.started()
                    task_status = None
                await self._serve()
        except BaseException as exc:
            if (cancelled := _cancellation(exc)) is not None:
                raise cancelled from None
            if not isinstance(exc, Exception):
                raise
            log.warning(
                "mcp.connection_ended", server=self.name, connected=connected, error=_describe(exc)
            )
        finally:
            self._session = None
            self.state = "disconnected"
        if not connected:
            self.breaker.record_failure()
        if task_status is not None:
            task_status.started()
        await self.flush_events()
        return connected

    async def _attach(self, session: AdapterSession) -> None:
        with anyio.fail_after(self.settings.connect_timeout_s):
            listing = await session.list_tools()
        self.stale = False
        self._events.extend(await self.pins.observe(listing))
        self._session = session
        self.protocol_version = session.protocol_version
        self.state = "connected"
        self.breaker.record_connected()
        await record_safely(
            self._audit,
            "mcp.server_connected",
            {"server": self.name, "protocol": self.protocol_version},
        )
        await self.flush_events()

    async def _serve(self) -> None:
        while not self._lost:
            with anyio.move_on_after(self.settings.relist_interval_s) as scope:
                await self._wake.wait()
            self._wake = anyio.Event()
            if self._lost:
                return
            if scope.cancelled_caught:
                self.stale = True
            await self.ensure_fresh()

    def _tools_changed(self) -> None:
        self.stale = True
        self._wake.set()

    def _mark_lost(self) -> None:
        self._lost = True
        self._wake.set()

    def _breaker_changed(self, before: BreakerState, after: BreakerState) -> None:
        log.info("mcp.breaker_changed", server=self.name, before=before, after=after)
        self._events.append(
            ("mcp.breaker_changed", {"server": self.name, "from": before, "to": after})
        )

    async def flush_events(self) -> None:
        events, self._events = self._events, []
        for kind, data in events:
            await record_safely(self._audit, kind, data)

    def status(self) -> dict[str, Any]:
        return {
            "server": self.name,
            "state": self.state,
            "protocol": self.protocol_version,
            "breaker": self.breaker.state,
            "tools": {pin.tool: pin.status for pin in self.pins.all()},
        }


async def record_safely(
    audit: AuditSink, kind: str, data: dict[str, Any], *, session_id: str = ""
) -> None:
    """Audit without letting an audit outage take the MCP plane down: failures are logged."""
    try:
        await audit.record(kind, data, session_id=session_id)
    except Exception as exc:  # boundary: the sink belongs to another plane
        log.error("mcp.audit_failed", kind=kind, error=type(exc).__name__)


def _cancellation(exc: BaseException) -> BaseException | None:
    """The cancellation inside ``exc`` (a group may carry one next to transport errors)."""
    cancelled = anyio.get_cancelled_exc_class()
    if isinstance(exc, cancelled):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := _cancellation(inner)) is not None:
                return found
    return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return type(exc).__name__


class McpConnections:
    """Every MCP server the loaded profiles use, connected once per process."""

    def __init__(
        self,
        servers: Mapping[str, McpServerSpec],
        tools: Mapping[str, Iterable[str]],
        *,
        audit: AuditSink,
        pins: PinRepository | None = None,
        settings: GatewaySettings | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings or GatewaySettings()
        self.audit = audit
        self.validators = Validators(self.settings)
        self._clock = clock or SystemClock()
        repository = pins if pins is not None else InMemoryPinRepository()
        self._connections = {
            name: ServerConnection(
                name,
                spec,
                tools.get(name, ()),
                audit=audit,
                pins=repository,
                settings=self.settings,
                clock=self._clock,
            )
            for name, spec in servers.items()
            if name != BUILTIN_SERVER and tools.get(name)
        }

    @classmethod
    def from_profiles(cls, profiles: Iterable[AgentProfile], **kwargs: Any) -> McpConnections:
        """Servers and callable tools of every profile (prohibited and built-in tools excluded)."""
        servers: dict[str, McpServerSpec] = {}
        owners: dict[str, str] = {}
        tools: dict[str, set[str]] = {}
        for profile in profiles:
            for name, spec in profile.mcp_servers.items():
                if servers.setdefault(name, spec) != spec:
                    problem = f"defined differently by profiles {owners[name]} and {profile.id}"
                    raise ConfigError("profiles", f"mcp_servers.{name}", problem)
                owners.setdefault(name, profile.id)
            for tool in profile.tools:
                if tool.server == BUILTIN_SERVER or tool.action_class == "prohibited":
                    continue
                names = tools.setdefault(tool.server, set())
                names.add(tool.resolves_to)
                if tool.lookup_tool:
                    names.add(tool.lookup_tool)
        return cls(servers, tools, **kwargs)

    def connection(self, server: str) -> ServerConnection | None:
        return self._connections.get(server)

    def connections(self) -> list[ServerConnection]:
        return list(self._connections.values())

    def status(self) -> list[dict[str, Any]]:
        return [conn.status() for conn in self._connections.values()]

    def pins(self) -> list[ToolPin]:
        return [pin for conn in self._connections.values() for pin in conn.pins.all()]

    async def approve_tool(
        self, server: str, tool: str, observed_hash: str, *, approved_by: str
    ) -> ToolPin:
        """An operator re-approves a changed (or pending) tool by the hash now listed."""
        conn = self._connections.get(server)
        if conn is None:
            raise LookupError(f"unknown server {server}")
        kind, data = await conn.pins.approve(tool, observed_hash, approved_by=approved_by)
        await self.audit.record(kind, data)
        pin = conn.pins.get(tool)
        assert pin is not None
        return pin

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Supervise every server until cancelled; ready when each had its first attempt."""
        async with anyio.create_task_group() as tg:
            async with anyio.create_task_group() as starting:
                for conn in self._connections.values():
                    starting.start_soon(_start, tg, conn)
            task_status.started()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[McpConnections]:
        """``run`` for a block: tests, benchmarks and one-shot tools."""
        async with anyio.create_task_group() as tg:
            await tg.start(self.run)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()


async def _start(tg: TaskGroup, conn: ServerConnection) -> None:
    await tg.start(conn.run)
