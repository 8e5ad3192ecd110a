"""Issue 42: a caller asking for what only a prohibited tool does hears that we cannot help, and
nothing reaches the server.

A real session with the real action path (coordinator, store, outbox worker) in-process on the
CPU dialogue path (the routed runner; its engine is never asked to chat), its tool behind a
:class:`FakeToolGateway` that records what reached the server, on a profile the code has never
seen: ``bookings.shift`` is offered; ``bookings.refund`` (server tool ``refund_booking``) is
``prohibited``, so it is never offered, and the orchestrator sends it with every model request as
material only (``LlmRequest.refused``). The control is the same session on the same profile
without the prohibited tool: there the same line is taken for the offered tool.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import msgspec
import pytest

from tests.orchestrator.test_consent_conversation import (
    SHIFT,
    SPEC,
    Booking,
    ConfirmingEngine,
    answered,
    cpu_runners,
    shifted,
)
from tests.support.fakes import FakeToolGateway
from tests.support.harness import profile, running
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import Caller, ToolSpec
from vocero.policy import ActionPlane, ExecutorSettings
from vocero.store import Store
from vocero.store.repositories import Conversations

pytestmark = pytest.mark.anyio

REFUND = msgspec.structs.replace(
    SPEC, name="bookings.refund", resolves_to="refund_booking", action_class="prohibited",
    requires_confirmation=False,
)  # fmt: skip
LINE = "please refund booking BK-101"
SORRY = "Sorry, I can't help with that here."


@asynccontextmanager
async def session(db_path: Path, tools: list[ToolSpec]) -> AsyncIterator[Booking]:
    """One call on the CPU dialogue path to a profile of ``tools``; only ``bookings.shift`` is
    served."""
    store = Store.open(f"sqlite+aiosqlite:///{db_path}")
    prof = profile(tools=tools, word_budget=80)
    who = Caller(token="t", subject=f"s-{uuid.uuid4().hex}", tenant="acme", roles=["member"],
                 scopes=["bookings:write"], timezone="Europe/Lisbon")
    session_id = f"ses_{uuid.uuid4().hex[:16]}"
    gateway = FakeToolGateway([SHIFT], {"bookings.shift": shifted})
    await Conversations(store).create_session(
        session_id=session_id, tenant_id=who.tenant, subject_ref=who.subject_ref,
        profile_id=prof.id, profile_version=prof.version)
    plane = ActionPlane(
        store, clock=VirtualClock(start=time.time()), profiles=lambda _i, _v: prof,
        gateway_for=lambda _p: gateway, executor_settings=ExecutorSettings(poll_interval_s=0.05),
    )
    coordinator = plane.coordinator(session_id=session_id, caller=who, profile=prof,
                                    gateway=gateway)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(plane.run)
            async with running(cpu_runners(ConfirmingEngine()), prof=prof,
                               coordinator=coordinator, caller=who, tools=(SHIFT,),
                               session_id=session_id) as h:
                yield Booking(h, gateway, plane, session_id)
            coordinator.close()
            tg.cancel_scope.cancel()
    finally:
        await store.close()


async def test_a_request_only_a_prohibited_tool_serves_is_refused_and_nothing_is_sent(
    db_path: Path,
) -> None:
    async with session(db_path, [SPEC, REFUND]) as b:
        said = await answered(b, LINE)
        assert said.startswith(SORRY), said
        assert b.gateway.requests == [], "nothing reached the server"
        assert await b.authorised() == []
        assert b.h.received.of("ConfirmationRequired") == []
        asked = await answered(b, "I need to move booking BK-101")
        assert asked.endswith("?") and not asked.startswith(SORRY), "the offered tool still is"


async def test_without_the_prohibited_tool_the_same_line_is_taken_for_the_offered_one(
    db_path: Path,
) -> None:
    """The control: a profile that lists no prohibited tool takes the line for its own tool
    (it asks for the new time: still nothing sent)."""
    async with session(db_path, [SPEC]) as b:
        said = await answered(b, LINE)
        assert said.endswith("?") and not said.startswith(SORRY), said
        assert b.gateway.requests == []
