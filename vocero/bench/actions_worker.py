"""One process's share of ``vocero bench actions`` (:mod:`vocero.bench.actions`).

The process holds what a ``serve`` process holds on the action path: its own store connection,
a node lease renewed in the background (:mod:`vocero.store.leases`), an action plane whose
outbox rows are held under that node, its outbox worker and its MCP connection. Its lanes are
sessions of their own, one appointment each. Run as ``python -m vocero.bench.actions_worker
PLAN_JSON`` it reports ``ready``, then runs each phase (``latency``, ``sustained``) when told on
standard input and reports it as one JSON line on standard output.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from vocero.app.settings import REPO_ROOT
from vocero.contracts.actions import TurnRef
from vocero.contracts.domain import AgentProfile, Caller, McpServerSpec
from vocero.contracts.ports import ToolIntent
from vocero.contracts.secrets import Secret
from vocero.identity.profiles import load_profile
from vocero.mcp_gateway import McpConnections, McpGateway
from vocero.policy import ActionPlane, ExecutorSettings, SessionCoordinator
from vocero.store import Store
from vocero.store.leases import LeaseSettings, NodeLease
from vocero.store.repositories import Conversations

PROFILE = REPO_ROOT / "fixtures" / "profiles" / "demo.yaml"
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
WRITE_TOOL = "appointments.reschedule"
LEASE_TTL_S = 15.0
WARM_UPS = 3


class _NoAudit:
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        return None


def _profile(url: str) -> AgentProfile:
    demo = load_profile(PROFILE)
    tools = [t for t in demo.tools if t.server in ("appointments", "vocero")]
    return msgspec.structs.replace(demo, mcp_servers={"appointments": McpServerSpec(url=url)},
                                   tools=tools)


@dataclass
class _Rig:
    """What one process holds: its store connection, node lease, plane and MCP connection."""

    plane: ActionPlane
    profile: AgentProfile
    connections: McpConnections
    store: Store
    node: NodeLease


@asynccontextmanager
async def open_rig(db: str, url: str) -> AsyncIterator[_Rig]:
    store = Store.open(db)
    node = NodeLease(store, role="bench", settings=LeaseSettings(ttl_s=LEASE_TTL_S))
    profile = _profile(url)
    connections = McpConnections.from_profiles([profile], audit=_NoAudit())
    try:
        await node.register()
        async with connections.running(), anyio.create_task_group() as tg:
            await tg.start(node.run)
            plane = ActionPlane(store, executor_settings=ExecutorSettings(poll_interval_s=0.5),
                                owner=node.id, lease_ttl_s=LEASE_TTL_S)
            await tg.start(plane.run)
            yield _Rig(plane, profile, connections, store, node)
            await plane.drain(5)
            await node.release()
            tg.cancel_scope.cancel()
    finally:
        await store.close()


class _Lane:
    """One caller's session writing to one appointment, confirmation after confirmation."""

    def __init__(self, coordinator: SessionCoordinator, appointment: str) -> None:
        self.coordinator = coordinator
        self.appointment = appointment
        self.turn = 0
        self.failures: dict[str, int] = {}

    def _ref(self) -> TurnRef:
        self.turn += 1
        return TurnRef(session_id=self.coordinator.session_id, turn_id=f"turn_{self.turn}",
                       generation_id=f"gen_{self.turn}")

    async def list(self) -> None:
        plan = await self.coordinator.propose(self._ref(), ToolIntent(name="appointments.list",
                                                                      arguments={}))
        await self.coordinator.execute(plan, _ignore)

    async def write(self, index: int) -> float | None:
        """One confirmed reschedule; seconds from the "yes" to ``committed`` (None: failed)."""
        asked = self._ref()
        intent = ToolIntent(name=WRITE_TOOL, arguments={
            "appointment_id": self.appointment, "new_date": DAYS[index % len(DAYS)],
            "new_time": f"{9 + index % 8}:00"})
        question = await self.coordinator.propose(asked, intent)
        if question.kind != "confirm":
            return self._failed(question.reason_code)
        await self.coordinator.record_delivery(
            asked.generation_id, heard_text=question.summary, complete=True
        )
        started = time.perf_counter()
        verdict = await self.coordinator.submit_confirmation(
            self._ref(), question.proposal_id, question.revision, "confirm", source="speech")
        if verdict.plan is None:
            return self._failed(verdict.reason_code)
        outcome = await self.coordinator.execute(verdict.plan, _ignore)
        elapsed = time.perf_counter() - started
        return elapsed if outcome.status == "committed" else self._failed(outcome.reason_code)

    def _failed(self, reason: str) -> float | None:
        self.failures[reason or "unknown"] = self.failures.get(reason or "unknown", 0) + 1
        return None


