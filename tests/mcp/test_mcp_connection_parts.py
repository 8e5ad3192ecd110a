"""In-process tests of a server connection's parts, each on scripted fakes: the audit outbox, the
calls (breaker, re-issue, the SDK timing observer), the registry (listing freshness, re-listing),
the auth flow's refusals, and the supervisor (backoff, reconnection, refusal)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest

from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import McpOAuthSpec, McpServerSpec
from vocero.contracts.errors import ToolUnavailableError
from vocero.mcp_gateway import GatewaySettings, InMemoryPinRepository, ServerAuthError
from vocero.mcp_gateway.adapters import (
    AdapterSession,
    McpAdapter,
    OpenOptions,
    SessionHooks,
    StreamBrokenError,
)
from vocero.mcp_gateway.auth_flow import AuthFlow
from vocero.mcp_gateway.calls import ToolCalls
from vocero.mcp_gateway.errors import ServerRefusedError
from vocero.mcp_gateway.failures import COALESCED
from vocero.mcp_gateway.link import Link
from vocero.mcp_gateway.model import Listing, RemoteResult, RemoteTool
from vocero.mcp_gateway.outbox import AuditOutbox
from vocero.mcp_gateway.questions import QuestionDesk
from vocero.mcp_gateway.registry import ToolRegistry
from vocero.mcp_gateway.resilience import CircuitBreaker
from vocero.mcp_gateway.supervisor import Supervisor

pytestmark = pytest.mark.anyio

TOOL = RemoteTool(
    name="get_order_status",
    input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}},
)
SPEC = McpServerSpec(command="orders-server")
OK = RemoteResult(texts=['{"status": "shipped"}'])


class MemoryAudit:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        self.events.append((kind, data))

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]


class FakeSession:
    """Lists ``TOOL``; answers each call with the next scripted outcome (raised if an error)."""

    protocol_version = "2025-11-25"

    def __init__(self, *outcomes: RemoteResult | Exception, ttl_ms: int | None = None) -> None:
        self.outcomes = list(outcomes)
        self.ttl_ms = ttl_ms
        self.list_failure: Exception | None = None
        self.lists = 0

    async def list_tools(self) -> Listing:
        self.lists += 1
        if self.list_failure is not None:
            raise self.list_failure
        return Listing(tools=[TOOL], ttl_ms=self.ttl_ms)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any], *, timeout_s: float
    ) -> RemoteResult:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


class FakeAdapter:
    """Opens each attempt with the next scripted outcome: a session served until the hooks say
    it is lost, or an error raised while connecting."""

    protocol = "2025-11-25"

    def __init__(self, *attempts: FakeSession | Exception) -> None:
        self.attempts = list(attempts)
        self.hooks: SessionHooks | None = None

    @asynccontextmanager
    async def _open(self, hooks: SessionHooks) -> AsyncIterator[AdapterSession]:
        attempt = self.attempts.pop(0)
        if isinstance(attempt, Exception):
            raise attempt
        self.hooks = hooks
        yield attempt

    def open(
        self,
        server: str,
        spec: McpServerSpec,
        hooks: SessionHooks,
        *,
        connect_timeout_s: float,
        options: OpenOptions | None = None,
    ) -> AbstractAsyncContextManager[AdapterSession]:
        return self._open(hooks)


class Timings:
    def __init__(self) -> None:
        self.calls: list[tuple[float, float]] = []

    def sdk_call(self, wall_s: float, cpu_s: float) -> None:
        self.calls.append((wall_s, cpu_s))


def outbox(audit: MemoryAudit, clock: VirtualClock | None = None) -> AuditOutbox:
    return AuditOutbox("orders", audit, clock or VirtualClock())


def calls(
    link: Link,
    audit: MemoryAudit,
    *,
    observer: Timings | None = None,
    unavailable: ToolUnavailableError | None = None,
    breaker: CircuitBreaker | None = None,
) -> ToolCalls:
    return ToolCalls(
        "orders",
        link=link,
        breaker=breaker or CircuitBreaker(threshold=3, reset_s=5.0, monotonic=lambda: 0.0),
        desk=QuestionDesk("orders"),
        tools=[TOOL.name],
        unavailable=lambda: unavailable or ToolUnavailableError("not_connected"),
        outbox=outbox(audit),
        audit=audit,
        settings=GatewaySettings(reissue_broken_streams=1),
        max_concurrency=8,
        observer=observer,
    )


def registry(
    link: Link, clock: VirtualClock, audit: MemoryAudit | None = None, **settings: Any
) -> ToolRegistry:
    return ToolRegistry(
        "orders",
        [TOOL.name],
        InMemoryPinRepository(),
        oauth=False,
        link=link,
        outbox=outbox(audit or MemoryAudit(), clock),
        settings=GatewaySettings(**settings),
        clock=clock,
    )


# ----------------------------------------------------------------------------------- outbox


async def test_the_outbox_records_a_run_of_failures_once_then_its_count() -> None:
    audit = MemoryAudit()
    box = outbox(audit)
    for _ in range(3):
        box.failed("mcp.oauth_failed", {"server": "orders", "reason": "expired"})
    box.queue("mcp.pin_changed", {"tool": TOOL.name})
    assert box.pending
    await box.flush()
    assert audit.kinds() == ["mcp.oauth_failed", "mcp.pin_changed"] and not box.pending
    box.succeeded()
    await box.flush()
    assert audit.events[-1] == (
        COALESCED,
        {"server": "orders", "kind": "mcp.oauth_failed", "reason": "expired", "count": 2},
    )


# ------------------------------------------------------------------------------------ calls


async def test_the_observer_is_told_of_every_sdk_attempt_of_a_call() -> None:
    audit, timings, link = MemoryAudit(), Timings(), Link()
    link.session = FakeSession(StreamBrokenError(), OK)
    result, route = await calls(link, audit, observer=timings).invoke(
        TOOL.name, {"order_id": "A1"}, {}, timeout_s=5.0
    )
    assert result == OK and route.tool == TOOL.name
    assert len(timings.calls) == 2  # the broken stream, then the call sent again
    assert all(wall >= 0 and cpu >= 0 for wall, cpu in timings.calls)
    assert audit.kinds() == ["mcp.request_reissued"]


async def test_a_call_without_a_session_says_why_and_counts_against_the_breaker() -> None:
    breaker = CircuitBreaker(threshold=1, reset_s=5.0, monotonic=lambda: 0.0)
    sending = calls(
        Link(), MemoryAudit(), unavailable=ServerAuthError("consent_required"), breaker=breaker
    )
    with pytest.raises(ServerAuthError, match="consent_required"):
        await sending.invoke(TOOL.name, {}, {}, timeout_s=5.0)
    assert breaker.state == "open"


async def test_a_broken_transport_tells_the_supervisor_to_reconnect() -> None:
    link = Link()
    link.session = FakeSession(httpx2.ConnectError("refused"))
    with pytest.raises(ToolUnavailableError):
        await calls(link, MemoryAudit()).invoke(TOOL.name, {}, {}, timeout_s=5.0)
    assert link.lost


# --------------------------------------------------------------------------------- registry


async def test_a_listing_past_its_ttl_is_fetched_again_in_the_background() -> None:
    clock, link = VirtualClock(), Link()
    session = FakeSession(ttl_ms=2000)
    tools = registry(link, clock)
    await tools.first_listing(session)
    link.session = session
    tools.note_use()  # fresh: nothing to do
    assert await link.wait(0.01)  # timed out: nobody woke the supervisor
    clock.advance(3.0)
    tools.note_use()
    assert not await link.wait(5.0)  # woken at once, not timed out
    await tools.refresh(interval_passed=False)
    assert (tools.listed, session.lists, tools.stale) == (2, 2, False)


async def test_a_list_changed_signal_is_listed_before_the_next_call() -> None:
    clock, link = VirtualClock(), Link()
    session = FakeSession()
    tools = registry(link, clock)
    await tools.first_listing(session)
    link.session = session
    tools.tools_changed()
    assert tools.stale
    await tools.ensure_fresh()
    assert (tools.listed, tools.stale) == (2, False)
    tools.tools_changed()
    session.list_failure = httpx2.ConnectError("gone")
    with pytest.raises(ToolUnavailableError):
        await tools.ensure_fresh()
    assert tools.stale and link.lost  # still untrusted; the supervisor reconnects


async def test_new_credentials_distrust_what_was_listed() -> None:
    clock, link = VirtualClock(), Link()
    tools = registry(link, clock)
    await tools.first_listing(FakeSession(ttl_ms=60_000))
    before = tools.partition
    assert tools.listings.is_fresh(
        "orders", before, now=clock.monotonic(), pin_epoch=tools.pin_epoch
    )
    tools.credentials_changed()
    assert tools.partition.epoch == before.epoch + 1
    assert not tools.listings.is_fresh(
        "orders", tools.partition, now=clock.monotonic(), pin_epoch=tools.pin_epoch
    )


# ------------------------------------------------------------------------------- auth flow


def auth_flow(spec: McpServerSpec) -> AuthFlow:
    return AuthFlow(
        "orders", spec, None, outbox=outbox(MemoryAudit()), new_credentials=lambda: None
    )


async def test_a_server_with_oauth_and_no_way_to_get_tokens_is_refused() -> None:
    spec = McpServerSpec(url="https://orders.example/mcp", oauth=McpOAuthSpec(client_id="c"))
    flow = AuthFlow(
        "orders", spec, None, outbox=outbox(MemoryAudit()), new_credentials=lambda: None
    )
    with pytest.raises(ServerRefusedError, match="oauth_unavailable"):
        await flow.open_options(QuestionDesk("orders"))
    assert str(flow.unavailable()) == "not_connected" and not flow.take_grant()


async def test_a_server_without_oauth_opens_with_the_desk_alone() -> None:
    flow = AuthFlow(
        "orders", SPEC, None, outbox=outbox(MemoryAudit()), new_credentials=lambda: None
    )
    desk = QuestionDesk("orders")
    options = await flow.open_options(desk)
    assert options.desk is desk and options.auth is None


# ------------------------------------------------------------------------------ supervisor


def supervisor(
    adapter: McpAdapter, clock: VirtualClock, audit: MemoryAudit
) -> tuple[Supervisor, Link, ToolRegistry, CircuitBreaker]:
    link = Link()
    box = outbox(audit, clock)
    tools = registry(link, clock, audit)
    breaker = CircuitBreaker(threshold=3, reset_s=5.0, monotonic=clock.monotonic)
    flow = AuthFlow("orders", SPEC, None, outbox=box, new_credentials=tools.credentials_changed)
    running = Supervisor(
        "orders",
        SPEC,
        link=link,
        registry=tools,
        auth=flow,
        breaker=breaker,
        desk=QuestionDesk("orders"),
        outbox=box,
        settings=GatewaySettings(reconnect_initial_s=0.2, reconnect_max_s=5.0),
        clock=clock,
        adapters=lambda spec: adapter,
    )
    return running, link, tools, breaker


async def test_the_supervisor_backs_off_after_a_failed_attempt_then_connects() -> None:
    clock, audit = VirtualClock(), MemoryAudit()
    adapter = FakeAdapter(OSError("refused"), FakeSession())
    running, link, tools, breaker = supervisor(adapter, clock, audit)
    async with anyio.create_task_group() as tg:
        await tg.start(running.run)  # ready after the first attempt, failed
        assert (link.state, running.attempts) == ("disconnected", 1)
        assert audit.kinds() == ["mcp.server_connect_failed"]
        with anyio.fail_after(5):
            await clock.waited_on()  # the backoff
            clock.advance(5.0)
            await tools.wait_listed(1)
        assert (link.state, running.attempts, breaker.state) == ("connected", 2, "closed")
        assert audit.kinds()[-1] == "mcp.server_connected"
        assert adapter.hooks is not None
        adapter.hooks.lost()  # the session broke: it ends, and the backoff starts again
        with anyio.fail_after(5):
            await clock.waited_on()
        assert audit.kinds()[-1] == "mcp.server_disconnected"
        assert link.state == "disconnected" and link.session is None
        tg.cancel_scope.cancel()
    assert link.state == "stopped"


async def test_a_server_that_refuses_the_revision_is_not_tried_again() -> None:
    clock, audit = VirtualClock(), MemoryAudit()
    adapter = FakeAdapter(ServerRefusedError("protocol_mismatch"))
    running, link, _, _ = supervisor(adapter, clock, audit)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            await tg.start(running.run)
    assert (link.state, running.attempts) == ("refused", 1)
    assert audit.events == [
        ("mcp.server_refused", {"server": "orders", "reason": "protocol_mismatch"})
    ]
