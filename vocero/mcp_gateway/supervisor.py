"""The life of one server's connection: connect, serve, reconnect with backoff (docs/mcp.md
"Shape", "Circuit breaker").

:meth:`Supervisor.run` opens a session through the server's adapter, fetches and pins the first
listing, serves (re-listing when the registry says it is due) until the session ends, then waits
and connects again: jittered backoff after a failure, or, while an operator's consent is pending,
until the consent ends (reconnecting could only fail the same way and ask again). A server that
does not speak the pinned revision, or wants OAuth the node cannot give, is refused once and for
all. Ready after the first attempt either way.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import structlog
from anyio.abc import TaskStatus

from vocero.contracts.domain import McpServerSpec
from vocero.contracts.ports import Timers
from vocero.mcp_gateway.adapters import (
    AdapterSession,
    McpAdapter,
    OpenOptions,
    SessionHooks,
    select_adapter,
)
from vocero.mcp_gateway.auth_flow import AuthFlow
from vocero.mcp_gateway.errors import ServerRefusedError
from vocero.mcp_gateway.link import Link
from vocero.mcp_gateway.outbox import AuditOutbox
from vocero.mcp_gateway.questions import QuestionDesk
from vocero.mcp_gateway.registry import ToolRegistry
from vocero.mcp_gateway.resilience import CircuitBreaker, backoff_delay
from vocero.mcp_gateway.settings import GatewaySettings

log = structlog.get_logger("vocero.mcp_gateway")


class Supervisor:
    """Keeps one server connected: each session's lifetime, and the wait between two."""

    def __init__(
        self,
        name: str,
        spec: McpServerSpec,
        *,
        link: Link,
        registry: ToolRegistry,
        auth: AuthFlow,
        breaker: CircuitBreaker,
        desk: QuestionDesk,
        outbox: AuditOutbox,
        settings: GatewaySettings,
        clock: Timers,
        adapters: Callable[[McpServerSpec], McpAdapter] = select_adapter,
    ) -> None:
        """``adapters`` picks the adapter for the spec (a scripted fake in tests)."""
        self.name = name
        self.spec = spec
        self.attempts = 0
        """How many times this connection has tried to connect."""
        self._link = link
        self._registry = registry
        self._auth = auth
        self._breaker = breaker
        self._desk = desk
        self._outbox = outbox
        self._settings = settings
        self._clock = clock
        self._adapters = adapters
        self._last_end = ""

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, serve, reconnect until cancelled. Ready after the first attempt either way."""
        try:
            adapter = self._adapters(self.spec)
            options = await self._auth.open_options(self._desk)
        except ServerRefusedError as exc:
            await self._refused(exc)
            task_status.started()
            return
        await self._registry.pins.load()
        try:
            async with self._auth.consenting():
                await self._supervise(adapter, options, task_status)
        finally:
            if self._link.state != "refused":
                self._link.state = "stopped"
            self._link.session = None
            with anyio.CancelScope(shield=True):  # the counts of failures still repeating
                self._outbox.succeeded()
                await self._outbox.flush()

    async def _supervise(
        self, adapter: McpAdapter, options: OpenOptions, task_status: TaskStatus[None]
    ) -> None:
        """Connect, serve, and after each end wait (backoff, or until an operator's consent)."""
        started = False
        attempt = 0
        while True:
            try:
                connected = await self._session_once(
                    adapter, options, task_status if not started else None
                )
            except ServerRefusedError as exc:
                # The server does not speak the pinned revision: no point in retrying.
                await self._refused(exc)
                if not started:
                    task_status.started()
                return
            started = True
            attempt = 0 if connected else attempt + 1
            ended = {"server": self.name, "breaker": self._breaker.state}
            if connected:
                await self._outbox.record("mcp.server_disconnected", ended)
            else:
                self._outbox.failed("mcp.server_connect_failed", ended)
                await self._outbox.flush()
            await self._pause(attempt)

    async def _refused(self, exc: ServerRefusedError) -> None:
        self._link.state = "refused"
        await self._outbox.record("mcp.server_refused", {"server": self.name, "reason": str(exc)})

    async def _pause(self, attempt: int) -> None:
        """Between two connection attempts. While an operator's consent is pending, the
        consent ends the wait, not a timer: reconnecting could only fail the same way again
        (and ask again). Then, unless it brought tokens, the backoff."""
        if self._auth.awaiting_consent:
            self._link.state = "awaiting_consent"
            await self._auth.consent_ended()
            self._link.state = "disconnected"
        if self._auth.take_grant():
            return  # an operator's consent: try again now
        delay = backoff_delay(
            attempt, self._settings.reconnect_initial_s, self._settings.reconnect_max_s
        )
        with self._clock.move_on_after(max(delay, self._settings.reconnect_initial_s / 4)):
            await self._auth.granted()
        self._auth.take_grant()

    async def _session_once(
        self, adapter: McpAdapter, options: OpenOptions, task_status: TaskStatus[None] | None
    ) -> bool:
        """One connection's lifetime; returns whether it got as far as serving."""
        self._link.lost = False
        connected = False
        self.attempts += 1
        hooks = SessionHooks(tools_changed=self._registry.tools_changed, lost=self._link.mark_lost)
        try:
            async with adapter.open(
                self.name,
                self.spec,
                hooks,
                connect_timeout_s=self._settings.connect_timeout_s,
                options=options,
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
            ending = "" if connected else _describe(exc)
            logged = log.debug if ending and ending == self._last_end else log.warning
            self._last_end = ending  # the same failed attempt again: once at warning level
            logged(
                "mcp.connection_ended", server=self.name, connected=connected, error=_describe(exc)
            )
            if (refusal := _find(exc, ServerRefusedError)) is not None:
                raise refusal from None
        finally:
            self._link.session = None
            self._link.state = "disconnected"
            self._registry.disconnected()
        if not connected:
            self._breaker.record_failure()
        if task_status is not None:
            task_status.started()
        await self._outbox.flush()
        return connected

    async def _attach(self, session: AdapterSession) -> None:
        await self._registry.first_listing(session)
        self._link.session = session
        self._link.protocol_version = session.protocol_version
        self._link.state = "connected"
        self._last_end = ""
        self._outbox.succeeded()
        self._breaker.record_connected()
        await self._outbox.record(
            "mcp.server_connected",
            {"server": self.name, "protocol": self._link.protocol_version},
        )
        await self._outbox.flush()

    async def _serve(self) -> None:
        while not self._link.lost:
            interval_passed = await self._link.wait(self._settings.relist_interval_s)
            if self._link.lost:
                return
            await self._registry.refresh(interval_passed=interval_passed)


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


def _find(exc: BaseException, kind: type[ServerRefusedError]) -> ServerRefusedError | None:
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := _find(inner, kind)) is not None:
                return found
    return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return type(exc).__name__
