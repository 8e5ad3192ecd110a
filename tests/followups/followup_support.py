"""Helpers of the follow-up tests: the fixture call server (HTTP, recording what it received),
a profile pointed at it, callers with subjects and phone numbers of their own, a migrated store
and the follow-up plane wired to a real action plane on a virtual clock."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import msgspec

from tests.support.servers import RecordingServer
from vocero.app.adapters.followups import builtin_tools, followup_services
from vocero.contracts.builtins import BuiltinSet, BuiltinTools
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import AgentProfile, Caller, FollowupSettings, McpServerSpec
from vocero.contracts.ports import Message
from vocero.followups import FollowupQueue, QueueSettings, TickOutcome
from vocero.followups.ports import Hook
from vocero.followups.records import Followup, FollowupDraft, new_id
from vocero.identity.profiles import load_profile
from vocero.mcp_gateway import McpConnections, McpGateway
from vocero.policy import ActionPlane, ExecutorSettings
from vocero.policy.ports import StepHook
from vocero.store import Store
from vocero.store.leases import NodeLease
from vocero.store.repositories import Conversations

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "fixtures" / "profiles" / "demo.yaml"
SCOPES = ["orders:read", "appointments:read", "followups:write"]
START = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
"""Thursday 3 December 2026, 09:00 in Madrid."""


def heard(*lines: tuple[str, str]) -> list[Message]:
    """A conversation as heard: ``("user", ...)``, ``("assistant", ...)`` pairs."""
    return [Message(role=role, content=text) for role, text in lines]  # type: ignore[arg-type]


# ---------------------------------------------------------------------- the call server


@dataclass
class CallsServer(RecordingServer):
    """``fixtures/mcp_servers/calls_server.py`` over HTTP, recording every tools/call."""

    name = "calls"

    @property
    def busy(self) -> Path:
        return self.folder / "not_ready"

    def start(self) -> None:
        self.busy.mkdir(parents=True, exist_ok=True)
        self.spawn({"VOCERO_CALLS_NOT_READY": str(self.busy)})

    def line_busy(self, phone: str, answers: int = 1) -> None:
        """The next ``answers`` calls to ``phone`` answer ``line_not_ready``."""
        (self.busy / "".join(c for c in phone if c.isdigit())).write_text(str(answers))

    def received(self, subject_ref: str, tool: str = "place_call") -> list[dict[str, Any]]:
        """Every tools/call of ``tool`` the server received for this caller."""
        if not self.record.exists():
            return []
        lines = [json.loads(x) for x in self.record.read_text().splitlines() if x.strip()]
        return [x for x in lines if x["tool"] == tool and (x.get("meta") or {}).get(
            "io.vocero/principal", {}).get("subject_ref") == subject_ref]

    def placed(self, subject_ref: str) -> list[dict[str, Any]]:
        """Calls the server actually placed (rang) for this caller."""
        if not self.state.exists():
            return []
        calls: list[dict[str, Any]] = json.loads(self.state.read_text()).get("calls", [])
        return [c for c in calls if c["subject_ref"] == subject_ref]


@contextmanager
def calls_server(folder: Path) -> Iterator[CallsServer]:
    server = CallsServer(folder)
    try:
        server.start()
        yield server
    finally:
        server.stop()


# ------------------------------------------------------------------------ profile, callers


def queue_profile(url: str, **followups: Any) -> AgentProfile:
    """The demo profile's follow-up parts (``followups.record``, ``calls.place``, its
    ``followups`` block) with the call server at ``url``."""
    demo = load_profile(DEMO)
    tools = [t for t in demo.tools if t.server in ("vocero", "calls")
             and t.resolves_to != "knowledge.search"]
    settings = msgspec.structs.replace(demo.followups, **followups) if followups \
        else demo.followups
    return msgspec.structs.replace(demo, tools=tools, mcp_servers={"calls": McpServerSpec(
        url=url)}, followups=settings)


def person(*, tenant: str = "acme", timezone: str = "Europe/Madrid",
           scopes: Sequence[str] = SCOPES, phone: str | None = None) -> Caller:
    """A caller with a subject and phone number of its own."""
    digits = str(uuid.uuid4().int)[:9]
    return Caller(token=f"tok-{uuid.uuid4().hex[:12]}", subject=f"sub-{uuid.uuid4().hex}",
                  tenant=tenant, roles=["customer"], scopes=list(scopes), timezone=timezone,
                  phone=f"+34{digits}" if phone is None else phone)


class People:
    """A :class:`~vocero.followups.ports.Directory` of test callers."""

    def __init__(self, *callers: Caller) -> None:
        self._by = {(c.tenant, c.subject_ref): c for c in callers}

    def add(self, caller: Caller) -> Caller:
        self._by[(caller.tenant, caller.subject_ref)] = caller
        return caller

    def forget(self, caller: Caller) -> None:
        self._by.pop((caller.tenant, caller.subject_ref), None)

    def caller(self, tenant: str, subject_ref: str) -> Caller | None:
        return self._by.get((tenant, subject_ref))


# ------------------------------------------------------------------------ the wired plane


@dataclass
class Plant:
    """The follow-up plane on a real action plane, gateway and call server."""

    store: Store
    clock: Any
    plane: ActionPlane
    queue: FollowupQueue
    people: People
    profile: AgentProfile
    server: CallsServer
    services: Any
    connections: McpConnections

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), UTC)

    async def promise(self, who: Caller, *, due_at: datetime, reason: str = "the invoice",
                      when: str = "tomorrow at 4", channel: str = "phone") -> Followup:
        """A follow-up recorded in a session of ``who`` under the plant's profile."""
        self.people.add(who)
        session_id = new_id("ses")
        await Conversations(self.store).create_session(
            session_id=session_id, tenant_id=who.tenant, subject_ref=who.subject_ref,
            profile_id=self.profile.id, profile_version=self.profile.version)
        record, duplicate = await self.services.store.record(FollowupDraft(
            session_id=session_id, tenant_id=who.tenant, subject_ref=who.subject_ref,
            when_text=when, due_at=due_at, timezone=who.timezone,
            channel=channel,  # type: ignore[arg-type]
            reason=reason, operation_id=new_id("op")), self.now())
        assert not duplicate
        return record  # type: ignore[no-any-return]

    async def tick(self) -> list[TickOutcome]:
        return await self.queue.tick(self.now())

    async def get(self, followup_id: str) -> Followup:
        found = await self.services.store.get(followup_id)
        assert found is not None
        return found  # type: ignore[no-any-return]


