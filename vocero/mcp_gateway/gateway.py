"""The per-session face of the MCP gateway: :class:`~vocero.contracts.ports.ToolGateway`.

A session's profile is its allowlist. ``definitions()`` shows the model only the profile's tools
whose pinned definitions are approved; ``call()`` resolves the model-facing name through the
profile, refuses anything else before a byte leaves the process, validates the arguments against
the pinned schema, sends the ``_meta`` of docs/mcp.md "A call", checks and wraps the result, and
audits the call. Prohibited tools and Vocero's built-in tools (``server: vocero``) are never
routed here.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

import anyio
import msgspec

from vocero.contracts.domain import AgentProfile, ToolDefinition, ToolSpec
from vocero.contracts.errors import ToolCallError, ToolNotAllowedError, ToolUnavailableError
from vocero.contracts.ports import CallMeta, InputHandler, ToolCallRequest, ToolResult
from vocero.contracts.prohibited import prohibited_tools
from vocero.mcp_gateway.connection import BUILTIN_SERVER, McpConnections, ServerConnection
from vocero.mcp_gateway.delegation import DelegationUnavailable
from vocero.mcp_gateway.errors import (
    INPUT_SECRET_REQUESTED,
    ToolInputError,
    ToolSecretInputError,
)
from vocero.mcp_gateway.model import RemoteResult
from vocero.mcp_gateway.outbox import record_safely
from vocero.mcp_gateway.questions import CallRoute
from vocero.mcp_gateway.resilience import backoff_delay

OPERATION_ID = "io.vocero/operation_id"
PRINCIPAL = "io.vocero/principal"
PROPOSAL = "io.vocero/proposal"
TRACEPARENT = "traceparent"


class CallObserver(Protocol):
    """Metrics hook (``tool_latency_ms``, errors by code); must not block."""

    def tool_call(self, tool: str, outcome: str, duration_ms: float) -> None: ...


def wire_meta(meta: CallMeta) -> dict[str, Any]:
    """The ``_meta`` of a call (docs/mcp.md "A call"), from the authenticated identity, never
    from model output."""
    principal = meta.principal
    wire: dict[str, Any] = {
        OPERATION_ID: meta.operation_id or f"op_{uuid.uuid4().hex}",
        PRINCIPAL: {
            "subject_ref": principal.subject_ref,
            "tenant_id": principal.tenant_id,
            "scopes": list(principal.scopes),
        },
    }
    if meta.proposal_id:
        wire[PROPOSAL] = {"proposal_id": meta.proposal_id, "revision": meta.revision}
    if meta.traceparent:
        wire[TRACEPARENT] = meta.traceparent
    return wire


@dataclass(frozen=True, slots=True)
class _Binding:
    spec: ToolSpec
    connection: ServerConnection


class McpGateway:
    """One session's allowlisted view of the shared connections (cheap to create)."""

    def __init__(
        self,
        connections: McpConnections,
        profile: AgentProfile,
        *,
        session_id: str = "",
        observer: CallObserver | None = None,
    ) -> None:
        self._connections = connections
        self._profile = profile
        self._session_id = session_id
        self._observer = observer
        self._bindings: dict[str, _Binding] = {}
        for spec in profile.tools:
            if spec.server == BUILTIN_SERVER or spec.action_class == "prohibited":
                continue
            if spec.server not in profile.mcp_servers:
                continue
            conn = connections.connection(spec.server)
            if conn is not None:
                self._bindings[spec.name] = _Binding(spec, conn)

    def definitions(self) -> Sequence[ToolDefinition]:
        """The profile's MCP tools whose pinned definitions are approved, under profile names."""
        found = []
        for name, binding in self._bindings.items():
            pin = binding.connection.pins.get(binding.spec.resolves_to)
            if pin is None or not pin.active:
                continue
            found.append(
                ToolDefinition(
                    name=name,
                    description=binding.spec.description or pin.description,
                    input_schema=pin.input_schema,
                    output_schema=pin.output_schema,
                    examples=list(binding.spec.examples),
                )
            )
        return found

    def refused(self) -> list[ToolDefinition]:
        """The profile's prohibited tools as material only (:mod:`vocero.contracts.prohibited`),
        each described, where the profile does not, by the line its server lists it with ("Take
        a night off a reservation's bill"): never callable, never offered; what tells the
        dialogue that a request in those words is one the agent refuses."""
        described = {}
        for spec in self._profile.tools:
            if spec.action_class != "prohibited" or spec.description:
                continue
            conn = self._connections.connection(spec.server)
            described[spec.name] = conn.described(spec.resolves_to) if conn is not None else ""
        return [
            msgspec.structs.replace(t, description=described.get(t.name) or t.description)
            for t in prohibited_tools(self._profile)
        ]

    def withheld(self, tool: str) -> str:
        """``tool_pending`` when ``tool`` (a profile name) is not offered because its server
        listed it for the first time under review and no operator has approved it yet; ""
        otherwise (changed, missing, rejected, not listed: ``tool_unavailable`` as before)."""
        binding = self._bindings.get(tool)
        if binding is None:
            return ""
        pin = binding.connection.pins.get(binding.spec.resolves_to)
        return "tool_pending" if pin is not None and pin.status == "pending" else ""

    async def call(
        self, request: ToolCallRequest, *, on_dispatched: Callable[[], None] | None = None
    ) -> ToolResult:
        """Validate and call; raises ``ToolCallError`` subclasses with stable codes.

        ``on_dispatched`` runs just before the request is handed to the transport: from then on a
        failure or cancellation means the operation may have been executed downstream.
        ``request.ask`` answers the server's questions during the call (docs/mcp.md "Questions
        from a server"); a question that ends without an accepted answer, followed by an error
        result, raises :class:`~vocero.mcp_gateway.errors.ToolInputError` with its reason.
        """
        binding = self._bindings.get(request.tool)
        if binding is None:
            await self._deny(request.tool, self._refusal(request.tool))
        missing = set(binding.spec.required_scopes) - set(request.meta.principal.scopes)
        if missing:
            await self._deny(request.tool, "missing_scope")
        spec = binding.spec
        return await self._execute(
            binding,
            spec.resolves_to,
            request.arguments,
            request.meta,
            retry=spec.action_class == "read" and spec.idempotent,
            on_dispatched=on_dispatched,
            ask=request.ask,
        )

    async def lookup(self, tool: str, meta: CallMeta) -> ToolResult:
        """Reconcile an operation of ``tool`` whose outcome is unknown, via its ``lookup_tool``."""
        binding = self._bindings.get(tool)
        if binding is None or not binding.spec.lookup_tool:
            await self._deny(tool, "no_lookup_tool")
        read_meta = msgspec.structs.replace(meta, proposal_id="", revision=0)
        arguments = {"operation_id": meta.operation_id}
        return await self._execute(
            binding, binding.spec.lookup_tool, arguments, read_meta, retry=True
        )

    # ------------------------------------------------------------------------------ inside

    def _refusal(self, tool: str) -> str:
        spec = self._profile.tool(tool)
        if spec is None:
            return "not_allowlisted"
        if spec.action_class == "prohibited":
            return "prohibited"
        if spec.server == BUILTIN_SERVER:
            return "builtin_tool"
        return "server_not_configured"

    async def _deny(self, tool: str, reason: str) -> NoReturn:
        denied = {"tool": tool, "reason": reason}
        await record_safely(
            self._connections.audit, "mcp.tool_denied", denied, session_id=self._session_id
        )
        raise ToolNotAllowedError(reason)

    async def _execute(
        self,
        binding: _Binding,
        server_tool: str,
        arguments: dict[str, Any],
        meta: CallMeta,
        *,
        retry: bool,
        on_dispatched: Callable[[], None] | None = None,
        ask: InputHandler | None = None,
    ) -> ToolResult:
        started = time.perf_counter()
        conn = binding.connection
        dispatched = False

        def mark_dispatched() -> None:
            nonlocal dispatched
            dispatched = True
            if on_dispatched is not None:
                on_dispatched()

        record = {
            "tool": binding.spec.name,
            "server": conn.name,
            "server_tool": server_tool,
            "operation_id": meta.operation_id,
            "arguments_sha256": _digest(arguments),
        }
        try:
            if conn.stale:
                await conn.ensure_fresh()
            conn.note_use()
            pin = conn.active_pin(server_tool)
            record["definition_hash"] = pin.definition_hash
            self._connections.validators.check_arguments(pin, arguments)
            raw, route = await self._send(
                binding, server_tool, arguments, meta, retry, mark_dispatched, ask
            )
            if raw.is_error and route.failure_reason:
                raise _input_error(route.failure_reason)
            result = self._connections.validators.check_result(pin, raw, tool=binding.spec.name)
        except ToolCallError as exc:
            await self._report(record, started, exc.code.value, str(exc), exc.possibly_executed)
            raise
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._report(record, started, "aborted", "cancelled", dispatched)
            raise
        await self._report(record, started, "ok", "is_error" if result.is_error else "", False)
        return result

    async def _send(
        self,
        binding: _Binding,
        server_tool: str,
        arguments: dict[str, Any],
        meta: CallMeta,
        retry: bool,
        on_dispatched: Callable[[], None],
        ask: InputHandler | None,
    ) -> tuple[RemoteResult, CallRoute]:
        settings = self._connections.settings
        attempts = 1 + (settings.read_retries if retry else 0)
        timeout_s = binding.spec.timeout_ms / 1000
        wire = wire_meta(meta)
        for attempt in range(attempts):
            try:
                return await binding.connection.invoke(
                    server_tool,
                    arguments,
                    wire,
                    timeout_s=timeout_s,
                    on_dispatched=on_dispatched,
                    call=meta,
                    ask=ask,
                    model_tool=binding.spec.name,
                )
            except DelegationUnavailable:
                raise  # no token for this caller: another attempt would fail the same way
            except ToolUnavailableError:
                if attempt + 1 >= attempts:
                    raise
            await anyio.sleep(backoff_delay(attempt + 1, settings.retry_base_s, timeout_s / 2))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _report(
        self, record: dict[str, Any], started: float, outcome: str, reason: str, executed: bool
    ) -> None:
        duration_ms = (time.perf_counter() - started) * 1000
        data = {
            **record,
            "outcome": outcome,
            "reason": reason,
            "possibly_executed": executed,
            "duration_ms": round(duration_ms, 3),
        }
        await record_safely(
            self._connections.audit, "mcp.tool_call", data, session_id=self._session_id
        )
        if self._observer is not None:
            self._observer.tool_call(record["tool"], outcome, duration_ms)


def _input_error(reason: str) -> ToolInputError:
    if reason == INPUT_SECRET_REQUESTED:
        return ToolSecretInputError(reason)
    return ToolInputError(reason)


def _digest(arguments: dict[str, Any]) -> str:
    try:
        encoded = msgspec.json.encode(arguments, order="sorted")
    except (TypeError, msgspec.EncodeError):
        encoded = repr(sorted(arguments)).encode()
    return hashlib.sha256(encoded).hexdigest()
