"""Drive a real orchestrator Session in-process, without a socket, on scripted runners."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec

from vocero.contracts import events as ev
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import (
    DEFAULT_VOICE,
    AgentProfile,
    Caller,
    ProfileMatch,
    ToolDefinition,
)
from vocero.inference.runner_set import RunnerSet
from vocero.orchestrator.context import SessionContext, Timeouts
from vocero.orchestrator.drafts import RecoverySettings
from vocero.orchestrator.false_interruptions import ResumeSettings
from vocero.orchestrator.output import OutFrame, OutputChannel
from vocero.orchestrator.session import Session

CALLER = Caller(
    token="t", subject="alice", tenant="acme", roles=["customer"], scopes=["orders:read"]
)


def profile(**overrides: Any) -> AgentProfile:
    base = AgentProfile(id="demo", version="1", match=ProfileMatch(tenant="acme"))
    return msgspec.structs.replace(base, **overrides)


def context(
    prof: AgentProfile | None = None,
    turn_mode: str = "server_vad",
    caller: Caller = CALLER,
    tools: tuple[ToolDefinition, ...] = (),
    session_id: str = "ses_test",
) -> SessionContext:
    prof = prof or profile()
    effective = ev.Effective(
        locale="en-US",
        turn_mode=turn_mode,  # type: ignore[arg-type]
        voice_profile_id="builtin",
        voice_version="default",
        output_sample_rate=16000,
        profile_id=prof.id,
        profile_version=prof.version,
    )
    return SessionContext(
        session_id=session_id,
        caller=caller,
        profile=prof,
        effective=effective,
        voice=DEFAULT_VOICE,
        tools=tools,
    )


@dataclass
class Recorded:
    """What the client received, in order, as (type name, payload)."""

    frames: list[tuple[str, Any]] = field(default_factory=list)

    def names(self) -> list[str]:
        return [n for n, _ in self.frames]

    def of(self, name: str) -> list[Any]:
        return [p for n, p in self.frames if n == name]


def frame_name(frame: OutFrame) -> str:
    if frame.envelope is not None:
        return ev.event_type(frame.envelope).removeprefix("vocero.")
    return type(frame.payload).__name__


class Harness:
    def __init__(self, session: Session, out: OutputChannel, clock: VirtualClock) -> None:
        self.session = session
        self.out = out
        self.clock = clock
        self.received = Recorded()
        self.auto_ack = True
        self.changed = anyio.Event()

    async def consume(self) -> None:
        while True:
            frame = await self.out.receive()
            assert frame is not None
            self.received.frames.append((frame_name(frame), frame.payload))
            if self.auto_ack and isinstance(frame.payload, ev.AudioOut):
                track = self.out.playout_of(frame.payload.generation_id)
                self.session.on_playout(frame.payload.generation_id, int(track.sent_ms))
            self.changed.set()
            self.changed = anyio.Event()
            await anyio.lowlevel.checkpoint()

    async def advance(self, seconds: float) -> None:
        """Let every task run until it waits, then move virtual time on by ``seconds``."""
        await anyio.wait_all_tasks_blocked()
        self.clock.advance(seconds)
        await anyio.wait_all_tasks_blocked()

    async def until(self, predicate: Any, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                await self.changed.wait()

    async def until_frame(self, name: str, count: int = 1, timeout: float = 5.0) -> Any:
        await self.until(lambda: len(self.received.of(name)) >= count, timeout)
        return self.received.of(name)[count - 1]


@asynccontextmanager
async def running(
    runners: RunnerSet,
    *,
    prof: AgentProfile | None = None,
    timeouts: Timeouts = Timeouts(llm_s=2.0, stt_s=2.0, tts_s=2.0, playout_grace_s=0.5),
    turn_mode: str = "server_vad",
    coordinator: Any = None,
    acks: bool = True,
    clock: VirtualClock | None = None,
    caller: Caller = CALLER,
    tools: tuple[ToolDefinition, ...] = (),
    session_id: str = "ses_test",
    recorder: Any = None,
    recovery: RecoverySettings = RecoverySettings(),
    false_interruptions: ResumeSettings | None = None,
) -> AsyncIterator[Harness]:
    """A running session on a virtual clock: time passes only when the test says
    (:meth:`Harness.advance`), so every timeout is reached exactly, never waited for."""
    ctx = context(prof, turn_mode, caller, tools, session_id)
    clock = clock or VirtualClock()
    out = OutputChannel(max_lead_ms=ctx.profile.max_lead_ms, playout_acks=acks, clock=clock)
    session = Session(
        ctx, runners, out, coordinator=coordinator, timeouts=timeouts, clock=clock,
        recorder=recorder, recovery=recovery, false_interruptions=false_interruptions,
    )
    harness = Harness(session, out, clock)
    async with anyio.create_task_group() as tg:
        await tg.start(session.run)
        tg.start_soon(harness.consume)
        yield harness
        session.close()
        tg.cancel_scope.cancel()
