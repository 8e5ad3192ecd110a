"""One long-lived connection per MCP server, supervised; and the process-wide registry of them.

A :class:`ServerConnection` is the one object sessions see for a server; it wires four parts,
each doing one job (docs/mcp.md "Shape"):

- :class:`~vocero.mcp_gateway.supervisor.Supervisor`: connect, serve, reconnect with backoff;
- :class:`~vocero.mcp_gateway.registry.ToolRegistry`: the listing, the pins, their freshness;
- :class:`~vocero.mcp_gateway.calls.ToolCalls`: tools/calls through the breaker, the bulkheads
  and the timeout;
- :class:`~vocero.mcp_gateway.auth_flow.AuthFlow`: OAuth tokens and an operator's consent.

They share the live session (:class:`~vocero.mcp_gateway.link.Link`) and the audit queue
(:class:`~vocero.mcp_gateway.outbox.AuditOutbox`). :class:`McpConnections` runs every supervisor
in one task group::

    async with anyio.create_task_group() as tg:
        await tg.start(connections.run)   # ready once each server had a first attempt
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

from vocero.contracts.clock import SystemClock
from vocero.contracts.domain import AgentProfile, McpServerSpec, Principal
from vocero.contracts.errors import ConfigError, ToolChangedError, ToolUnavailableError
from vocero.contracts.ports import AuditSink, CallMeta, InputHandler, Timers
from vocero.mcp_gateway.adapters import OpenOptions
from vocero.mcp_gateway.auth_flow import AuthFlow, AuthOptions
from vocero.mcp_gateway.calls import SdkCallObserver, ToolCalls
from vocero.mcp_gateway.delegation import (
    AUTHORIZATION_UNAVAILABLE,
    PerCallerTokens,
    SubjectTokens,
    TokenExchanger,
)
from vocero.mcp_gateway.enterprise import EnterpriseExchanger
from vocero.mcp_gateway.errors import ToolPendingError
from vocero.mcp_gateway.link import Link, ServerState
from vocero.mcp_gateway.model import RemoteResult
from vocero.mcp_gateway.outbox import AuditOutbox, record_safely
from vocero.mcp_gateway.pinning import InMemoryPinRepository, PinRepository, ToolPin
from vocero.mcp_gateway.questions import CallRoute, QuestionDesk
from vocero.mcp_gateway.registry import ToolRegistry
from vocero.mcp_gateway.resilience import BreakerState, CircuitBreaker
from vocero.mcp_gateway.settings import GatewaySettings
from vocero.mcp_gateway.supervisor import Supervisor
from vocero.mcp_gateway.validation import Validators

log = structlog.get_logger("vocero.mcp_gateway")

__all__ = [
    "BUILTIN_SERVER",
    "AuthOptions",
    "McpConnections",
    "SdkCallObserver",
    "ServerConnection",
    "ServerState",
]

BUILTIN_SERVER = "vocero"
"""Tools of ``server: vocero`` are Vocero's own (``followups.record``): never routed through MCP."""