def _ignore(*_: Any) -> None:
    return None


async def _lane(rig: _Rig, appointment: str) -> _Lane:
    number = uuid.uuid4().hex[:12]
    who = Caller(token=Secret(f"bench-{number}"), subject=f"bench-{number}", tenant="acme",
                 roles=["customer"], scopes=["appointments:read", "appointments:write"],
                 timezone="Europe/Madrid")
    session_id = f"ses_bench_{number}"
    await Conversations(rig.store, owner=rig.node.id, lease_ttl_s=LEASE_TTL_S).create_session(
        session_id=session_id, tenant_id=who.tenant, subject_ref=who.subject_ref,
        profile_id=rig.profile.id, profile_version=rig.profile.version)
    coordinator = rig.plane.coordinator(
        session_id=session_id, caller=who, profile=rig.profile,
        gateway=McpGateway(rig.connections, rig.profile, session_id=session_id))
    lane = _Lane(coordinator, appointment)
    await lane.list()
    return lane


class WorkerPlan(msgspec.Struct, frozen=True, kw_only=True):
    """One process's share of the bench (the JSON argument of a worker process)."""

    index: int = 0
    db: str
    mcp_url: str
    lanes: list[str]
    """The appointment of each sustained lane (one each, never shared)."""
    per_lane: int
    latency_appointment: str = ""
    """Set on the one process that measures the sequential "yes" -> committed samples."""
    iterations: int = 0


class Driver:
    """One process's lanes: the sequential samples (if its plan says so), then the sustained
    run, each lane writing ``per_lane`` times."""

    def __init__(self, rig: _Rig, plan: WorkerPlan) -> None:
        self.rig = rig
        self.plan = plan
        self.lanes: list[_Lane] = []
        self.timed: _Lane | None = None

    async def open(self) -> dict[str, Any]:
        """Every lane's session listed once, the first sustained lane warmed up."""
        if self.plan.latency_appointment:
            self.timed = await _lane(self.rig, self.plan.latency_appointment)
        self.lanes = [await _lane(self.rig, apt) for apt in self.plan.lanes]
        for warm in range(WARM_UPS if self.lanes else 0):
            await self.lanes[0].write(warm)
        return {"phase": "ready", "node": self.rig.node.id, "pid": os.getpid()}

    async def latency(self) -> dict[str, Any]:
        samples: list[float | None] = []
        if self.timed is not None:
            for warm in range(WARM_UPS):
                await self.timed.write(warm)
            samples = [await self.timed.write(i) for i in range(self.plan.iterations)]
        return {"phase": "latency", "samples_ms": [s * 1000 for s in samples if s is not None]}

    async def sustained(self) -> dict[str, Any]:
        results: list[float | None] = []

        async def drive(each: _Lane) -> None:
            for i in range(self.plan.per_lane):
                results.append(await each.write(i))

        started, cpu = time.time(), time.process_time()
        async with anyio.create_task_group() as tg:
            for each in self.lanes:
                tg.start_soon(drive, each)
        ended, cpu = time.time(), time.process_time() - cpu
        failures: Counter[str] = Counter()
        for each in (*([self.timed] if self.timed else []), *self.lanes):
            failures.update(each.failures)
        return {"phase": "sustained", "started": started, "ended": ended,
                "operations": len(results),
                "samples_ms": [r * 1000 for r in results if r is not None],
                "sessions": self.sessions(), "failures": dict(failures),
                "node": self.rig.node.id, "cpu_s": round(cpu, 3)}

    def sessions(self) -> list[str]:
        return [each.coordinator.session_id for each in
                (*([self.timed] if self.timed else []), *self.lanes)]


async def worker_main(plan: WorkerPlan) -> None:
    """A worker process: report ready, then run each phase when told on standard input."""
    async with open_rig(plan.db, plan.mcp_url) as rig:
        driver = Driver(rig, plan)
        _say(await driver.open())
        for phase in ("latency", "sustained"):
            command = (await anyio.to_thread.run_sync(sys.stdin.readline)).strip()
            if command != phase:
                raise RuntimeError(f"expected {phase!r} on standard input, got {command!r}")
            _say(await (driver.latency() if phase == "latency" else driver.sustained()))


def _say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------- N processes



def main(argv: Sequence[str] | None = None) -> int:
    """``python -m vocero.bench.actions_worker PLAN_JSON``: one process of the bench."""
    from vocero.observability.logging import configure_logging

    configure_logging("console", "warning", route_stdlib=True)  # logs to standard error
    [raw] = list(sys.argv[1:] if argv is None else argv)
    anyio.run(worker_main, msgspec.json.decode(raw, type=WorkerPlan))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
