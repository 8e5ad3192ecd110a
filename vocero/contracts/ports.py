"""Ports between planes. Real adapters are wired only in ``vocero.app``; tests use ``Fake*``s.

Inference ports (seed 004 §4.1 Inference Plane): transcribe, generate, synthesize, cancel,
health, capacity. Every runner is asynchronous, honours cancellation by its caller's cancel scope,
and rejects early with :class:`~vocero.contracts.errors.CapacityError` when its bounded queue is
full. Tool port: what the orchestrator and the action executor need from the MCP gateway.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

from vocero.contracts.domain import Principal, ToolDefinition, VoiceRef

Health = Literal["starting", "ready", "degraded", "unavailable"]


class RunnerStatus(msgspec.Struct, kw_only=True):
    health: Health
    in_flight: int = 0
    capacity: int = 0
    detail: str = ""


@runtime_checkable
class Runner(Protocol):
    name: str

    async def warm_up(self) -> None: ...

    def status(self) -> RunnerStatus: ...


# ---------------------------------------------------------------------------------------- VAD


class VadEvent(msgspec.Struct, frozen=True, kw_only=True):
    kind: Literal["speech_started", "speech_stopped"]
    at_ms: int


class VadStream(Protocol):
    voiced_ms: int
    """Milliseconds of frames judged to be speech since the last ``speech_started``."""

    def push(self, pcm16: bytes) -> list[VadEvent]:
        """Feed 16 kHz PCM16 mono; returns the speech boundaries found in it."""
        ...

    def reset(self) -> None: ...


class Vad(Protocol):
    def open(self) -> VadStream: ...


# ---------------------------------------------------------------------------------------- STT


class Word(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    start_ms: int
    end_ms: int


class Transcription(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    final: bool = True
    words: list[Word] = []


class Stt(Runner, Protocol):
    partial_interval_ms: int
    """How much new speech should pass between two partials of a growing utterance; ``0`` when
    partials cost too much to run alongside the finals (the orchestrator then asks for one only
    to judge a possible barge-in)."""

    async def transcribe(
        self, pcm16: bytes, *, sample_rate: int, locale: str, utterance_id: str = ""
    ) -> Transcription:
        """Final transcript of one utterance.

        An utterance may be transcribed twice: early, at a pause, and again when the caller
        spoke on; both calls carry the same ``utterance_id``. Runners may ignore it.
        """
        ...

    async def partial(self, pcm16: bytes, *, sample_rate: int, locale: str) -> Transcription:
        """Best-effort transcript of the audio heard so far in the current utterance."""
        ...


# ---------------------------------------------------------------------------------------- LLM


class Message(msgspec.Struct, frozen=True, kw_only=True):
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_name: str = ""
    tool_result: dict[str, Any] | None = None
    """What the tool returned, as it returned it."""
    tool_status: str = ""
    """How the call ended: ``committed``, ``rejected``, ``failed``, ``unknown``..."""

    def tool_data(self) -> dict[str, Any] | str:
        """A tool message as models read it: the result with the call's outcome as ``status``
        (the result's own ``status``, e.g. an order's, wins); the text content when no result."""
        if self.tool_result is None and not self.tool_status:
            return self.content
        outcome = {"status": self.tool_status} if self.tool_status else {}
        return {**outcome, **(self.tool_result or {})}


class LlmRequest(msgspec.Struct, frozen=True, kw_only=True):
    messages: list[Message]
    tools: list[ToolDefinition] = []
    max_words: int = 60
    mode: Literal["respond", "classify_confirmation"] = "respond"


class TextChunk(msgspec.Struct, frozen=True, kw_only=True):
    text: str


class ToolIntent(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    arguments: dict[str, Any]


class IntentClassified(msgspec.Struct, frozen=True, kw_only=True):
    intent: Literal["confirm", "reject", "uncertain", "new_request"]
    """How a turn relates to a pending question: an answer (``confirm``, ``reject``,
    ``uncertain``) or ``new_request`` (a changed value, another task: served as a new turn)."""


class ClaimAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The model answers with approved claims of the profile's catalog (SPEC §6, §8): the planner
    speaks their approved wording, or, with ``paraphrase`` (``grounding: assisted`` profiles),
    the model's own wording held to the critical-value and condition checks."""

    claim_keys: list[str]
    paraphrase: str = ""


LlmOutput = TextChunk | ToolIntent | IntentClassified | ClaimAnswer


class Llm(Runner, Protocol):
    def generate(self, request: LlmRequest) -> AsyncIterator[LlmOutput]:
        """Stream text chunks, or yield one tool intent, or one intent classification."""
        ...


# ---------------------------------------------------------------------------------------- TTS


class Tts(Runner, Protocol):
    sample_rate: int

    def synthesize(self, text: str, voice: VoiceRef) -> AsyncIterator[bytes]:
        """Stream PCM16 mono chunks at :attr:`sample_rate` for one spoken unit."""
        ...


# -------------------------------------------------------------------------------------- tools


class CallMeta(msgspec.Struct, frozen=True, kw_only=True):
    """What travels in MCP ``_meta`` (SPEC §7)."""

    operation_id: str
    principal: Principal
    proposal_id: str = ""
    revision: int = 0
    traceparent: str = ""


class ToolCallRequest(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    """The model-facing tool name of the profile; the gateway resolves it."""
    arguments: dict[str, Any]
    meta: CallMeta


class ToolResult(msgspec.Struct, frozen=True, kw_only=True):
    """A validated, size-limited result, marked untrusted for the model."""

    content: dict[str, Any]
    is_error: bool = False
    text: str = ""


class ToolGateway(Protocol):
    def definitions(self) -> Sequence[ToolDefinition]:
        """Tools exposed to the model: the profile's allowlist, with pinned schemas."""
        ...

    async def call(self, request: ToolCallRequest) -> ToolResult:
        """Validate and call. Raises ``ToolCallError`` subclasses with stable codes."""
        ...


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> float:
        """Wall-clock seconds since the epoch."""
        ...


class AuditSink(Protocol):
    """Append one event to the hash-chained audit log. ``data`` holds opaque references only:
    never secrets, raw speech or full tool payloads."""

    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None: ...
