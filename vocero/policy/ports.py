"""The small ports the action path needs besides :class:`~vocero.contracts.ports.ToolGateway`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from vocero.contracts.ports import CallMeta, ToolResult
from vocero.policy.canonical import Canonical, Context


@runtime_checkable
class SupportsLookup(Protocol):
    """A gateway that can reconcile an operation through the tool's ``lookup_tool``."""

    async def lookup(self, tool: str, meta: CallMeta) -> ToolResult: ...


class BuiltinTools(Protocol):
    """Vocero's own tools (``server: vocero``): dispatched here, never through MCP."""

    def handles(self, tool: str) -> bool: ...

    def schema(self, tool: str) -> dict[str, Any]: ...

    def canonicalize(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Canonical: ...

    async def call(
        self, tool: str, arguments: dict[str, Any], meta: CallMeta, *, session_id: str
    ) -> ToolResult:
        """Idempotent by ``meta.operation_id``: a repeat returns the first result."""
        ...


class Counter(Protocol):
    def count(self, name: str, amount: float = 1.0, **labels: str) -> None: ...


class NullCounter:
    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        return None


StepHook = Callable[[str, str], None]
"""``(step, operation_id)`` after each durable step commits: ``authorized``, ``dispatch_pending``,
``in_flight``, ``sent`` (the remote call returned, nothing recorded yet), ``committed``. Tests use
it to kill the process at each step; production passes nothing."""
