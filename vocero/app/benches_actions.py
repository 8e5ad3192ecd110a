"""``vocero bench actions``: confirmed writes end to end through the outbox (issue #4).

A real store (a fresh SQLite file), the real MCP gateway and the fixture appointments server over
streamable HTTP (its own process), the per-session coordinator and the outbox worker. Each sample
is one confirmed reschedule: the caller's "yes" is submitted, the final gate authorizes the
operation and its outbox row, the worker dispatches it with its operation id and records the
owning service's receipt. Figures:

* ``confirm_to_committed_ms``: ``submit_confirmation`` called -> ``committed`` recorded
  (``--iterations`` samples, one session, sequential).
* ``sustained``: committed operations per second with two sessions writing at once, one per
  fixture appointment (``--n`` operations each; the fixture has only two appointments and
  concurrent writes to one appointment would be refused as stale versions, by design).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
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
from vocero.store import Store, upgrade_async
from vocero.store.repositories import Conversations

SERVER = REPO_ROOT / "fixtures" / "mcp_servers" / "appointments_server.py"
PROFILE = REPO_ROOT / "fixtures" / "profiles" / "demo.yaml"
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday")


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    if not ordered:
        return {"n": 0}

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"n": len(ordered), "p50": pick(0.50), "p95": pick(0.95),
            "max": round(ordered[-1], 3), "mean": round(statistics.fmean(ordered), 3)}


class _NoAudit:
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        return None


@contextmanager
def _appointments_server(folder: Path) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "VOCERO_MCP_STATE": str(folder / "appointments.json")}
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--transport", "http", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the appointments fixture server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()


def _profile(url: str) -> AgentProfile:
    demo = load_profile(PROFILE)
    tools = [t for t in demo.tools if t.server in ("appointments", "vocero")]
    return msgspec.structs.replace(demo, mcp_servers={"appointments": McpServerSpec(url=url)},
                                   tools=tools)


@asynccontextmanager
async def _plane(folder: Path, url: str) -> AsyncIterator[tuple[ActionPlane, AgentProfile,
                                                                 McpConnections, Store]]:
    db = f"sqlite+aiosqlite:///{folder / 'bench.db'}"
    await upgrade_async(db)
    store = Store.open(db)
    profile = _profile(url)
    connections = McpConnections.from_profiles([profile], audit=_NoAudit())
    try:
        async with connections.running(), anyio.create_task_group() as tg:
            plane = ActionPlane(store, executor_settings=ExecutorSettings(poll_interval_s=0.5))
            await tg.start(plane.run)
            yield plane, profile, connections, store
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
        intent = ToolIntent(name="appointments.reschedule", arguments={
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


async def _lane(plane: ActionPlane, store: Store, profile: AgentProfile, connections:
                McpConnections, appointment: str, number: int) -> _Lane:
    who = Caller(token=Secret(f"bench-{number}"), subject=f"bench-{number}", tenant="acme",
                 roles=["customer"], scopes=["appointments:read", "appointments:write"],
                 timezone="Europe/Madrid")
    session_id = f"ses_bench_{number}_{time.monotonic_ns()}"
    await Conversations(store).create_session(
        session_id=session_id, tenant_id=who.tenant, subject_ref=who.subject_ref,
        profile_id=profile.id, profile_version=profile.version)
    coordinator = plane.coordinator(session_id=session_id, caller=who, profile=profile,
                                    gateway=McpGateway(connections, profile,
                                                       session_id=session_id))
    lane = _Lane(coordinator, appointment)
    await lane.list()
    return lane


async def actions(args: argparse.Namespace) -> dict[str, Any]:
    iterations = max(1, int(getattr(args, "iterations", 200)))
    per_lane = max(1, int(getattr(args, "n", 50)))
    with tempfile.TemporaryDirectory(prefix="vocero-bench-actions-") as tmp:
        folder = Path(tmp)
        with _appointments_server(folder) as url:
            async with _plane(folder, url) as (plane, profile, connections, store):
                lane = await _lane(plane, store, profile, connections, "APT-1001", 0)
                for warm in range(3):
                    await lane.write(warm)
                samples = [await lane.write(i) for i in range(iterations)]
                latencies = [s * 1000 for s in samples if s is not None]

                lanes = [await _lane(plane, store, profile, connections, apt, number)
                         for number, apt in enumerate(("APT-1001", "APT-1002"), start=1)]
                results: list[float | None] = []

                async def drive(each: _Lane) -> None:
                    for i in range(per_lane):
                        results.append(await each.write(i))

                started = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    for each in lanes:
                        tg.start_soon(drive, each)
                wall = time.perf_counter() - started
    committed = sum(1 for r in results if r is not None)
    failures: dict[str, int] = {}
    for each in (lane, *lanes):
        for reason, count in each.failures.items():
            failures[reason] = failures.get(reason, 0) + count
    return {
        "bench": "actions",
        "store": "sqlite (WAL)",
        "transport": "streamable-http, fixture appointments server",
        "confirm_to_committed_ms": percentiles(latencies),
        "sustained": {
            "lanes": len(lanes), "operations": len(results), "committed": committed,
            "seconds": round(wall, 3), "ops_per_s": round(committed / wall, 2) if wall else 0.0,
        },
        "failures": failures,
    }