@asynccontextmanager
async def plant(
    db_url: str, server: CallsServer, *, profile: AgentProfile | None = None,
    settings: QueueSettings | None = None, start: datetime = START, clock: Any = None,
    people: People | None = None, hook: Hook | None = None, step_hook: StepHook | None = None,
    node: bool = False, builtins: Callable[[Any], Sequence[BuiltinTools]] = lambda _s: (),
) -> AsyncIterator[Plant]:
    """The wired plane; ``node``: as a process of its own on the store (a registered node with
    its heartbeat: what it holds is taken over at once once it is killed)."""
    profile = profile or queue_profile(server.url)
    store = Store.open(db_url)
    clock = clock or VirtualClock(start=start.timestamp())
    people = people or People()
    services = followup_services(store, clock, Conversations(store, clock=clock))
    connections = McpConnections.from_profiles([profile], audit=_NullAudit())
    lease = NodeLease(store, role="test") if node else None
    try:
        if lease is not None:
            await lease.register()
        async with connections.running(), anyio.create_task_group() as tg:
            if lease is not None:
                await tg.start(lease.run)
            plane = ActionPlane(
                store, clock=clock,
                builtins=BuiltinSet(builtin_tools(services), *builtins(services)),
                profiles=lambda _id, _version: profile,
                gateway_for=lambda p: McpGateway(connections, p), hook=step_hook,
                executor_settings=ExecutorSettings(poll_interval_s=0.2, reconcile_delay_s=0.05),
                owner=lease.id if lease is not None else "")
            queue = services.attach_queue(
                plane, profiles=lambda _id, _version: profile, directory=people,
                settings=settings or QueueSettings(settle_wait_s=10.0), hook=hook, lease=lease)
            await tg.start(plane.run)
            yield Plant(store, clock, plane, queue, people, profile, server, services,
                        connections)
            tg.cancel_scope.cancel()
    finally:
        await store.close()


class _NullAudit:
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        return None


def settings_without(**changes: Any) -> FollowupSettings:
    return msgspec.structs.replace(FollowupSettings(call_tool="calls.place"), **changes)
