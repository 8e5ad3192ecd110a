"""How MCP and transport failures become the stable ``error.v1`` codes of SPEC §2.

Every failure leaves the gateway as a :class:`~vocero.contracts.errors.ToolCallError` whose message
is a short reason token (``timeout``, ``circuit_open``, ...): never a server URL, an argument value,
a stack trace or text a server sent. ``possibly_executed`` is set whenever the request may have
reached the server, so a write in that state is reconciled, never blindly repeated.
"""

from __future__ import annotations

from typing import Any

import httpx2
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_TIMEOUT
from pydantic import ValidationError

from vocero.contracts.errors import (
    CODES,
    ErrorCode,
    ToolArgumentsError,
    ToolCallError,
    ToolInvalidResultError,
    ToolTimeoutError,
    ToolUnavailableError,
)


class ToolBusyError(ToolCallError):
    """A bulkhead is full: the call was refused before anything was sent."""

    code = ErrorCode.CAPACITY_EXHAUSTED


class InvalidToolArgumentsError(ToolArgumentsError):
    """Arguments failed the pinned schema; ``fields`` names the offending paths, never values."""

    def __init__(self, fields: list[str]) -> None:
        super().__init__("invalid_arguments", possibly_executed=False)
        self.fields = fields


class CandidateDisabledError(ToolUnavailableError):
    """A server asked for the candidate protocol while the process-wide switch is off."""


class ConnectionLostError(Exception):
    """Internal control signal: a server's connection ended and must be re-established."""


def map_call_failure(exc: BaseException, *, dispatched: bool) -> ToolCallError:
    """The public form of a failure raised by an SDK ``tools/call``."""
    if isinstance(exc, ToolCallError):
        return exc
    if isinstance(exc, MCPError):
        return _map_mcp_error(exc, dispatched=dispatched)
    if isinstance(exc, TimeoutError):
        return ToolTimeoutError("timeout", possibly_executed=dispatched)
    if isinstance(exc, ValidationError | RuntimeError):
        # The SDK raises these for a result that breaks the protocol or the listed output schema.
        return ToolInvalidResultError("protocol_violation", possibly_executed=dispatched)
    if is_transport_failure(exc):
        return ToolUnavailableError("connection_lost", possibly_executed=dispatched)
    return ToolCallError("tool_failed", possibly_executed=dispatched)


def _map_mcp_error(exc: MCPError, *, dispatched: bool) -> ToolCallError:
    if exc.code == CONNECTION_CLOSED:
        return ToolUnavailableError("connection_lost", possibly_executed=dispatched)
    if exc.code == REQUEST_TIMEOUT:
        return ToolTimeoutError("timeout", possibly_executed=dispatched)
    if exc.code == INVALID_PARAMS:
        return ToolArgumentsError("server_rejected_arguments", possibly_executed=False)
    if exc.code == METHOD_NOT_FOUND:
        return ToolUnavailableError("method_not_found", possibly_executed=False)
    return ToolCallError("server_error", possibly_executed=dispatched)


def is_transport_failure(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection itself is gone (so the server needs reconnecting)."""
    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    if isinstance(exc, TimeoutError):  # an OSError subclass, but a slow call is not a dead link
        return False
    return isinstance(exc, OSError | httpx2.TransportError | EOFError) or type(exc).__name__ in {
        "BrokenResourceError",
        "ClosedResourceError",
        "EndOfStream",
    }


def counts_against_server(exc: ToolCallError) -> bool:
    """Failures that say the dependency is unhealthy (breaker food), not that one call was bad."""
    return exc.code in {ErrorCode.MCP_TOOL_TIMEOUT, ErrorCode.MCP_UNAVAILABLE}


def public_error(exc: ToolCallError) -> dict[str, Any]:
    """The user-safe ``error.v1`` fields of a tool failure (no internal details)."""
    info = CODES[exc.code]
    return {
        "code": exc.code.value,
        "category": info.category.value,
        "retryable": info.retryable,
        "user_message_key": info.user_message_key,
        "possibly_executed": exc.possibly_executed,
        "reason_code": str(exc),
    }
