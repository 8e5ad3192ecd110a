"""The outbox worker: claim due operations, run each to its end, tell listeners every change.

One worker per process runs in the runtime's task group; several processes may share the outbox
(``docs/adr/0006-durable-state-and-leases.md``). The worker claims due rows under its process's
hold (its own, and those whose holder's lease ran out: a dead process's work is taken over, its
``in_flight`` operations become ``unknown``; see :mod:`vocero.policy.outbox`) and hands each to
its :class:`~vocero.policy.dispatch.Dispatcher`, which dispatches, records and reconciles it.
Every change is fenced by the hold: once another process took a row over, this worker's changes
to it are refused and it lets go. :class:`Watch` follows one operation for a session.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import anyio
import structlog

from vocero.contracts.ports import Timers
from vocero.policy.dispatch import Dispatcher, ExecutorSettings
from vocero.policy.operations import settled
from vocero.policy.ports import StepHook
from vocero.policy.records import OperationRecord
from vocero.policy.repository import ActionRepository
from vocero.policy.targets import Targets
from vocero.store.leases import LeaseLostError

__all__ = ["ExecutorSettings", "OperationExecutor", "Watch", "settled"]

log = structlog.get_logger("vocero.policy.executor")

Listener = Callable[[OperationRecord], None]


class OperationExecutor:
    """The worker loop of one process: claims due outbox rows up to its concurrency, runs each
    on its dispatcher, tells each operation's listeners of every change, drains on shutdown."""

    def __init__(
        self,
        repo: ActionRepository,
        targets: Targets,
        *,
        settings: ExecutorSettings | None = None,
        hook: StepHook | None = None,
        worker_id: str = "",
    ) -> None:
        self.repo = repo
        self.targets = targets
        self.settings = settings or ExecutorSettings()
        self.worker_id = worker_id or f"wrk_{uuid.uuid4().hex[:12]}"
        self._hook = hook
        self._listeners: dict[str, list[Listener]] = {}
        self._wake = anyio.Event()
        self._running = 0
        self._idle = anyio.Event()
        self._idle.set()
        self._stopping = False
        self._busy: set[str] = set()
        """Operations this worker is processing now (never claimed twice at once)."""
        self.running = False
        self._dispatcher = Dispatcher(repo, targets, settings=self.settings,
                                      worker_id=self.worker_id, publish=self.publish,
                                      step=self.step)

    def subscribe(self, operation_id: str, listener: Listener) -> Callable[[], None]:
        """Hear every status change of one operation until the returned function is called."""
        self._listeners.setdefault(operation_id, []).append(listener)

        def unsubscribe() -> None:
            listeners = self._listeners.get(operation_id, [])
            if listener in listeners:
                listeners.remove(listener)
            if not listeners:
                self._listeners.pop(operation_id, None)

        return unsubscribe

    def nudge(self) -> None:
        """New work was committed: claim it now rather than at the next poll."""
        self._wake.set()

    def step(self, name: str, operation_id: str) -> None:
        if self._hook is not None:
            self._hook(name, operation_id)

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Claim and process due work (a dead process's included) until cancelled."""
        log.info("executor.started", worker_id=self.worker_id)
        async with anyio.create_task_group() as tg:
            self.running = True
            task_status.started()
            try:
                while not self._stopping:
                    self._wake = anyio.Event()
                    try:
                        await self._claim(tg)
                    except Exception as exc:  # the store is unreachable: nothing is claimed
                        log.warning("executor.claim_failed", error=type(exc).__name__)
                    with anyio.move_on_after(self.settings.poll_interval_s):
                        await self._wake.wait()
            finally:
                self.running = False

    async def drain(self, timeout_s: float) -> None:
        """Stop claiming and give in-flight operations ``timeout_s`` to finish their bookkeeping."""
        self._stopping = True
        self._wake.set()
        with anyio.move_on_after(timeout_s, shield=True):
            await self._idle.wait()

    async def _claim(self, tg: anyio.abc.TaskGroup) -> None:
        room = self.settings.max_concurrency - self._running
        busy = frozenset(self._busy)
        for op in await self.repo.outbox.claim_due(self.worker_id, room, busy=busy):
            if op.reason_code == "interrupted" and op.status == "unknown":
                log.info("executor.took_over", operation_id=op.id, worker_id=self.worker_id)
            self._busy.add(op.id)
            self.publish(op)
            if op.status == "dispatch_pending":
                self.step("dispatch_pending", op.id)
            self._running += 1
            self._idle = anyio.Event() if self._idle.is_set() else self._idle
            tg.start_soon(self._process, op)

    async def _process(self, op: OperationRecord) -> None:
        try:
            await self._dispatcher.advance(op)
        except LeaseLostError:  # another process holds it now: its worker carries on
            log.warning("executor.hold_lost", operation_id=op.id, worker_id=self.worker_id)
        except Exception:  # one operation's failure must not stop the worker
            log.exception("executor.operation_failed", operation_id=op.id)
            await self._dispatcher.park(op.id)
        finally:
            self._busy.discard(op.id)
            self._running -= 1
            if self._running == 0:
                self._idle.set()

    def publish(self, op: OperationRecord) -> None:
        """Tell the operation's listeners of a change (the worker's, or a withdrawal)."""
        for listener in list(self._listeners.get(op.id, [])):
            try:
                listener(op)
            except Exception:  # a listener never breaks the worker
                log.exception("executor.listener_failed", operation_id=op.id)


class Watch:
    """Follows one operation: forwards every status change and notes when it settled
    (``committed``, ``rejected``, or ``unknown`` with nothing more the worker can learn)."""

    def __init__(
        self,
        executor: OperationExecutor,
        operation_id: str,
        on_change: Listener,
        clock: Timers | None = None,
    ) -> None:
        self._clock = clock
        self._executor = executor
        self._operation_id = operation_id
        self._on_change = on_change
        self.settled = anyio.Event()
        self.last: OperationRecord | None = None
        self._unsubscribe = executor.subscribe(operation_id, self._seen)

    def _seen(self, op: OperationRecord) -> None:
        self.last = op
        self._on_change(op)
        if settled(op):
            self.settled.set()

    async def wait(self, timeout_s: float) -> OperationRecord | None:
        """Until settled or ``timeout_s``; the latest record either way."""
        self._executor.nudge()
        current = await self._executor.repo.get(self._operation_id)
        if current is not None and settled(current):
            return current
        deadline = (
            self._clock.move_on_after(timeout_s) if self._clock else anyio.move_on_after(timeout_s)
        )
        with deadline:
            await self.settled.wait()
        return self.last or current

    def close(self) -> None:
        self._unsubscribe()

