"""Policy plane: proposals, confirmations, evidence, the permit gate and durable execution.

The model proposes, the application decides, and a "yes" approves only the exact thing the caller
heard (``docs/adr/0009-policy-outside-the-llm.md``,
``docs/adr/0010-confirmation-and-idempotency.md``). Public surface: :class:`ActionPlane` (one per
process: the outbox worker and the repository) and its per-session :class:`SessionCoordinator`,
which implements :class:`vocero.contracts.actions.ActionCoordinator`.
"""

from vocero.policy.coordinator import CoordinatorSettings, SessionCoordinator
from vocero.policy.dispatch import ExecutorSettings
from vocero.policy.executor import OperationExecutor
from vocero.policy.gate import Decision, PermitRequest, permit
from vocero.policy.plane import ActionPlane

__all__ = [
    "ActionPlane",
    "CoordinatorSettings",
    "Decision",
    "ExecutorSettings",
    "OperationExecutor",
    "PermitRequest",
    "SessionCoordinator",
    "permit",
]
