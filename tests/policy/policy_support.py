"""Helpers of the action-path tests: the fixture MCP servers (run once, over HTTP, recording
every call), the demo profile pointed at them, a real gateway, a migrated store, and a small
scripted conversation driver for the coordinator."""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import msgspec

from tests.support.servers import ServerProcess, free_port
from vocero.contracts.actions import ConfirmationVerdict, ToolOutcome, ToolPlan, TurnRef
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import AgentProfile, Caller, McpServerSpec, ToolSpec
from vocero.contracts.errors import ToolTimeoutError
from vocero.contracts.events import ToolStatus
from vocero.contracts.ports import (
    CallMeta,
    Clock,
    ToolCallRequest,
    ToolGateway,
    ToolIntent,
    ToolResult,
)
from vocero.identity.profiles import load_profile
from vocero.mcp_gateway import McpConnections, McpGateway
from vocero.policy import ActionPlane, CoordinatorSettings, ExecutorSettings
from vocero.policy.coordinator import SessionCoordinator
from vocero.store import Store
from vocero.store.repositories import Conversations

REPO = Path(__file__).resolve().parents[2]
SERVERS = REPO / "fixtures" / "mcp_servers"
DEMO_PROFILE = REPO / "fixtures" / "profiles" / "demo.yaml"
SCRIPTS = {"orders": "orders_server.py", "appointments": "appointments_server.py",
           "admin": "admin_server.py", "calls": "calls_server.py"}
ALL_SCOPES = ["orders:read", "appointments:read", "appointments:write", "appointments:cancel",
              "followups:write"]


# ---------------------------------------------------------------------------- MCP servers


@dataclass
class FixtureServers:
    """The three fixture servers, each its own process on a fixed port, recording every
    ``tools/call`` and keeping its state (receipts) in a file the tests can read."""

    folder: Path
    ports: dict[str, int] = field(default_factory=dict)
    processes: dict[str, ServerProcess] = field(default_factory=dict)

    def record(self, name: str) -> Path:
        return self.folder / f"{name}.jsonl"

    def state(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}/mcp"

    def start(self) -> None:
        for name, script in SCRIPTS.items():
            port = self.ports.setdefault(name, free_port())
            env = {"VOCERO_MCP_RECORD": str(self.record(name)),
                   "VOCERO_MCP_STATE": str(self.state(name))}
            self.processes[name] = ServerProcess(
                f"{name} server", [sys.executable, str(SERVERS / script), "--transport", "http",
                                   "--port", str(port)], port=port, env=env).spawn()
        for process in self.processes.values():
            process.wait_ready(timeout_s=30)

    def stop(self) -> None:
        for process in self.processes.values():
            process.stop(grace_s=0)
        self.processes.clear()

    # -------------------------------------------------------------------- observations

    def calls(self, name: str, subject_ref: str, tool: str | None = None) -> list[dict[str, Any]]:
        """Every tools/call the server received for this caller (optionally of one tool)."""
        path = self.record(name)
        if not path.exists():
            return []
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [
            line for line in lines
            if (line.get("meta") or {}).get("io.vocero/principal", {}).get("subject_ref")
            == subject_ref and (tool is None or line["tool"] == tool)
        ]

    def receipts(self, name: str, operation_ids: set[str]) -> dict[str, Any]:
        """The owning service's committed effects of these operations."""
        path = self.state(name)
        if not path.exists():
            return {}
        known: dict[str, Any] = json.loads(path.read_text()).get("receipts", {})
        return {k: v for k, v in known.items() if k in operation_ids}


@contextmanager
def fixture_servers(folder: Path) -> Iterator[FixtureServers]:
    servers = FixtureServers(folder)
    try:
        servers.start()
        yield servers
    finally:
        servers.stop()


def demo_profile(servers: FixtureServers, *extra: ToolSpec) -> AgentProfile:
    """fixtures/profiles/demo.yaml with its MCP servers pointed at the running fixtures."""
    profile = load_profile(DEMO_PROFILE)
    specs = {name: McpServerSpec(url=servers.url(name)) for name in SCRIPTS}
    return msgspec.structs.replace(profile, mcp_servers=specs,
                                   tools=[*profile.tools, *extra])


@asynccontextmanager
async def connected(profile: AgentProfile) -> AsyncIterator[McpConnections]:
    connections = McpConnections.from_profiles([profile], audit=NullAudit())
    async with connections.running():
        yield connections


class NullAudit:
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        return None


def caller(*, scopes: list[str] | None = None, tenant: str = "acme",
           timezone: str = "Europe/Madrid") -> Caller:
    """A caller with a subject of its own, so a test can pick its calls out of the records."""
    return Caller(token=f"tok-{uuid.uuid4().hex[:8]}", subject=f"subject-{uuid.uuid4().hex}",
                  tenant=tenant, roles=["customer"],
                  scopes=ALL_SCOPES if scopes is None else scopes, timezone=timezone)


# ----------------------------------------------------------------------------- gateways