class ServerConnection:
    """The supervised connection to one server, shared by every session that uses it: wires
    the supervisor, the registry, the calls and the auth flow, and answers for them."""

    def __init__(
        self,
        name: str,
        spec: McpServerSpec,
        tools: Iterable[str],
        *,
        audit: AuditSink,
        pins: PinRepository,
        settings: GatewaySettings,
        clock: Timers,
        auth: AuthOptions | None = None,
        sdk_observer: SdkCallObserver | None = None,
        subjects: SubjectTokens | None = None,
    ) -> None:
        self.name = name
        self.spec = spec
        self.settings = settings
        self._audit = audit
        self._link = Link()
        self._outbox = outbox = AuditOutbox(name, audit, clock)
        self.registry = ToolRegistry(
            name,
            tools,
            pins,
            oauth=spec.oauth is not None,
            link=self._link,
            outbox=outbox,
            settings=settings,
            clock=clock,
        )
        self.pins = self.registry.pins
        self.breaker = CircuitBreaker(
            threshold=settings.breaker_failure_threshold,
            reset_s=settings.breaker_reset_s,
            monotonic=clock.monotonic,
            on_change=self._breaker_changed,
        )
        self.desk = QuestionDesk(name)
        self.auth = AuthFlow(
            name, spec, auth, outbox=outbox, new_credentials=self.registry.credentials_changed
        )
        exchange = spec.auth.token_exchange if spec.auth is not None else None
        enterprise = spec.auth.enterprise if spec.auth is not None else None
        environ = auth.environ if auth is not None else os.environ
        self.delegation: PerCallerTokens | None = None
        if exchange is not None:
            self.delegation = TokenExchanger(
                name, exchange, subjects, environ=environ, on_failure=self._delegation_failed
            )
        elif enterprise is not None:  # SEP-990 per caller (docs/adr/0027 addendum)
            self.delegation = EnterpriseExchanger(
                name, enterprise, spec.url, subjects, environ=environ,
                on_failure=self._delegation_failed,
            )
        self.calls = ToolCalls(
            name,
            link=self._link,
            breaker=self.breaker,
            desk=self.desk,
            tools=self.pins.tools,
            unavailable=self.auth.unavailable,
            outbox=outbox,
            audit=audit,
            settings=settings,
            max_concurrency=spec.max_concurrency,
            observer=sdk_observer,
            delegation=self.delegation,
        )
        self.supervisor = Supervisor(
            name,
            spec,
            link=self._link,
            registry=self.registry,
            auth=self.auth,
            breaker=self.breaker,
            desk=self.desk,
            outbox=outbox,
            settings=settings,
            clock=clock,
        )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, serve, reconnect until cancelled (:meth:`Supervisor.run`)."""
        await self.supervisor.run(task_status=task_status)

    @property
    def state(self) -> ServerState:
        return self._link.state

    @property
    def protocol_version(self) -> str:
        return self._link.protocol_version

    @property
    def stale(self) -> bool:
        """A list-changed signal (or ``relist_interval_s``) asks for a listing before a call."""
        return self.registry.stale

    @property
    def listed(self) -> int:
        """How many complete listings this connection has fetched."""
        return self.registry.listed

    def described(self, tool: str) -> str:
        """The line the server's last listing gave ``tool`` ("" when it was not listed)."""
        return self.registry.described.get(tool, "")

    @property
    def attempts(self) -> int:
        """How many times this connection has tried to connect."""
        return self.supervisor.attempts

    async def wait_listed(self, count: int) -> None:
        """Until this connection has fetched ``count`` listings (tests; bounded by the caller)."""
        await self.registry.wait_listed(count)

    def note_use(self) -> None:
        """A call needs the listing (:meth:`ToolRegistry.note_use`)."""
        self.registry.note_use()

    async def ensure_fresh(self) -> None:
        """Re-list after a list-changed signal before anything else is called."""
        await self.registry.ensure_fresh()

    def pins_changed(self) -> None:
        """An operator changed a pin: the listing is fetched again before it is trusted."""
        self.registry.pins_changed()

    async def open_options(self) -> OpenOptions:
        """What a session to this server opens with: the question desk, and OAuth."""
        return await self.auth.open_options(self.desk)

    def active_pin(self, tool: str) -> ToolPin:
        """The pinned definition of an approved tool; otherwise why it cannot be called."""
        pin = self.pins.get(tool)
        if pin is None:
            if self.state == "connected":
                raise ToolUnavailableError("tool_not_listed")
            raise self.auth.unavailable()
        if pin.status == "pending":
            raise ToolPendingError(f"tool_{pin.status}")
        if not pin.active:
            raise ToolChangedError(f"tool_{pin.status}")
        return pin

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
        """Send one tools/call (:meth:`ToolCalls.invoke`): the result and its question route."""
        return await self.calls.invoke(
            tool,
            arguments,
            meta,
            timeout_s=timeout_s,
            on_dispatched=on_dispatched,
            call=call,
            ask=ask,
            model_tool=model_tool,
        )

    def status(self) -> dict[str, Any]:
        return {
            "server": self.name,
            "state": self.state,
            "protocol": self.protocol_version,
            "breaker": self.breaker.state,
            "tools": {pin.tool: pin.status for pin in self.pins.all()},
        }

    async def _delegation_failed(self, cause: str, principal: Principal) -> None:
        """A caller's call fails closed for want of a token (never the token itself)."""
        data = {
            "server": self.name,
            "reason_code": AUTHORIZATION_UNAVAILABLE,
            "cause": cause,
            "tenant_id": principal.tenant_id,
            "subject_ref": principal.subject_ref,
        }
        await record_safely(self._audit, "mcp.delegation_failed", data)

    def _breaker_changed(self, before: BreakerState, after: BreakerState) -> None:
        log.info("mcp.breaker_changed", server=self.name, before=before, after=after)
        self._outbox.queue(
            "mcp.breaker_changed", {"server": self.name, "from": before, "to": after}
        )


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
        clock: Timers | None = None,
        auth: AuthOptions | None = None,
        sdk_observer: SdkCallObserver | None = None,
        subjects: SubjectTokens | None = None,
    ) -> None:
        """``sdk_observer``: told the time of each SDK tools/call (``vocero bench mcp``);
        ``subjects``: the callers' own JWTs, for servers with delegation (docs/adr/0027)."""
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
                auth=auth,
                sdk_observer=sdk_observer,
                subjects=subjects,
            )
            for name, spec in servers.items()
            if name != BUILTIN_SERVER and tools.get(name)
        }

    @classmethod
    def from_profiles(cls, profiles: Iterable[AgentProfile], **kwargs: Any) -> McpConnections:
        """Servers and callable tools of every profile (prohibited and built-in tools excluded).
        A server of a profile with ``tool_approval: review`` keeps its first-seen tools
        ``pending`` until an operator approves them, whatever ``settings`` says (stricter wins)."""
        servers: dict[str, McpServerSpec] = {}
        owners: dict[str, str] = {}
        tools: dict[str, set[str]] = {}
        review: set[str] = set()
        for profile in profiles:
            if profile.tool_approval == "review":
                review.update(profile.mcp_servers)
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
        settings: GatewaySettings = kwargs.pop("settings", None) or GatewaySettings()
        if review:
            settings = dataclasses.replace(
                settings, review_servers=settings.review_servers | frozenset(review)
            )
        return cls(servers, tools, settings=settings, **kwargs)

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
        conn.pins_changed()
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
