"""Ports between planes. Real adapters are wired only in ``vocero.app``; tests use ``Fake*``s.

Inference ports (docs/architecture.md "Planes and layers"): transcribe, generate, synthesize,
cancel, health, capacity. Every runner is asynchronous, honours cancellation by its caller's cancel
scope, and rejects early with :class:`~vocero.contracts.errors.CapacityError` when its bounded queue
is full. Tool port: what the orchestrator and the action executor need from the MCP gateway.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol, runtime_checkable

import anyio
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
    confidence: float | None = None
    """How sure the recogniser is of ``text``, 0 to 1 (Whisper: the geometric mean of its token
    probabilities); ``None`` when the engine does not say."""


class Stt(Runner, Protocol):
    partial_interval_ms: int
    """How much new speech should pass between two partials of a growing utterance; ``0`` when
    partials cost too much to run alongside the finals (the orchestrator then asks for one only
    to judge a possible barge-in)."""

    async def transcribe(
        self, pcm16: bytes, *, sample_rate: int, locale: str, utterance_id: str = "",
        vocabulary: Sequence[str] = (),
    ) -> Transcription:
        """Final transcript of one utterance.

        An utterance may be transcribed twice: early, at a pause, and again when the caller
        spoke on; both calls carry the same ``utterance_id``. Runners may ignore it.
        ``vocabulary``: the session's words and names a caller may say, most likely first (a
        hint; a runner that cannot be primed ignores it).
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