class CommitThenTimeout:
    """The owning service commits, then the answer is lost: the gateway raises a timeout
    (``possibly_executed``) for the first ``failures`` calls of ``tool``."""

    def __init__(self, inner: McpGateway, tool: str, failures: int = 1) -> None:
        self.inner = inner
        self.tool = tool
        self.failures = failures
        self.lookups = 0

    def definitions(self) -> Any:
        return self.inner.definitions()

    async def call(self, request: ToolCallRequest) -> ToolResult:
        result = await self.inner.call(request)
        if request.tool == self.tool and self.failures > 0:
            self.failures -= 1
            raise ToolTimeoutError("timeout_after_send")
        return result

    async def lookup(self, tool: str, meta: CallMeta) -> ToolResult:
        self.lookups += 1
        return await self.inner.lookup(tool, meta)


class BrokenDefinitions:
    """Policy data that cannot be read: the tool definitions raise."""

    def __init__(self, inner: McpGateway) -> None:
        self.inner = inner

    def definitions(self) -> Any:
        raise ConnectionError("pin repository unreachable")

    async def call(self, request: ToolCallRequest) -> ToolResult:
        return await self.inner.call(request)


# ---------------------------------------------------------------------------------- store


async def open_session_row(
    store: Store, session_id: str, who: Caller, profile: AgentProfile
) -> None:
    await Conversations(store).create_session(
        session_id=session_id, tenant_id=who.tenant, subject_ref=who.subject_ref,
        profile_id=profile.id, profile_version=profile.version)


# ------------------------------------------------------------------------- conversation


@dataclass
class Talk:
    """Drives one coordinator the way the orchestrator does, turn by turn."""

    coordinator: SessionCoordinator
    statuses: list[tuple[str, ToolStatus, str]] = field(default_factory=list)
    turns: int = 0
    spoken: dict[str, str] = field(default_factory=dict)
    """What each generation said (a proposal's read-back), so that "played to its end" reports
    the words the caller heard, as the orchestrator does."""

    def next_turn(self, generation_id: str = "") -> TurnRef:
        self.turns += 1
        return TurnRef(session_id=self.coordinator.session_id, turn_id=f"turn_{self.turns}",
                       generation_id=generation_id or f"gen_{self.turns}")

    async def propose(self, tool: str, **arguments: Any) -> tuple[ToolPlan, str]:
        turn = self.next_turn()
        plan = await self.coordinator.propose(turn, ToolIntent(name=tool, arguments=arguments))
        self.spoken[turn.generation_id] = plan.summary
        return plan, turn.generation_id

    async def heard(self, generation_id: str, delivered: bool = True, heard: str = "") -> None:
        """Playout evidence: the generation played to its end (the caller heard all it said), or
        only ``heard`` of it."""
        if delivered and not heard:
            asked = self.coordinator.active_question()
            heard = self.spoken.get(generation_id) or (asked.summary if asked else "")
        await self.coordinator.record_delivery(
            generation_id, heard_text=heard, complete=delivered
        )

    async def answer(self, decision: str, *, source: str = "speech",
                     question: ToolPlan | None = None) -> ConfirmationVerdict:
        asked = question or self.coordinator.active_question()
        assert asked is not None, "no question to answer"
        turn = self.next_turn() if source == "speech" else None
        return await self.coordinator.submit_confirmation(
            turn, asked.proposal_id, asked.revision, decision,  # type: ignore[arg-type]
            source=source)  # type: ignore[arg-type]

    def on_status(self, tool_call_id: str, proposal_id: str, status: ToolStatus,
                  reason: str) -> None:
        self.statuses.append((tool_call_id, status, reason))

    async def execute(self, plan: ToolPlan) -> ToolOutcome:
        return await self.coordinator.execute(plan, self.on_status)

    def status_names(self) -> list[str]:
        return [status for _, status, _ in self.statuses]


@dataclass
class Harness:
    store: Store
    plane: ActionPlane
    connections: McpConnections
    profile: AgentProfile
    servers: FixtureServers
    clock: Clock

    def gateway(self, session_id: str) -> McpGateway:
        return McpGateway(self.connections, self.profile, session_id=session_id)

    async def talk(self, who: Caller | None = None, *, gateway: Any = "mcp",
                   session_id: str = "") -> tuple[Talk, Caller]:
        who = who or caller()
        session_id = session_id or f"ses_{who.subject_ref[4:20]}"
        await open_session_row(self.store, session_id, who, self.profile)
        chosen: ToolGateway | None = self.gateway(session_id) if gateway == "mcp" else gateway
        coordinator = self.plane.coordinator(session_id=session_id, caller=who,
                                             profile=self.profile, gateway=chosen)
        return Talk(coordinator), who


@asynccontextmanager
async def harness(
    db_url: str,
    servers: FixtureServers,
    *extra: ToolSpec,
    clock: Clock | None = None,
    executor: ExecutorSettings | None = None,
    settings: CoordinatorSettings | None = None,
    run_worker: bool = True,
) -> AsyncIterator[Harness]:
    profile = demo_profile(servers, *extra)
    store = Store.open(db_url)
    clock = clock or VirtualClock(start=time.time())
    try:
        async with connected(profile) as connections, anyio.create_task_group() as tg:
            plane = ActionPlane(
                store, clock=clock, profiles=lambda _id, _version: profile,
                gateway_for=lambda p: McpGateway(connections, p),
                executor_settings=executor or ExecutorSettings(poll_interval_s=0.2,
                                                               reconcile_delay_s=0.05),
                settings=settings,
            )
            if run_worker:
                await tg.start(plane.run)
            yield Harness(store, plane, connections, profile, servers, clock)
            tg.cancel_scope.cancel()
    finally:
        await store.close()

