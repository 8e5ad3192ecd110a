"""The WebSocket protocol (docs/protocol.md) as msgspec Structs.

Every frame is one envelope. The envelope's ``type`` is the tag of a tagged union, so each
direction has exactly one union and one decoder: :data:`ClientEvent` and :data:`ServerEvent`.
Payload structs are shared by both the envelope and internal code; new fields always get defaults.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

import msgspec

SPEC_VERSION = "1.0"
TYPE_PREFIX = "vocero."

P = TypeVar("P")

SessionState = Literal[
    "CONFIGURING",
    "LISTENING",
    "TRANSCRIBING",
    "THINKING",
    "TOOL_PENDING",
    "AWAITING_CONFIRMATION",
    "TOOL_RUNNING",
    "SPEAKING",
    "INTERRUPTING",
    "DEGRADED",
    "CLOSING",
    "FAILED",
]
"""The states of a session, declared once: the session machine
(:mod:`vocero.orchestrator.machine`) holds one of them, the store keeps it, the wire reports it."""
ReportedState = Literal["CONNECTING", "AUTHENTICATING", SessionState]
"""What ``session.state.v1`` may carry: the protocol also names the two states before a session
exists, which are never sent (docs/protocol.md, "States")."""
TurnMode = Literal["server_vad", "push_to_talk"]
CompletionStatus = Literal["completed", "interrupted", "canceled", "failed"]
ToolStatus = Literal[
    "authorized", "dispatch_pending", "in_flight", "committed", "rejected", "unknown"
]
Decision = Literal["confirm", "reject"]


class Data(msgspec.Struct, Generic[P], kw_only=True):
    """The ``data`` member of every envelope."""

    session_id: str = ""
    sequence: int
    payload: P
    turn_id: str = ""


class Envelope(msgspec.Struct, tag_field="type", kw_only=True):
    specversion: str = SPEC_VERSION
    id: str
    time: str
    source: str
    subject: str = ""
    traceparent: str = ""


# ----------------------------------------------------------------------------- payloads, inbound


class Empty(msgspec.Struct):
    """A payload with no members (``{}``)."""


class Connect(msgspec.Struct, kw_only=True):
    token: str
    resume_token: str = ""


class ClientCapabilities(msgspec.Struct, kw_only=True):
    audio_codecs: list[str] = []
    supports_playout_ack: bool = False


class Preferences(msgspec.Struct, kw_only=True):
    """Allowed session preferences. Fields outside these are accepted and ignored; the
    governed ones below are accepted only to be removed and reported in ``rejected_fields``."""

    locale: str | msgspec.UnsetType = msgspec.UNSET
    turn_mode: TurnMode | msgspec.UnsetType = msgspec.UNSET
    system_prompt: Any = msgspec.UNSET
    instructions: Any = msgspec.UNSET
    tools: Any = msgspec.UNSET
    mcp_credentials: Any = msgspec.UNSET
    ref_audio: Any = msgspec.UNSET
    ref_text: Any = msgspec.UNSET
    voice_profile_id: Any = msgspec.UNSET
    voice_version: Any = msgspec.UNSET
    limits: Any = msgspec.UNSET
    scopes: Any = msgspec.UNSET


class UpdateRequested(msgspec.Struct, kw_only=True):
    client_capabilities: ClientCapabilities | msgspec.UnsetType = msgspec.UNSET
    preferences: Preferences | msgspec.UnsetType = msgspec.UNSET
    system_prompt: Any = msgspec.UNSET
    instructions: Any = msgspec.UNSET
    tools: Any = msgspec.UNSET
    mcp_credentials: Any = msgspec.UNSET
    ref_audio: Any = msgspec.UNSET
    ref_text: Any = msgspec.UNSET
    voice_profile_id: Any = msgspec.UNSET
    voice_version: Any = msgspec.UNSET
    limits: Any = msgspec.UNSET
    scopes: Any = msgspec.UNSET


GOVERNED_FIELDS: tuple[str, ...] = (
    "system_prompt",
    "instructions",
    "tools",
    "mcp_credentials",
    "ref_audio",
    "ref_text",
    "voice_profile_id",
    "voice_version",
    "limits",
    "scopes",
)


class AudioDelta(msgspec.Struct, kw_only=True):
    audio: bytes
    sample_rate: int = 16000


class TextInput(msgspec.Struct, kw_only=True):
    text: str


class PlayoutProgress(msgspec.Struct, kw_only=True):
    generation_id: str
    played_ms: int
    buffered_ms: int = 0


class CancelRequested(msgspec.Struct, kw_only=True):
    generation_id: str


class ConfirmationSubmitted(msgspec.Struct, kw_only=True):
    proposal_id: str
    revision: int
    decision: Decision


# ---------------------------------------------------------------------------- payloads, outbound


class Effective(msgspec.Struct, kw_only=True):
    locale: str
    turn_mode: TurnMode
    voice_profile_id: str
    voice_version: str
    output_sample_rate: int
    profile_id: str
    profile_version: str


class RejectedField(msgspec.Struct, kw_only=True):
    field: str
    reason: str


class ConfigurationApplied(msgspec.Struct, kw_only=True):
    session_id: str
    resume_token: str
    effective: Effective
    rejected_fields: list[RejectedField] = []


class StateChanged(msgspec.Struct, kw_only=True):
    state: ReportedState
    previous: ReportedState | None = None


class Transcript(msgspec.Struct, kw_only=True):
    turn_id: str
    text: str


class ResponseCreated(msgspec.Struct, kw_only=True):
    generation_id: str
    turn_id: str


class TextDelta(msgspec.Struct, kw_only=True):
    generation_id: str
    unit_id: str
    text: str


class AudioOut(msgspec.Struct, kw_only=True):
    generation_id: str
    unit_id: str
    chunk_index: int
    audio: bytes
    sample_rate: int


class ResponseCompleted(msgspec.Struct, kw_only=True):
    generation_id: str
    status: CompletionStatus
    heard_text: str


class StopAndFlush(msgspec.Struct, kw_only=True):
    generation_id: str
    reason: str


class ConfirmationRequired(msgspec.Struct, kw_only=True):
    proposal_id: str
    revision: int
    tool: str
    summary: str
    fields: dict[str, Any]
    expires_at: str


ToolKind = Literal["lookup", "action"]


class ToolStatusChanged(msgspec.Struct, kw_only=True):
    tool_call_id: str
    proposal_id: str = ""
    status: ToolStatus
    reason_code: str = ""
    kind: ToolKind = "action"
    """``lookup``: a read (``action_class: read``) that changes nothing; ``action``: a write.
    (Added later with a default, so clients that ignore it read every status as before.)"""


class InputLinkShown(msgspec.Struct, kw_only=True):
    """A URL-mode question: the link the browser shows, with the server named (never spoken)."""

    server: str
    url: str
    message: str = ""


class InputField(msgspec.Struct, kw_only=True):
    name: str
    title: str


class ToolInputRequired(msgspec.Struct, kw_only=True):
    """A server asks the caller something during a tool call (docs/protocol.md "A server's
    questions")."""

    question_id: str
    server: str
    tool: str
    mode: Literal["form", "url"] = "form"
    fields: list[InputField] = []
    link: InputLinkShown | None = None


class Error(msgspec.Struct, kw_only=True):
    code: str
    category: str
    retryable: bool
    user_message_key: str
    correlation_id: str


ServerPayload = (
    ConfigurationApplied
    | StateChanged
    | Transcript
    | ResponseCreated
    | TextDelta
    | AudioOut
    | ResponseCompleted
    | StopAndFlush
    | ConfirmationRequired
    | ToolStatusChanged
    | ToolInputRequired
    | Error
)
"""Everything the server can say to a client: the payload of one outbound frame."""


# ------------------------------------------------------------------------- envelopes, inbound


class ClientEnvelope(Envelope, kw_only=True):
    source: str = "web-client"
    data: Data[Any]
    """Each event narrows it to its own payload."""


class SessionConnectV1(ClientEnvelope, tag="vocero.session.connect.v1"):
    data: Data[Connect]


class SessionUpdateRequestedV1(ClientEnvelope, tag="vocero.session.update_requested.v1"):
    data: Data[UpdateRequested]


class AudioInputDeltaV1(ClientEnvelope, tag="vocero.audio.input.delta.v1"):
    data: Data[AudioDelta]


class AudioInputCommitV1(ClientEnvelope, tag="vocero.audio.input.commit.v1"):
    data: Data[Empty]


class InputSpeechStartedV1(ClientEnvelope, tag="vocero.input.speech_started.v1"):
    data: Data[Empty]


class InputTextV1(ClientEnvelope, tag="vocero.input.text.v1"):
    data: Data[TextInput]


class OutputPlayoutProgressV1(ClientEnvelope, tag="vocero.output.playout_progress.v1"):
    data: Data[PlayoutProgress]


class GenerationCancelRequestedV1(ClientEnvelope, tag="vocero.generation.cancel_requested.v1"):
    data: Data[CancelRequested]


class ToolConfirmationSubmittedV1(ClientEnvelope, tag="vocero.tool.confirmation_submitted.v1"):
    data: Data[ConfirmationSubmitted]


class SessionCloseV1(ClientEnvelope, tag="vocero.session.close.v1"):
    data: Data[Empty]


ClientEvent = (
    SessionConnectV1
    | SessionUpdateRequestedV1
    | AudioInputDeltaV1
    | AudioInputCommitV1
    | InputSpeechStartedV1
    | InputTextV1
    | OutputPlayoutProgressV1
    | GenerationCancelRequestedV1
    | ToolConfirmationSubmittedV1
    | SessionCloseV1
)

# ------------------------------------------------------------------------ envelopes, outbound


class ServerEnvelope(Envelope, kw_only=True):
    source: str = "vocero"
    data: Data[Any]
    """Each event narrows it to its own payload."""


class SessionConfigurationAppliedV1(ServerEnvelope, tag="vocero.session.configuration_applied.v1"):
    data: Data[ConfigurationApplied]


class SessionStateV1(ServerEnvelope, tag="vocero.session.state.v1"):
    data: Data[StateChanged]


class TranscriptPartialV1(ServerEnvelope, tag="vocero.transcript.partial.v1"):
    data: Data[Transcript]


class TranscriptFinalV1(ServerEnvelope, tag="vocero.transcript.final.v1"):
    data: Data[Transcript]


class ResponseCreatedV1(ServerEnvelope, tag="vocero.response.created.v1"):
    data: Data[ResponseCreated]


class ResponseTextDeltaV1(ServerEnvelope, tag="vocero.response.text_delta.v1"):
    data: Data[TextDelta]


class ResponseAudioDeltaV1(ServerEnvelope, tag="vocero.response.audio_delta.v1"):
    data: Data[AudioOut]


class ResponseCompletedV1(ServerEnvelope, tag="vocero.response.completed.v1"):
    data: Data[ResponseCompleted]


class OutputStopAndFlushV1(ServerEnvelope, tag="vocero.output.stop_and_flush.v1"):
    data: Data[StopAndFlush]


class ToolConfirmationRequiredV1(ServerEnvelope, tag="vocero.tool.confirmation_required.v1"):
    data: Data[ConfirmationRequired]


class ToolStatusV1(ServerEnvelope, tag="vocero.tool.status.v1"):
    data: Data[ToolStatusChanged]


class ToolInputRequiredV1(ServerEnvelope, tag="vocero.tool.input_required.v1"):
    data: Data[ToolInputRequired]


class ErrorV1(ServerEnvelope, tag="vocero.error.v1"):
    data: Data[Error]


ServerEvent = (
    SessionConfigurationAppliedV1
    | SessionStateV1
    | TranscriptPartialV1
    | TranscriptFinalV1
    | ResponseCreatedV1
    | ResponseTextDeltaV1
    | ResponseAudioDeltaV1
    | ResponseCompletedV1
    | OutputStopAndFlushV1
    | ToolConfirmationRequiredV1
    | ToolStatusV1
    | ToolInputRequiredV1
    | ErrorV1
)

CLIENT_EVENT_TYPES: tuple[type[ClientEnvelope], ...] = ClientEvent.__args__
SERVER_EVENT_TYPES: tuple[type[ServerEnvelope], ...] = ServerEvent.__args__


def event_type(cls: type[Envelope]) -> str:
    """The wire ``type`` string of an envelope class."""
    tag = cls.__struct_config__.tag
    assert isinstance(tag, str)
    return tag
