"""What a ``run`` plan of one session may execute
(``docs/adr/0010-confirmation-and-idempotency.md``).

A plan only names a tool call id; what runs under it (the resolved tool, the canonical arguments,
the proposal revision it was authorized for) is kept here, never taken from the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vocero.contracts.actions import ToolPlan
from vocero.policy.gate import ResolvedTool


@dataclass(slots=True)
class Runnable:
    """What a ``run`` plan may execute, kept here: the plan itself is never trusted."""

    tool: ResolvedTool
    arguments: dict[str, Any]
    arguments_hash: str
    proposal_id: str = ""
    revision: int = 0
    operation_id: str = ""
    traceparent: str = ""


class Runnables:
    """The runnables of one session by tool call id: added when a read is permitted or a write
    allowed or confirmed, looked up when a plan asks to run."""

    def __init__(self) -> None:
        self._by_call: dict[str, Runnable] = {}

    def allow(self, call_id: str, runnable: Runnable) -> None:
        self._by_call[call_id] = runnable

    def matching(self, plan: ToolPlan) -> Runnable | None:
        """The runnable of ``plan``'s call id, only if it is for the plan's proposal revision."""
        runnable = self._by_call.get(plan.tool_call_id)
        if runnable is None or (runnable.proposal_id, runnable.revision) != (
            plan.proposal_id,
            plan.revision,
        ):
            return None
        return runnable

    def discard(self, call_id: str) -> None:
        self._by_call.pop(call_id, None)
