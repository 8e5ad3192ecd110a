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

import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus
from mcp.shared.exceptions import MCPError

from vocero.contracts.clock import SystemClock
from vocero.contracts.domain import AgentProfile, McpServerSpec, Principal
from vocero.contracts.errors import (
    ConfigError,
    ToolCallError,
    ToolChangedError,
    ToolUnavailableError,
)
from vocero.contracts.ports import AuditSink, CallMeta, InputHandler, Timers
from vocero.mcp_gateway.adapters import (
    AdapterSession,
    McpAdapter,
    OpenOptions,
    SessionHooks,
    StreamBrokenError,
    select_adapter,
)
from vocero.mcp_gateway.consent import GrantedElsewhere, OperatorConsent
from vocero.mcp_gateway.errors import (
    ServerAuthError,
    ServerRefusedError,
    ToolBusyError,
    consent_failure,
    counts_against_server,
    is_transport_failure,
    map_call_failure,
)
from vocero.mcp_gateway.failures import COALESCED, FailureRuns
from vocero.mcp_gateway.listing_cache import ListingCache, Partition
from vocero.mcp_gateway.model import Listing, RemoteResult
from vocero.mcp_gateway.oauth import (
    AuthGuard,
    Consent,
    InMemoryOAuthTokenRepository,
    OAuthTokenRepository,
    SealedTokenStorage,
    Sealer,
    authorize,
    build_auth,
    preregister,
)
from vocero.mcp_gateway.pinning import (
    InMemoryPinRepository,
    PinBook,
    PinEvent,
    PinRepository,
    ToolPin,
)
from vocero.mcp_gateway.questions import (
    CallRoute,
    QuestionDesk,
    route_for,
    visit_links,
    wants_links,
)
from vocero.mcp_gateway.resilience import BreakerState, Bulkhead, CircuitBreaker, backoff_delay
from vocero.mcp_gateway.settings import GatewaySettings
from vocero.mcp_gateway.tally import Tally
from vocero.mcp_gateway.validation import Validators, schema_problem

log = structlog.get_logger("vocero.mcp_gateway")
_LINK_ROUNDS = 2
"""Times one call may send the caller to a server's pages (2025-11-25 ``-32042``) before the
server's next refusal ends it (``url_elicitation_required``)."""

ServerState = Literal[
    "starting", "connected", "disconnected", "awaiting_consent", "refused", "stopped"
]
SDK_CALL_TIMES: ContextVar[list[tuple[float, float]] | None] = ContextVar(
    "sdk_call_times", default=None
)
"""Timing probe for ``vocero bench mcp``: when set, each SDK tools/call appends its (wall, thread
CPU) seconds, so the gateway's own overhead is the call's total minus these."""
OPERATION_META = "io.vocero/operation_id"
PRINCIPAL_META = "io.vocero/principal"
PROPOSAL_META = "io.vocero/proposal"
BUILTIN_SERVER = "vocero"
"""Tools of ``server: vocero`` are Vocero's own (``followups.record``): never routed through MCP."""