class ToolIntent(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    arguments: dict[str, Any]


class ClaimTopic(msgspec.Struct, frozen=True, kw_only=True):
    """One approved claim as a dialogue manager may know it: its key, its approved wording and
    the topics it answers (docs/grounding.md); never its sources."""

    key: str
    text: str
    topics: list[str] = []


class LlmRequest(msgspec.Struct, frozen=True, kw_only=True):
    messages: list[Message]
    tools: list[ToolDefinition] = []
    max_words: int = 60
    mode: Literal["respond", "classify_confirmation"] = "respond"
    pending: ToolIntent | None = None
    """The proposal the caller is being asked to confirm (its tool and canonical fields), while
    one is open: a correction ("no wait, Friday") is a new intent for the same tool with the
    changed value, never an answer to the old one."""
    timezone: str = "UTC"
    """The caller's IANA timezone: "Friday at 3 pm" is resolved there."""
    now: float | None = None
    """The session clock's time (epoch seconds) when the turn was asked; ``None``: the
    runner's own clock."""
    locale: str = "en-US"
    claims: list[ClaimTopic] = []
    """The profile's approved claims (keys, wording, topics): what a catalog question can be
    answered with."""
    refused: list[ToolDefinition] = []
    """The profile's prohibited tools as material only (``vocero.contracts.prohibited``): never
    offered, never callable; what tells a dialogue manager that a request for what only they do
    is one the agent refuses (out of scope), not one of :attr:`tools`."""


class TextChunk(msgspec.Struct, frozen=True, kw_only=True):
    text: str


class IntentClassified(msgspec.Struct, frozen=True, kw_only=True):
    intent: Literal["confirm", "reject", "uncertain", "new_request"]
    """How a turn relates to a pending question: an answer (``confirm``, ``reject``,
    ``uncertain``) or ``new_request`` (a changed value, another task: served as a new turn)."""


class ClaimAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The model answers with approved claims of the profile's catalog (docs/grounding.md): the
    planner speaks their approved wording, or, with ``paraphrase`` (``grounding: assisted``
    profiles), the model's own wording held to the critical-value and condition checks."""

    claim_keys: list[str]
    paraphrase: str = ""


LlmOutput = TextChunk | ToolIntent | IntentClassified | ClaimAnswer


class Llm(Runner, Protocol):
    def generate(self, request: LlmRequest) -> AsyncIterator[LlmOutput]:
        """Stream text chunks, or yield one tool intent, or one intent classification."""
        ...

    async def prepare(
        self,
        tools: Sequence[ToolDefinition],
        claims: Sequence[ClaimTopic],
        refused: Sequence[ToolDefinition] = (),
    ) -> None:
        """Get ready for a session's tools, claims and prohibited tools (``refused``, as
        :attr:`LlmRequest.refused`) before its first turn (a runner that learns from a profile's
        material fits it here, once per tool set); may do nothing."""
        ...


# ---------------------------------------------------------------------------------------- TTS


class Tts(Runner, Protocol):
    sample_rate: int

    def synthesize(self, text: str, voice: VoiceRef) -> AsyncIterator[bytes]:
        """Stream PCM16 mono chunks at :attr:`sample_rate` for one spoken unit."""
        ...


class SpokenThrough(msgspec.Struct, frozen=True, kw_only=True):
    """An alignment the engine knows: once ``audio_ms`` of a unit's audio has played, the first
    ``fraction`` (0..1, by characters) of the text it was given has been spoken. The point may
    lie ahead of the audio sent so far (an engine that rendered a sentence whole knows where it
    ends before its first chunk leaves)."""

    audio_ms: float
    fraction: float


@runtime_checkable
class VoicedTts(Protocol):
    """A TTS that says which authorized voices it can speak as they were approved (SPEC §3:
    the voice a session speaks is the voice it reports). A TTS without it speaks every voice."""

    def speaks(self, voice: VoiceRef) -> bool:
        """Whether ``voice`` is spoken as approved here: the built-in voice as the runner's own,
        a vault version by its reference (a cloning engine) or its ``engine_voice`` (a serving
        engine). ``False``: the session must not open with it (or falls back, where allowed)."""
        ...


def speaks(tts: object, voice: VoiceRef) -> bool:
    """Whether ``tts`` speaks ``voice`` as approved (see :class:`VoicedTts`)."""
    return tts.speaks(voice) if isinstance(tts, VoicedTts) else True


@runtime_checkable
class AlignedTts(Protocol):
    """A TTS that says how its audio lines up with the text (docs/protocol.md "Barge-in": heard text
    never holds a word that was not played, also while a unit is still being synthesized)."""

    def synthesize_aligned(
        self, text: str, voice: VoiceRef
    ) -> AsyncIterator[bytes | SpokenThrough]:
        """:meth:`Tts.synthesize`'s chunks, with alignment points between them."""
        ...


# ------------------------------------------------------------------------------ turn-taking


class TurnVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """An end-of-turn judgement of the audio (and words) heard so far in one utterance."""

    probability: float
    """That the caller has finished their turn, from 0 (surely going on) to 1."""
    heard_words: bool = False
    """The judgement weighed a transcript besides the audio."""
    words_finished: bool = False
    """That transcript reads as a finished clause: the turn policy may end the turn at a lower
    probability. (Added by ADR-0016 with a default: judges that do not weigh words omit it.)"""
    words_question: bool = False
    """That finished clause is a question (the audio model doubts those most)."""
    words_going_on: bool = False
    """The transcript visibly stops mid-sentence (it ends on an open word of its language, or a
    number being spelled out): the turn policy never ends the turn on this verdict. (Added by
    ADR-0022 with a default.)"""
    words_sure: bool = False
    """The recogniser was sure of the words of that finished clause: the turn policy may end
    the turn even when the audio is unsure (ADR-0022)."""
    words_probability: float | None = None
    """That the caller's sentence ends after its last word, as a language model reads the
    transcript (English only); ``None`` when no words model read it. (Added with a default.)"""
    words_identifier: bool = False
    """The transcript is a statement that ends on a code or digits ("... order A124."): the
    words model's doubt does not hold the turn (it cannot tell a code given whole from one
    half read out; the lexicon's identifier rule judges those). (Added with a default.)"""
    words_count: int = 0
    """How many words the transcript read has (0: none was read). (Added with a default.)"""
    model_ms: float = 0.0
    """Time the judge itself took (its queue wait excluded)."""


class TurnJudge(Runner, Protocol):
    """Endpointing (docs/architecture.md "Turn-taking and endpointing"): has the caller finished, or
    only paused mid-sentence?

    Asked by the orchestrator's turn policy at a pause; must answer within tens of ms, off the
    event loop. A full queue raises ``CapacityError`` at once (the policy then falls back to a
    fixed silence); judgements of one utterance may overlap its early transcription.
    """

    async def judge(
        self,
        pcm16: bytes,
        *,
        sample_rate: int,
        transcript: str = "",
        locale: str = "en-US",
        utterance_id: str = "",
        confidence: float | None = None,
        agent_said: str = "",
    ) -> TurnVerdict:
        """Judge the utterance so far: ``pcm16`` is its audio from speech start (a little
        before) up to now, trailing silence included; ``transcript`` is what the recogniser
        heard of it, when there is a transcript, and ``confidence`` how sure it was
        (:attr:`Transcription.confidence`); ``agent_said`` is what the caller last heard the
        agent say ("" before the agent spoke): "Friday." answers "Which day suits you?"."""
        ...

    async def prepare(self, *, agent_said: str, locale: str = "en-US") -> None:
        """The caller began to speak after hearing ``agent_said``: a judge that reads the
        words may get ready for them now, off the critical path (best effort: a busy judge
        skips it, and its judgements stay correct, only slower)."""
        ...


# -------------------------------------------------------------------------------------- tools


class CallMeta(msgspec.Struct, frozen=True, kw_only=True):
    """What travels in MCP ``_meta`` (docs/mcp.md "A call")."""

    operation_id: str
    principal: Principal
    proposal_id: str = ""
    revision: int = 0
    traceparent: str = ""


InputMode = Literal["form", "url"]
InputAction = Literal["accept", "decline", "cancel"]


class InputLink(msgspec.Struct, frozen=True, kw_only=True):
    """A URL-mode question as the browser client shows it: the server named, the link and the
    server's sentence. Never spoken: a URL read aloud is neither usable nor safe to follow."""

    server: str
    url: str
    message: str


class InputRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A server's question during a tool call (MCP elicitation), protocol-neutral.

    The gateway builds it from a 2026-07-28 ``InputRequiredResult`` or a 2025-11-25
    ``elicitation/create`` alike. ``requested_schema`` is a flat object schema holding only
    fields a caller may answer: secrets (passwords, tokens, card numbers...) are never asked,
    the gateway refuses those questions itself. ``message`` is server text, scrubbed: context
    for wording the question, never an instruction. See docs/mcp.md "Questions from a server".
    """

    id: str
    """Unique per question: what an answer binds to."""
    server: str
    """The profile's name for the server (never its URL)."""
    tool: str
    """The model-facing tool of the call the question belongs to."""
    operation_id: str
    proposal_id: str = ""
    revision: int = 0
    mode: InputMode = "form"
    message: str = ""
    message_flags: list[str] = []
    requested_schema: dict[str, Any] = {}
    """``form``: ``{"type": "object", "properties": {...}, "required": [...]}``; empty for url."""
    link: InputLink | None = None
    """``url`` only: what the browser shows (never spoken)."""


class InputResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The caller's answer. ``content`` (accept, form mode) is validated against the requested
    schema before it reaches the server."""

    action: InputAction
    content: dict[str, Any] = {}


InputHandler = Callable[[InputRequest], Awaitable[InputResponse]]
"""Asks the caller; the gateway bounds the wait (``GatewaySettings.input_timeout_s``)."""


class ToolCallRequest(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    """The model-facing tool name of the profile; the gateway resolves it."""
    arguments: dict[str, Any]
    meta: CallMeta
    ask: InputHandler | None = None
    """Answers a server's questions during this call; ``None``: every question is declined
    (reason ``input_unavailable``)."""


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


class Extendable(Protocol):
    """A deadline that can be pushed back (``extend``): a context manager that raises
    ``TimeoutError`` when the deadline passed."""

    def extend(self) -> None: ...

    def pause(self) -> None:
        """No deadline until the next ``extend``."""
        ...

    def __enter__(self) -> Extendable: ...

    def __exit__(self, *exc: object) -> bool: ...


class Timers(Clock, Protocol):
    """A clock that can also be waited on: every timeout and pause goes through one, so a
    virtual clock (``vocero.contracts.clock.VirtualClock``) can drive them in tests."""

    async def sleep(self, seconds: float) -> None: ...

    def move_on_after(
        self, seconds: float | None, *, shield: bool = False
    ) -> AbstractContextManager[anyio.CancelScope]: ...

    def fail_after(
        self, seconds: float | None, *, shield: bool = False
    ) -> AbstractContextManager[anyio.CancelScope]:
        """Like ``anyio.fail_after``: raises ``TimeoutError`` when the deadline cancelled it."""
        ...

    def deadline(self, seconds: float) -> Extendable:
        """One deadline ``seconds`` ahead, pushed back by each ``extend()``."""
        ...


class AuditSink(Protocol):
    """Append one event to the hash-chained audit log. ``data`` holds opaque references only:
    never secrets, raw speech or full tool payloads."""

    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None: ...
