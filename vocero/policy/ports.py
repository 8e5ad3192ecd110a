"""The small ports the action path needs besides :class:`~vocero.contracts.ports.ToolGateway`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from vocero.contracts.builtins import BuiltinTools
from vocero.contracts.ports import CallMeta, ToolResult

__all__ = [
    "BuiltinTools", "Counter", "NullCounter", "StepHook", "SupportsLookup", "SupportsWithheld",
]


@runtime_checkable
class SupportsLookup(Protocol):
    """A gateway that can reconcile an operation through the tool's ``lookup_tool``."""

    async def lookup(self, tool: str, meta: CallMeta) -> ToolResult: ...


@runtime_checkable
class SupportsWithheld(Protocol):
    """A gateway that can say why a profile tool it does not offer is withheld."""

    def withheld(self, tool: str) -> str:
        """A reason code (``tool_pending``: its definition awaits an operator's approval), or
        "" when it is not withheld for a reason the caller should hear apart."""
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
