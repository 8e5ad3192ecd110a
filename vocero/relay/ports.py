"""What the relay needs from the rest of the process, wired by the composition root."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import anyio

from vocero.contracts.domain import AgentProfile, Caller
from vocero.contracts.events import Effective, RejectedField
from vocero.contracts.secrets import Secret
from vocero.orchestrator.context import SessionContext
from vocero.orchestrator.output import OutputChannel
from vocero.relay.limits import Limits, PendingConnections
from vocero.relay.origins import OriginPolicy


class SessionInput(Protocol):
    """What the relay hands a session: the client's valid events, one handler each. Handlers
    never await; the session runs its own tasks under :meth:`run`."""

    ctx: SessionContext

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None: ...

    def close(self, reason: str = "client_close") -> None: ...

    def set_turn_mode(self, mode: str) -> None: ...

    def on_audio(self, pcm16: bytes) -> None: ...

    def on_speech_hint(self) -> None: ...

    def on_commit(self) -> None: ...

    def on_text(self, text: str) -> None: ...

    def on_playout(self, generation_id: str, played_ms: int) -> None: ...

    def on_cancel(self, generation_id: str) -> None: ...

    def on_confirmation(
        self, proposal_id: str, revision: int, decision: Literal["confirm", "reject"]
    ) -> None: ...

    def on_key_answer(self, decision: Literal["confirm", "reject"]) -> None:
        """A key answering the open confirmation question (the phone's DTMF)."""
        ...


class SessionHandle(Protocol):
    @property
    def session(self) -> SessionInput: ...

    resume_token: Secret
    rejected: list[RejectedField]
    """Why a ``resume_token`` sent at connect was not honoured (a new session was opened)."""

    def applied(self, effective: Effective) -> None:
        """Record the effective configuration an update applied (kept after the session)."""
        ...

    async def aclose(self, *, resumable: bool = False) -> None:
        """Release what the session held (tool connections, recorder flush); ``resumable``
        when the connection ended without the client closing the session."""
        ...


class SessionFactory(Protocol):
    async def open(
        self,
        caller: Caller,
        profile: AgentProfile,
        out: OutputChannel,
        *,
        turn_mode: str,
        locale: str,
        resume_token: Secret | None = None,
        channel: str = "web",
        call_sid: str = "",
        followup_id: str = "",
        opening: str = "",
    ) -> SessionHandle:
        """``followup_id`` and ``opening``: a call-back answered on the phone (the follow-up it
        answers, recorded on the session, and the agent's first line)."""
        ...

    def audit(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        """Fire-and-forget audit of relay decisions (denials, configuration differences)."""
        ...


class RelayMetrics(Protocol):
    def count(self, name: str, amount: float = 1.0, **labels: str) -> None: ...

    def gauge(self, name: str, value: float, **labels: str) -> None: ...


@dataclass(slots=True)
class RelayConfig:
    authenticate: Callable[[str], Awaitable[Caller | None]]
    select_profile: Callable[[Caller], Awaitable[AgentProfile]]
    """The profile a new session of ``caller`` gets (raises ``AuthError`` when none)."""
    factory: SessionFactory
    metrics: RelayMetrics
    limits: Limits = field(default_factory=Limits)
    max_sessions: int = 500
    monotonic: Callable[[], float] = field(default=lambda: 0.0)
    output_sample_rate: int = 16000
    wait_ready: Callable[[], Awaitable[bool]] | None = None
    """Waits (bounded) until runners and tool connections are warm; False if they never were."""
    active: set[str] = field(default_factory=set)
    """Session slots taken (``--max-sessions``): one key per admitted connection."""
    draining: bool = False
    origins: OriginPolicy = field(default_factory=OriginPolicy)
    """Browser origins allowed to upgrade; the default allows none (requests without ``Origin``
    are never affected)."""
    pending: PendingConnections = field(default_factory=lambda: PendingConnections(32))
    """Connections per address not yet authenticated (``--max-pending-per-address``)."""
