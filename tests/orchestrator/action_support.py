"""A real session with the real action path (coordinator, store, outbox worker) in-process, its
tools behind a :class:`FakeToolGateway` that records every request (what reached the server)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from tests.support.fakes import FakeToolGateway, ToolAnswer, fake_runners
from tests.support.harness import Harness, profile, running
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import AgentProfile, Caller, RequiredStep, ToolDefinition, ToolSpec
from vocero.contracts.ports import ToolCallRequest, ToolResult
from vocero.inference.sim.script import Rule
from vocero.policy import ActionPlane, CoordinatorSettings, ExecutorSettings
from vocero.store import Store
from vocero.store.repositories import Conversations

RESCHEDULE = ToolDefinition(
    name="appointments.reschedule",
    description="Move an appointment.",
    input_schema={
        "type": "object",
        "properties": {
            "appointment_id": {"type": "string", "pattern": r"^APT-[0-9]+$"},
            "new_date": {"type": "string", "format": "date"},
            "new_time": {"type": "string"},
            "timezone": {"type": "string"},
        },
        "required": ["appointment_id", "new_date", "new_time", "timezone"],
    },
)
OPENING = ToolDefinition(
    name="store.hours", description="Opening hours.",
    input_schema={"type": "object", "properties": {}},
)
TOOLS = [
    ToolSpec(name="appointments.reschedule", server="appointments",
             resolves_to="reschedule_appointment", action_class="reversible_write",
             requires_confirmation=True, required_scopes=["appointments:write"],
             readback="move your appointment {appointment_id} to {when}"),
    ToolSpec(name="store.hours", server="store", resolves_to="opening_hours",
             action_class="read"),
]
RULES = [
    Rule(match=r"move (?P<apt>APT-\d+) to (?P<day>\w+) at (?P<at>\d+ ?[ap]m)",
         tool="appointments.reschedule",
         arguments={"appointment_id": "{apt}", "new_date": "{day}", "new_time": "{at}"},
         reply="{result.summary}"),
    Rule(match=r"^(yes|yeah|go ahead)\b", intent="confirm"),
    Rule(match=r"^(no|nope|don't)\b", intent="reject"),
    Rule(match=r"^i think so", intent="uncertain"),
    Rule(match=r"^(yes|yeah|go ahead)\b", tool="appointments.reschedule",
         reply="{result.summary}"),
    Rule(match=r"opening hours", tool="store.hours", reply="We open at {result.opens}."),
    Rule(match=r".*", reply="I can help with appointments."),
]


def rescheduled(request: ToolCallRequest) -> ToolResult:
    return ToolResult(content={"status": "rescheduled", **request.arguments})


@dataclass
class Call:
    h: Harness
    gateway: FakeToolGateway
    plane: ActionPlane
    store: Store
    caller: Caller
    session_id: str

    def reschedules(self) -> list[ToolCallRequest]:
        return self.gateway.calls("appointments.reschedule")

    def questions(self) -> list[Any]:
        return self.h.received.of("ConfirmationRequired")

    def spoken_since(self, mark: int) -> str:
        return "".join(p.text for n, p in self.h.received.frames[mark:] if n == "TextDelta")

    async def operations(self) -> list[dict[str, Any]]:
        return await self.plane.operations(self.session_id)


@asynccontextmanager
async def call(
    db_path: Path,
    *,
    run_worker: bool = True,
    settings: CoordinatorSettings | None = None,
    ms_per_char: float = 10.0,
    required_steps: tuple[RequiredStep, ...] = (),
    extra_tools: tuple[tuple[ToolSpec, ToolDefinition, ToolAnswer], ...] = (),
    rules: list[Rule] | None = None,
    stt: list[str] | None = None,
) -> AsyncIterator[Call]:
    """``required_steps`` are the profile's (ADR-0030); ``extra_tools`` more profile tools, each
    with its server definition and what the (fake) server answers; ``rules`` the model's script
    (default :data:`RULES`); ``stt`` what the recogniser hears, turn by turn."""
    store = Store.open(f"sqlite+aiosqlite:///{db_path}")
    prof: AgentProfile = profile(tools=[*TOOLS, *(t for t, _, _ in extra_tools)], word_budget=80,
                                 required_steps=list(required_steps))
    definitions = [RESCHEDULE, OPENING, *(d for _, d, _ in extra_tools)]
    who = Caller(token="t", subject=f"s-{uuid.uuid4().hex}", tenant="acme", roles=["customer"],
                 scopes=["appointments:write"], timezone="Europe/Madrid")
    session_id = f"ses_{uuid.uuid4().hex[:16]}"
    gateway = FakeToolGateway(
        definitions,
        {"appointments.reschedule": rescheduled,
         "store.hours": ToolResult(content={"opens": "nine"}),
         **{t.name: answer for t, _, answer in extra_tools}},
    )
    await Conversations(store).create_session(
        session_id=session_id, tenant_id=who.tenant, subject_ref=who.subject_ref,
        profile_id=prof.id, profile_version=prof.version)
    plane = ActionPlane(
        store, clock=VirtualClock(start=time.time()), profiles=lambda _i, _v: prof,
        gateway_for=lambda _p: gateway,
        executor_settings=ExecutorSettings(poll_interval_s=0.05), settings=settings,
    )
    coordinator = plane.coordinator(session_id=session_id, caller=who, profile=prof,
                                    gateway=gateway)
    runners, *_ = fake_runners(stt=stt, rules=RULES if rules is None else rules,
                               ms_per_char=ms_per_char)
    try:
        async with anyio.create_task_group() as tg:
            if run_worker:
                await tg.start(plane.run)
            async with running(runners, prof=prof, coordinator=coordinator, caller=who,
                               tools=tuple(definitions), session_id=session_id) as h:
                yield Call(h, gateway, plane, store, who, session_id)
            coordinator.close()
            tg.cancel_scope.cancel()
    finally:
        await store.close()
