"""What a session is bound to, and the small ports the orchestrator reports through."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from vocero.contracts.domain import AgentProfile, Caller, Principal, ToolDefinition, VoiceRef
from vocero.contracts.events import Effective
from vocero.contracts.prohibited import prohibited_tools


@dataclass(frozen=True, slots=True)
class SessionContext:
    session_id: str
    caller: Caller
    profile: AgentProfile
    effective: Effective
    voice: VoiceRef
    tools: tuple[ToolDefinition, ...] = ()
    refused: tuple[ToolDefinition, ...] | None = None
    """The profile's prohibited tools as material (``LlmRequest.refused``), described by their
    servers where the gateway knows them; ``None``: from the profile alone."""
    voice_usable: Callable[[], bool] = lambda: True
    """Whether :attr:`voice` may still speak (the vault's revocation check); synchronous and
    cheap, asked before every spoken unit."""
    channel: str = "web"
    """``web``, or the carrier a phone call came through (``twilio``): a handoff puts a phone
    call through, and records a task on the web (:mod:`.handoff`)."""
    opening: str = ""
    """The agent's first line, said unasked as soon as the session runs (a call-back answered on
    the phone says who is calling and why); empty: the agent waits for the caller."""

    @property
    def refused_tools(self) -> list[ToolDefinition]:
        """:attr:`refused`, or the profile's prohibited tools as the profile alone gives them."""
        if self.refused is not None:
            return list(self.refused)
        return prohibited_tools(self.profile)

    @property
    def principal(self) -> Principal:
        return Principal.of(self.caller)


@dataclass(frozen=True, slots=True)
class Timeouts:
    llm_s: float = 10.0
    stt_s: float = 10.0
    tts_s: float = 10.0
    playout_grace_s: float = 2.0


class SessionMetrics(Protocol):
    def observe_ms(self, name: str, value: float, **labels: str) -> None: ...

    def count(self, name: str, amount: float = 1.0, **labels: str) -> None: ...


class NullMetrics:
    def observe_ms(self, name: str, value: float, **labels: str) -> None:
        return None

    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        return None
