"""The action path of one process, assembled: repository, targets, worker, system actions.

The composition root creates one :class:`ActionPlane`, hands it Vocero's built-in tools (a
:class:`~vocero.contracts.builtins.BuiltinSet` of the planes that implement them), runs
:meth:`run` in its task group (crash recovery happens there, before the worker claims anything)
and asks it for one :class:`SessionCoordinator` per session. :attr:`system_actions` is the entry
point for operations Vocero starts itself (the follow-up queue).
"""

from __future__ import annotations

from typing import Any

import anyio

from vocero.contracts.clock import SystemClock
from vocero.contracts.domain import AgentProfile, Caller
from vocero.contracts.ports import Clock, Timers, ToolGateway
from vocero.policy.coordinator import CoordinatorSettings, SessionCoordinator
from vocero.policy.dispatch import ExecutorSettings
from vocero.policy.executor import OperationExecutor
from vocero.policy.ports import BuiltinTools, Counter, StepHook
from vocero.policy.records import OperationRecord
from vocero.policy.repository import ActionRepository
from vocero.policy.system_actions import SystemOperations
from vocero.policy.targets import GatewayFactory, ProfileLookup, Targets
from vocero.store.engine import Store
from vocero.store.paging import Cursor, Page
from vocero.store.scope import EVERY_TENANT, OperatorScope


class ActionPlane:
    def __init__(
        self,
        store: Store,
        *,
        clock: Timers | None = None,
        builtins: BuiltinTools | None = None,
        profiles: ProfileLookup | None = None,
        gateway_for: GatewayFactory | None = None,
        executor_settings: ExecutorSettings | None = None,
        settings: CoordinatorSettings | None = None,
        metrics: Counter | None = None,
        hook: StepHook | None = None,
        owner: str = "",
        lease_ttl_s: float = 15.0,
        lease_clock: Clock | None = None,
    ) -> None:
        """``owner``: this process's node id (:class:`~vocero.store.leases.NodeLease`), under
        which outbox rows are held and renewed; empty for a plane without a node (tests,
        benchmarks), whose claims hold for ``lease_ttl_s`` unrenewed."""
        self.clock = clock or SystemClock()
        self.repo = ActionRepository(store, self.clock, owner=owner, lease_ttl_s=lease_ttl_s,
                                     lease_clock=lease_clock)
        self.builtins = builtins
        """``None``: built-in tools (``server: vocero``) are unavailable and denied."""
        self.targets = Targets(self.repo, builtins=self.builtins, profiles=profiles,
                               gateway_for=gateway_for)
        self.executor = OperationExecutor(self.repo, self.targets, settings=executor_settings,
                                          hook=hook, worker_id=owner)
        self.system_actions = SystemOperations(self.repo, self.executor, profiles=profiles,
                                               gateway_for=gateway_for, builtins=builtins)
        self.settings = settings or CoordinatorSettings()
        self.metrics = metrics

    def coordinator(
        self, *, session_id: str, caller: Caller, profile: AgentProfile,
        gateway: ToolGateway | None, keypad: bool = False,
    ) -> SessionCoordinator:
        """``keypad``: the caller can answer with keys (the phone): read-backs say how."""
        return SessionCoordinator(
            session_id=session_id, caller=caller, profile=profile, gateway=gateway,
            builtins=self.builtins, repo=self.repo, executor=self.executor, clock=self.clock,
            settings=self.settings, metrics=self.metrics, keypad=keypad,
        )

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Recover interrupted work, then run the outbox worker until cancelled."""
        await self.executor.run(task_status=task_status)

    async def drain(self, timeout_s: float = 5.0) -> None:
        await self.executor.drain(timeout_s)

    async def operations(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [op.public() for op in await self.repo.operations(session_id)]

    async def operations_page(
        self, session_id: str | None = None, *, cursor: Cursor | None = None, limit: int = 100,
        scope: OperatorScope = EVERY_TENANT,
    ) -> Page[OperationRecord]:
        """What ``GET /v1/operations`` lists: newest first, a page at a time, of ``scope``'s
        tenants."""
        return await self.repo.operations_page(session_id, cursor=cursor, limit=limit,
                                               scope=scope)