@dataclass(frozen=True, slots=True)
class AuthOptions:
    """How connections obtain and keep OAuth tokens (servers with ``oauth`` only)."""

    sealer: Sealer
    repository: OAuthTokenRepository = field(default_factory=InMemoryOAuthTokenRepository)
    consent: Consent | None = None
    """Asked inline, by the request that needs authorization (a stand-in operator, tests)."""
    operator: OperatorConsent | None = None
    """An operator's consent in a browser: when a server needs it, one flow waits for it in the
    background while calls fail fast (docs/mcp.md "OAuth"). Used when ``consent`` is not set."""
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


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
        clock: Timers,
        auth: AuthOptions | None = None,
    ) -> None:
        self.name = name
        self.spec = spec
        self.settings = settings
        self.state: ServerState = "starting"
        self.protocol_version = ""
        self._audit = audit
        self._clock = clock
        self._auth_options = auth
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
        self.desk = QuestionDesk(name)
        self.listings = ListingCache(max_age_s=settings.relist_interval_s)
        self.partition = Partition(credential="oauth" if spec.oauth else "static")
        self.pin_epoch = 0
        self._listings = Tally()
        self._last_listing_at = float("-inf")
        self.tokens: SealedTokenStorage | None = None
        self._guard: AuthGuard | None = None
        self._session: AdapterSession | None = None
        self._events: list[PinEvent] = []
        self.stale = False
        self._refresh = False
        self._lost = False
        self._wake = anyio.Event()
        self._refresh_lock = anyio.Lock()
        self._tasks: TaskGroup | None = None
        self._authorizing = False
        self._authorized = anyio.Event()
        self._authorization_ended = anyio.Event()
        self._failures = FailureRuns(name)
        self._last_end = ""
        self._attempts = 0

    # ----------------------------------------------------------------------------- calls

    def active_pin(self, tool: str) -> ToolPin:
        """The pinned definition of an approved tool; otherwise why it cannot be called."""
        pin = self.pins.get(tool)
        if pin is None:
            if self.state == "connected":
                raise ToolUnavailableError("tool_not_listed")
            raise self._not_connected()
        if not pin.active:
            raise ToolChangedError(f"tool_{pin.status}")
        return pin

    def _not_connected(self) -> ToolUnavailableError:
        """Why calls fail while there is no session: the authorization, when that is why."""
        if self._guard is not None and self._guard.last_failure:
            return ServerAuthError(self._guard.last_failure)
        return ToolUnavailableError("not_connected")

    def note_use(self) -> None:
        """A call needs the listing: past its ``ttlMs``, fetch it again in the background (the
        pins keep every call safe meanwhile), at most every ``min_relist_interval_s``."""
        if self.stale or self._session is None:
            return
        now = self._clock.monotonic()
        if self.listings.is_fresh(self.name, self.partition, now=now, pin_epoch=self.pin_epoch):
            return
        if now - self._last_listing_at < self.settings.min_relist_interval_s:
            return
        self._last_listing_at = now
        self._refresh = True
        self._wake.set()

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
            await self._observe(listing)
        await self.flush_events()

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
        """
        if not self.breaker.allow():
            raise ToolUnavailableError("circuit_open")
        session = self._session
        if session is None:
            self.breaker.record_failure()
            await self.flush_events()
            raise self._not_connected()
        tool_bulkhead = self._tool_bulkheads[tool]
        if not self._server_bulkhead.try_enter():
            self.breaker.release_probe()
            raise ToolBusyError("server_busy")
        if not tool_bulkhead.try_enter():
            self._server_bulkhead.leave()
            self.breaker.release_probe()
            raise ToolBusyError("tool_busy")
        route = route_for(
            self.name,
            model_tool or tool,
            call or _meta_of(meta),
            ask,
            audit=self._audit_input,
            timeout_s=self.settings.input_timeout_s,
            max_fields=self.settings.max_input_fields,
        )
        try:
            with self.desk.open(route):
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
        reissues = self.settings.reissue_broken_streams
        link_rounds = _LINK_ROUNDS
        # The SDK's own read timeout is a backstop: the scope below is the real bound, and it
        # moves while the caller answers a question (2025-11-25 keeps the request open then).
        backstop_s = timeout_s + self.settings.input_timeout_s + 1.0
        try:
            with anyio.fail_after(timeout_s) as deadline:
                route.deadline = deadline
                if on_dispatched is not None:
                    on_dispatched()
                dispatched = True
                while True:
                    sent, sent_cpu = time.perf_counter(), time.thread_time()
                    try:
                        result = await session.call_tool(
                            tool, arguments, meta, timeout_s=backstop_s
                        )
                    except StreamBrokenError:
                        if reissues <= 0:
                            raise ToolUnavailableError(
                                "stream_broken", possibly_executed=True
                            ) from None
                        reissues -= 1
                        await self._reissued(tool, meta)
                        continue
                    except MCPError as exc:
                        if not wants_links(exc, session.protocol_version) or link_rounds <= 0:
                            raise
                        link_rounds -= 1  # nothing ran: the server sent the caller to a page
                        await visit_links(route, self.desk, exc)
                        continue
                    finally:
                        if (probe := SDK_CALL_TIMES.get()) is not None:
                            probe.append(
                                (time.perf_counter() - sent, time.thread_time() - sent_cpu)
                            )
                    break
        except anyio.get_cancelled_exc_class():
            self.breaker.release_probe()
            raise
        except Exception as exc:
            error: ToolCallError = map_call_failure(exc, dispatched=dispatched)
            if route.auth_failure:
                error = ServerAuthError(route.auth_failure)
            if counts_against_server(error):
                self.breaker.record_failure()
            else:
                self.breaker.record_success()
            if is_transport_failure(exc) and not route.auth_failure:
                self._mark_lost()
            await self.flush_events()
            raise error from exc
        self.breaker.record_success()
        if self._events:
            await self.flush_events()
        return result

    async def _reissued(self, tool: str, meta: dict[str, Any]) -> None:
        log.warning("mcp.request_reissued", server=self.name, tool=tool)
        data = {"server": self.name, "tool": tool, "operation_id": meta.get(OPERATION_META, "")}
        await record_safely(self._audit, "mcp.request_reissued", data)

    async def _audit_input(self, kind: str, data: dict[str, Any]) -> None:
        await record_safely(self._audit, kind, data)

    # ------------------------------------------------------------------------ supervision

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, serve, reconnect until cancelled. Ready after the first attempt either way."""
        try:
            adapter = select_adapter(self.spec)
            options = await self._open_options()
        except ServerRefusedError as exc:
            self.state = "refused"
            refused = {"server": self.name, "reason": str(exc)}
            await record_safely(self._audit, "mcp.server_refused", refused)
            task_status.started()
            return
        await self.pins.load()
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                await self._supervise(adapter, options, task_status)
                tasks.cancel_scope.cancel()
        finally:
            self._tasks = None
            if self.state != "refused":
                self.state = "stopped"
            self._session = None
            with anyio.CancelScope(shield=True):  # the counts of failures still repeating
                await self._runs_ended()

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
                self.state = "refused"
                refused = {"server": self.name, "reason": str(exc)}
                await record_safely(self._audit, "mcp.server_refused", refused)
                if not started:
                    task_status.started()
                return
            started = True
            attempt = 0 if connected else attempt + 1
            ended = {"server": self.name, "breaker": self.breaker.state}
            if connected:
                await record_safely(self._audit, "mcp.server_disconnected", ended)
            else:
                self._failed("mcp.server_connect_failed", ended)
                await self.flush_events()
            await self._pause(attempt)

    async def _pause(self, attempt: int) -> None:
        """Between two connection attempts. While an operator's consent is pending, the
        consent ends the wait, not a timer: reconnecting could only fail the same way again
        (and ask again). Then, unless it brought tokens, the backoff."""
        if self._authorizing:
            self.state = "awaiting_consent"
            await self._authorization_ended.wait()
            self.state = "disconnected"
        if self._authorized.is_set():
            self._authorized = anyio.Event()
            return  # an operator's consent: try again now
        delay = backoff_delay(
            attempt, self.settings.reconnect_initial_s, self.settings.reconnect_max_s
        )
        with self._clock.move_on_after(max(delay, self.settings.reconnect_initial_s / 4)):
            await self._authorized.wait()
        self._authorized = anyio.Event()

    @property
    def attempts(self) -> int:
        """How many times this connection has tried to connect."""
        return self._attempts

    def _failed(self, kind: str, data: dict[str, Any]) -> None:
        """A failure to audit: the first of a run is, the identical ones after it are counted
        (:class:`~vocero.mcp_gateway.failures.FailureRuns`)."""
        for event in self._failures.failed(kind, data, self._clock.monotonic()):
            self._queue(event)

    def _succeeded(self) -> None:
        for event in self._failures.ended():
            self._queue(event)

    def _queue(self, event: tuple[str, dict[str, Any]]) -> None:
        kind, data = event
        if kind == COALESCED:
            log.info(COALESCED, **data)
        self._events.append(event)

    async def _runs_ended(self) -> None:
        self._succeeded()
        await self.flush_events()

    async def _open_options(self) -> OpenOptions:
        """The question desk, and OAuth when the server has it (refused if misconfigured)."""
        options = OpenOptions(desk=self.desk)
        if self.spec.oauth is None:
            return options
        if self._auth_options is None:
            raise ServerRefusedError("oauth_unavailable")
        auth = self._auth_options
        self.tokens = SealedTokenStorage(
            self.name, auth.repository, auth.sealer, on_grant=self._granted
        )
        await preregister(self.tokens, self.spec, auth.environ)
        self._guard = build_auth(
            self.name,
            self.spec,
            self.tokens,
            consent=auth.consent,
            on_failure=self._auth_failed,
            environ=auth.environ,
        )
        options.auth = self._guard
        return options

    def _granted(self, scope: str | None) -> None:
        """New or wider credentials: nothing fetched under the old ones is used again."""
        self._succeeded()
        self._new_epoch("mcp.oauth_granted", {"server": self.name, "scope": scope or ""})

    def _auth_failed(self, reason: str) -> None:
        self._new_epoch()
        self._failed("mcp.oauth_failed", {"server": self.name, "reason": reason})
        auth = self._auth_options
        if (
            reason == "server_authorization_required"
            and auth is not None
            and auth.consent is None
            and auth.operator is not None
            and self._tasks is not None
            and not self._authorizing
        ):
            self._authorizing = True
            self._authorization_ended = anyio.Event()
            self._tasks.start_soon(self._authorize, auth.operator)

    async def _authorize(self, operator: OperatorConsent) -> None:
        """Wait in the background for an operator's consent; then use the new tokens at once.
        The consent is settled by what the token exchange did: granted, or failed and why."""
        assert self.tokens is not None and self._guard is not None
        environ = self._auth_options.environ if self._auth_options is not None else os.environ
        failure: str | None = "interrupted"
        granted = False
        try:
            granted = await authorize(self.name, self.spec, self.tokens, operator.wait, environ)
            failure = None if granted else "no_tokens"
        except GrantedElsewhere:
            granted, failure = True, None  # another node's grant is in the shared record
        except Exception as exc:  # boundary: refused, expired, the code refused, unreachable
            failure = consent_failure(exc)
            log.warning(
                "mcp.oauth_consent_failed",
                server=self.name,
                reason_code=failure,
                error=type(exc).__name__,
            )
        finally:
            with anyio.CancelScope(shield=True):
                await operator.settle(self.name, failure)
            self._authorizing = False
            self._authorization_ended.set()
        if granted:
            self.tokens.reload()
            self._guard.reload()
            self._authorized.set()

    def _new_epoch(self, kind: str = "", data: dict[str, Any] | None = None) -> None:
        self.partition = Partition(
            credential=self.partition.credential,
            epoch=self.partition.epoch + 1,
            tenant=self.partition.tenant,
        )
        self.listings.invalidate(self.name)
        if kind:
            self._events.append((kind, data or {}))

    async def _session_once(
        self, adapter: McpAdapter, options: OpenOptions, task_status: TaskStatus[None] | None
    ) -> bool:
        """One connection's lifetime; returns whether it got as far as serving."""
        self._lost = False
        connected = False
        self._attempts += 1
        hooks = SessionHooks(tools_changed=self._tools_changed, lost=self._mark_lost)
        try:
            async with adapter.open(
                self.name,
                self.spec,
                hooks,
                connect_timeout_s=self.settings.connect_timeout_s,
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
            self._session = None
            self.state = "disconnected"
            self.listings.invalidate(self.name)
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
        await self._observe(listing)
        self._session = session
        self.protocol_version = session.protocol_version
        self.state = "connected"
        self._last_end = ""
        self._succeeded()
        self.breaker.record_connected()
        await record_safely(
            self._audit,
            "mcp.server_connected",
            {"server": self.name, "protocol": self.protocol_version},
        )
        await self.flush_events()

    async def _observe(self, listing: Listing) -> None:
        """Compare a listing with the pins; a pin change starts a new cache epoch."""
        events = await self.pins.observe(listing.tools)
        if events:
            self.pin_epoch += 1
        self._events.extend(events)
        now = self._clock.monotonic()
        self._last_listing_at = now
        self.listings.store(self.name, self.partition, listing, now=now, pin_epoch=self.pin_epoch)
        self._listings.add()

    @property
    def listed(self) -> int:
        """How many complete listings this connection has fetched."""
        return self._listings.count

    async def wait_listed(self, count: int) -> None:
        """Until this connection has fetched ``count`` listings (tests; bounded by the caller)."""
        await self._listings.reach(count)

    def pins_changed(self) -> None:
        """An operator changed a pin: the listing is fetched again before it is trusted."""
        self.pin_epoch += 1
        self.listings.invalidate(self.name)

    async def _serve(self) -> None:
        while not self._lost:
            with anyio.move_on_after(self.settings.relist_interval_s) as scope:
                await self._wake.wait()
            self._wake = anyio.Event()
            if self._lost:
                return
            if scope.cancelled_caught:
                self.stale = True
            if self._refresh and not self.stale:
                await self._relist_in_background()
            await self.ensure_fresh()

    async def _relist_in_background(self) -> None:
        """A listing past its ``ttlMs``: fetched again while calls go on under the pins."""
        self._refresh = False
        session = self._session
        if session is None:
            return
        async with self._refresh_lock:
            try:
                with anyio.fail_after(self.settings.connect_timeout_s):
                    listing = await session.list_tools()
            except Exception as exc:
                if is_transport_failure(exc):
                    self._mark_lost()
                log.warning("mcp.relist_failed", server=self.name, error=type(exc).__name__)
                return
            await self._observe(listing)
        await self.flush_events()

    def _tools_changed(self) -> None:
        self.stale = True
        self.listings.invalidate(self.name)
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
                auth=auth,
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
