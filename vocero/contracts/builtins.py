"""The port of Vocero's own tools (``server: vocero`` in a profile): follow-ups, knowledge search.

The policy plane dispatches to them exactly as it dispatches to MCP tools, through the same gate;
the planes that implement them (``vocero.followups``, ``vocero.speech``) never import the policy
plane, and the composition root wires them in. Canonicalisation happens while the call is live,
so it sees the conversation *as heard* (:attr:`Context.history`); execution may happen later, from
the outbox, and sees only the canonical arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vocero.contracts.ports import CallMeta, Message, ToolResult

VOCERO_SERVER = "vocero"
"""The ``server`` of Vocero's own built-in tools in a profile."""
FOLLOWUPS_TOOL = "followups.record"
KNOWLEDGE_TOOL = "knowledge.search"
HANDOFF_TOOL = "handoff.request"
CARRIER_CALL_TOOL = "carrier.call"
"""The built-ins' own names (a profile's ``resolves_to``; the model-facing name may differ)."""


class CanonicalError(ValueError):
    """A value cannot be made explicit without guessing; ``question`` asks the caller.

    ``reason_code`` is the denial's stable code; ``result`` (optional) is what the model sees as
    the tool's answer, so it can never report something that did not happen (a built-in tool
    that refuses a record says ``NOT recorded`` here)."""

    def __init__(
        self,
        field: str,
        problem: str,
        question: str,
        *,
        reason_code: str = "arguments_unresolved",
        result: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
        self.question = question
        self.reason_code = reason_code
        self.result = dict(result) if result is not None else None


@dataclass(frozen=True, slots=True)
class Canonical:
    arguments: dict[str, Any]
    target_resource: str = ""
    object_version: str = ""
    claimed_tenant: str = ""
    """A tenant the model's arguments named other than the caller's ("" when none)."""
    dropped: tuple[str, ...] = ()
    """Principal keys the model tried to set; never forwarded."""


def zone_of(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


@dataclass(frozen=True, slots=True)
class Context:
    """The trusted facts canonicalisation resolves against."""

    tenant: str
    timezone: str
    now: datetime
    server: str = ""
    observed_versions: Mapping[str, int] = field(default_factory=dict)
    history: Sequence[Message] = ()
    """The conversation as the caller heard it (caller turns, assistant text as played, tool
    messages), oldest first; empty outside a live call."""
    locale: str = "en-US"
    subject_ref: str = ""

    @property
    def zone(self) -> ZoneInfo:
        return zone_of(self.timezone)

    @property
    def today(self) -> date:
        return self.now.astimezone(self.zone).date()


class BuiltinTools(Protocol):
    """Vocero's own tools (``server: vocero``): dispatched by the policy plane, not MCP."""

    def handles(self, tool: str) -> bool: ...

    def schema(self, tool: str) -> dict[str, Any]: ...

    def canonicalize(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Canonical: ...

    async def call(
        self, tool: str, arguments: dict[str, Any], meta: CallMeta, *, session_id: str
    ) -> ToolResult:
        """Idempotent by ``meta.operation_id``: a repeat returns the first result."""
        ...


class BuiltinSet:
    """Several :class:`BuiltinTools` as one: the first that handles a tool name owns it."""

    def __init__(self, *members: BuiltinTools) -> None:
        self._members = members

    def _owner(self, tool: str) -> BuiltinTools:
        for member in self._members:
            if member.handles(tool):
                return member
        raise KeyError(tool)

    def handles(self, tool: str) -> bool:
        return any(m.handles(tool) for m in self._members)

    def schema(self, tool: str) -> dict[str, Any]:
        return self._owner(tool).schema(tool)

    def canonicalize(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Canonical:
        return self._owner(tool).canonicalize(tool, arguments, ctx)

    async def call(
        self, tool: str, arguments: dict[str, Any], meta: CallMeta, *, session_id: str
    ) -> ToolResult:
        if not self.handles(tool):
            return ToolResult(content={"error": "unknown_tool"}, is_error=True)
        return await self._owner(tool).call(tool, arguments, meta, session_id=session_id)
