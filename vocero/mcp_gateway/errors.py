"""How MCP and transport failures become the stable ``error.v1`` codes of docs/protocol.md.

Every failure leaves the gateway as a :class:`~vocero.contracts.errors.ToolCallError` whose message
is a short reason token (``timeout``, ``circuit_open``, ...): never a server URL, an argument value,
a stack trace or text a server sent. ``possibly_executed`` is set whenever the request may have
reached the server, so a write in that state is reconciled, never blindly repeated.
"""

from __future__ import annotations

import re
from typing import Any

import httpx2
from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    REQUEST_TIMEOUT,
    URL_ELICITATION_REQUIRED,
)
from pydantic import ValidationError

from vocero.contracts.errors import (
    CODES,
    ErrorCode,
    ToolArgumentsError,
    ToolCallError,
    ToolChangedError,
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


class ServerRefusedError(ToolUnavailableError):
    """A server the gateway will not connect to: it did not negotiate the pinned revision, or
    its configuration cannot work (OAuth over stdio). Nothing is spawned or contacted again."""


CandidateDisabledError = ServerRefusedError
"""Former name (2026-07-28 was a flagged candidate before docs/adr/0007)."""


class ServerAuthError(ToolUnavailableError):
    """The server refused the gateway's credentials and no new token could be obtained
    (``server_auth_failed``), or it needs an operator's consent first
    (``server_authorization_required``). Nothing was executed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, possibly_executed=False)


INPUT_DECLINED = "input_declined"
INPUT_CANCELLED = "input_cancelled"
INPUT_TIMEOUT = "input_timeout"
INPUT_SECRET_REQUESTED = "input_secret_requested"
INPUT_SCHEMA_UNSUPPORTED = "input_schema_unsupported"
INPUT_URL_REJECTED = "input_url_rejected"
INPUT_INVALID = "input_invalid"
INPUT_UNAVAILABLE = "input_unavailable"
INPUT_UNROUTABLE = "input_unroutable"
INPUT_NOT_COMPLETED = "input_not_completed"
"""The caller agreed to open a server's page, but the server never said it was done."""
LINKS_REQUIRED = "url_elicitation_required"
"""The server wants the caller on a page first (2025-11-25 ``-32042``) and it could not be
followed: no caller to ask, a malformed or over-long list of links, or asked again too often."""
INPUT_REASONS = frozenset(
    {
        INPUT_DECLINED,
        INPUT_CANCELLED,
        INPUT_TIMEOUT,
        INPUT_SECRET_REQUESTED,
        INPUT_SCHEMA_UNSUPPORTED,
        INPUT_URL_REJECTED,
        INPUT_INVALID,
        INPUT_UNAVAILABLE,
        INPUT_UNROUTABLE,
        INPUT_NOT_COMPLETED,
        LINKS_REQUIRED,
    }
)
"""Stable reason codes of a server's question that did not end in an accepted answer."""


class ToolInputError(ToolCallError):
    """A server asked a question during the call and got no accepted answer (declined,
    cancelled, timed out, refused by the gateway); the server was told, and its result was an
    error. The message is one of :data:`INPUT_REASONS`."""

    code = ErrorCode.MCP_TOOL_ERROR

    def __init__(self, reason: str) -> None:
        super().__init__(reason, possibly_executed=False)

    @property
    def reason_code(self) -> str:
        """How the question ended (``input_timeout``, ``input_declined`` ...), the message:
        the agent's words for the call depend on it."""
        return str(self)


class ToolSecretInputError(ToolInputError):
    """The server asked for a secret (password, token, card number): never asked by voice."""

    code = ErrorCode.TOOL_DENIED


class ToolPendingError(ToolChangedError):
    """The tool was seen for the first time under ``--tool-approval review`` (or a profile's
    ``tool_approval: review``) and no operator has approved its definition yet: nothing is sent.
    """

    @property
    def reason_code(self) -> str:
        return "tool_pending"


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
    if isinstance(exc, OAuthFlowError | OAuthTokenError | OAuthRegistrationError):
        # The HTTP auth flow failed before the request reached the server.
        return ServerAuthError(auth_reason(exc))
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
    if exc.code == URL_ELICITATION_REQUIRED:
        # The server wants the caller to visit a page first (2025-11-25 -32042); nothing ran.
        return ToolInputError(LINKS_REQUIRED)
    return ToolCallError("server_error", possibly_executed=dispatched)


def auth_reason(exc: BaseException) -> str:
    """``server_authorization_required`` when only an operator's consent can help (no way to
    run the authorization-code flow unattended), else ``server_auth_failed``."""
    text = str(exc)
    if "redirect handler" in text or "callback handler" in text or "consent" in text:
        return "server_authorization_required"
    return "server_auth_failed"


_OAUTH_ERROR_CODE = re.compile(r'"error"\s*:\s*"([A-Za-z0-9_.-]{1,64})"')


def consent_failure(exc: BaseException) -> str:
    """Why an operator's answer brought no tokens, as a reason code: the authorization
    server's own error for the code (``invalid_grant`` ...), ``issuer_mismatch`` for an
    ``iss`` that is not the server's, ``token_exchange_failed``,
    ``authorization_server_unreachable`` or ``authorization_failed``."""
    found = find_auth_failure(exc)
    if isinstance(found, OAuthTokenError):
        code = _OAUTH_ERROR_CODE.search(str(found))
        return code.group(1) if code else "token_exchange_failed"
    if isinstance(found, OAuthFlowError) and re.search(r"\biss\b", str(found)):
        return "issuer_mismatch"
    if found is None and is_transport_failure(exc):
        return "authorization_server_unreachable"
    return "authorization_failed"


def find_auth_failure(exc: BaseException) -> BaseException | None:
    """The OAuth failure inside ``exc`` (the SDK raises it from the HTTP auth flow, often
    wrapped in task-group exception groups)."""
    if isinstance(exc, OAuthFlowError | OAuthTokenError | OAuthRegistrationError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := find_auth_failure(inner)) is not None:
                return found
    cause = exc.__cause__ or exc.__context__
    if cause is not None and cause is not exc and isinstance(cause, Exception):
        return find_auth_failure(cause) if not isinstance(cause, ToolCallError) else None
    return None


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
