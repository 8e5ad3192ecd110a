"""Stable error codes of the public protocol and the typed exceptions that carry them.

A code is part of the external contract (docs/protocol.md): clients switch on it, so codes never
change meaning. Each code has a category, a retryable flag and a user-safe message key; internal
details stay in logs under the correlation id.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Category(enum.StrEnum):
    PROTOCOL = "protocol"
    AUTH = "auth"
    POLICY = "policy"
    CAPACITY = "capacity"
    DEPENDENCY = "dependency"
    INTERNAL = "internal"


@dataclass(frozen=True, slots=True)
class CodeInfo:
    category: Category
    retryable: bool
    user_message_key: str


class ErrorCode(enum.StrEnum):
    MALFORMED_EVENT = "MALFORMED_EVENT"
    UNKNOWN_EVENT = "UNKNOWN_EVENT"
    INVALID_PAYLOAD = "INVALID_PAYLOAD"
    SEQUENCE_VIOLATION = "SEQUENCE_VIOLATION"
    FRAME_TOO_LARGE = "FRAME_TOO_LARGE"
    RATE_LIMITED = "RATE_LIMITED"
    CONNECT_REQUIRED = "CONNECT_REQUIRED"
    AUTH_DENIED = "AUTH_DENIED"
    PROFILE_DENIED = "PROFILE_DENIED"
    SESSION_MISMATCH = "SESSION_MISMATCH"
    CAPACITY_EXHAUSTED = "CAPACITY_EXHAUSTED"
    INVALID_STATE = "INVALID_STATE"
    STT_UNAVAILABLE = "STT_UNAVAILABLE"
    TTS_UNAVAILABLE = "TTS_UNAVAILABLE"
    # The session's voice cannot be spoken: not approved, revoked, expired, or not one this
    # runner can speak as approved (SPEC §3). Never answered by speaking another voice.
    VOICE_UNAVAILABLE = "VOICE_UNAVAILABLE"
    LLM_TIMEOUT = "LLM_TIMEOUT"
    LLM_UNAVAILABLE = "LLM_UNAVAILABLE"
    PROPOSAL_CHANGED = "PROPOSAL_CHANGED"
    CONFIRMATION_INVALID = "CONFIRMATION_INVALID"
    TOOL_DENIED = "TOOL_DENIED"
    MCP_TOOL_TIMEOUT = "MCP_TOOL_TIMEOUT"
    MCP_INVALID_RESULT = "MCP_INVALID_RESULT"
    MCP_UNAVAILABLE = "MCP_UNAVAILABLE"
    MCP_TOOL_CHANGED = "MCP_TOOL_CHANGED"
    MCP_INVALID_ARGUMENTS = "MCP_INVALID_ARGUMENTS"
    MCP_TOOL_ERROR = "MCP_TOOL_ERROR"
    SHUTTING_DOWN = "SHUTTING_DOWN"
    # ADR-0018: the shared store (PostgreSQL) is unreachable; the session says so, writes fail
    # closed (no effect without its durable record) and it recovers when the store is back.
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    INTERNAL = "INTERNAL"


_P, _A, _D, _C = Category.PROTOCOL, Category.AUTH, Category.DEPENDENCY, Category.CAPACITY

CODES: dict[ErrorCode, CodeInfo] = {
    ErrorCode.MALFORMED_EVENT: CodeInfo(_P, False, "protocol.malformed"),
    ErrorCode.UNKNOWN_EVENT: CodeInfo(_P, False, "protocol.unknown_event"),
    ErrorCode.INVALID_PAYLOAD: CodeInfo(_P, False, "protocol.invalid_payload"),
    ErrorCode.SEQUENCE_VIOLATION: CodeInfo(_P, False, "protocol.sequence"),
    ErrorCode.FRAME_TOO_LARGE: CodeInfo(_P, False, "protocol.frame_too_large"),
    ErrorCode.RATE_LIMITED: CodeInfo(_P, True, "protocol.rate_limited"),
    ErrorCode.CONNECT_REQUIRED: CodeInfo(_P, False, "protocol.connect_required"),
    ErrorCode.AUTH_DENIED: CodeInfo(_A, False, "auth.denied"),
    ErrorCode.PROFILE_DENIED: CodeInfo(_A, False, "auth.no_profile"),
    ErrorCode.SESSION_MISMATCH: CodeInfo(_P, False, "protocol.session_mismatch"),
    ErrorCode.CAPACITY_EXHAUSTED: CodeInfo(_C, True, "service.busy"),
    ErrorCode.INVALID_STATE: CodeInfo(_P, False, "protocol.invalid_state"),
    ErrorCode.STT_UNAVAILABLE: CodeInfo(_D, True, "speech.input_unavailable"),
    ErrorCode.TTS_UNAVAILABLE: CodeInfo(_D, True, "speech.output_unavailable"),
    ErrorCode.VOICE_UNAVAILABLE: CodeInfo(Category.POLICY, False, "speech.voice_unavailable"),
    ErrorCode.LLM_TIMEOUT: CodeInfo(_D, True, "assistant.timeout"),
    ErrorCode.LLM_UNAVAILABLE: CodeInfo(_D, True, "assistant.unavailable"),
    ErrorCode.PROPOSAL_CHANGED: CodeInfo(Category.POLICY, False, "tool.proposal_changed"),
    ErrorCode.CONFIRMATION_INVALID: CodeInfo(Category.POLICY, False, "tool.confirmation_invalid"),
    ErrorCode.TOOL_DENIED: CodeInfo(Category.POLICY, False, "tool.denied"),
    ErrorCode.MCP_TOOL_TIMEOUT: CodeInfo(_D, False, "tool.temporarily_unavailable"),
    ErrorCode.MCP_INVALID_RESULT: CodeInfo(_D, False, "tool.invalid_result"),
    ErrorCode.MCP_UNAVAILABLE: CodeInfo(_D, True, "tool.unavailable"),
    ErrorCode.MCP_TOOL_CHANGED: CodeInfo(_D, False, "tool.disabled_pending_review"),
    ErrorCode.MCP_INVALID_ARGUMENTS: CodeInfo(_D, False, "tool.invalid_arguments"),
    ErrorCode.MCP_TOOL_ERROR: CodeInfo(_D, False, "tool.failed"),
    ErrorCode.SHUTTING_DOWN: CodeInfo(_C, True, "service.restarting"),
    ErrorCode.STORE_UNAVAILABLE: CodeInfo(_D, True, "service.store_unavailable"),
    ErrorCode.INTERNAL: CodeInfo(Category.INTERNAL, True, "service.error"),
}


class CloseCode(enum.IntEnum):
    """WebSocket close codes the server uses (docs/protocol.md)."""

    NORMAL = 1000
    GOING_AWAY = 1001
    POLICY_VIOLATION = 1008
    MESSAGE_TOO_BIG = 1009
    INTERNAL_ERROR = 1011
    TRY_AGAIN_LATER = 1013
    CONNECT_REQUIRED = 4400
    AUTH_DENIED = 4401
    PROFILE_DENIED = 4403
    PROTOCOL_ABUSE = 4429


class VoceroError(Exception):
    """Base of every failure that maps to a stable public error code."""

    code: ErrorCode = ErrorCode.INTERNAL

    def __init__(self, message: str = "", *, code: ErrorCode | None = None) -> None:
        super().__init__(message or (code or self.code).value)
        if code is not None:
            self.code = code

    @property
    def retryable(self) -> bool:
        return CODES[self.code].retryable


class ProtocolError(VoceroError):
    code = ErrorCode.INVALID_PAYLOAD


class AuthError(VoceroError):
    code = ErrorCode.AUTH_DENIED


class CapacityError(VoceroError):
    code = ErrorCode.CAPACITY_EXHAUSTED


class ConfigError(Exception):
    """A configuration file is invalid; the message names the file and the field."""

    def __init__(self, path: str, field: str, problem: str) -> None:
        super().__init__(f"{path}: {field}: {problem}")
        self.path = path
        self.field = field
        self.problem = problem


class ToolCallError(VoceroError):
    """A tool call did not produce a usable result.

    ``possibly_executed`` is the fact the action path needs: when true the downstream system may
    have applied the effect (timeout after send, cancellation, invalid result), so the operation is
    ``unknown`` and must be reconciled, never blindly retried.
    """

    code = ErrorCode.MCP_TOOL_ERROR
    possibly_executed: bool = False

    def __init__(self, message: str = "", *, possibly_executed: bool | None = None) -> None:
        super().__init__(message)
        if possibly_executed is not None:
            self.possibly_executed = possibly_executed

    @property
    def reason_code(self) -> str:
        """What a call that ended on this error records and reports (``tool.status.v1``, the
        operation): its code, or a finer reason where what the caller is told depends on it."""
        return self.code.value


class ToolNotAllowedError(ToolCallError):
    code = ErrorCode.TOOL_DENIED


class ToolArgumentsError(ToolCallError):
    code = ErrorCode.MCP_INVALID_ARGUMENTS


class ToolChangedError(ToolCallError):
    code = ErrorCode.MCP_TOOL_CHANGED


class ToolTimeoutError(ToolCallError):
    code = ErrorCode.MCP_TOOL_TIMEOUT
    possibly_executed = True


class ToolInvalidResultError(ToolCallError):
    code = ErrorCode.MCP_INVALID_RESULT
    possibly_executed = True


class ToolUnavailableError(ToolCallError):
    code = ErrorCode.MCP_UNAVAILABLE
