"""The outbox worker: claim, dispatch with a stable operation id, record, reconcile, recover.

One worker per process runs in the runtime's task group; several processes may share the outbox.
The worker claims due rows under its process's hold (its own, and those whose holder's lease ran
out: a dead process's work is taken over, its ``in_flight`` operations become ``unknown``; see
:mod:`vocero.policy.repository`), moves ``authorized`` -> ``dispatch_pending``, marks each
``in_flight`` *before* the call leaves, and records ``committed`` (the owning service's receipt),
``rejected`` (a refusal, or proof that nothing was executed) or ``unknown`` (a timeout or crash
after sending). Every change is fenced by the hold: once another process took a row over, this
worker's changes to it are refused and it lets go.
An ``unknown`` operation is reconciled through the tool's ``lookup_tool`` before anything is
sent again; only a proven absence, a built-in tool or a tool declared idempotent is re-sent, and
always under the same ``io.vocero/operation_id``. Each step is its own short transaction: no
transaction is open while the remote call runs.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import anyio
import structlog

from vocero.contracts.domain import AgentProfile
from vocero.contracts.errors import ToolCallError
from vocero.contracts.events import ToolStatus
from vocero.contracts.ports import (
    CallMeta,
    InputHandler,
    Timers,
    ToolCallRequest,
    ToolGateway,
    ToolResult,
)
from vocero.policy.gate import ResolvedTool, resolve
from vocero.policy.operations import TERMINAL, InvalidOperationTransition
from vocero.policy.ports import BuiltinTools, StepHook, SupportsLookup
from vocero.policy.records import OperationRecord
from vocero.policy.repository import ActionRepository
from vocero.store.leases import LeaseLostError

log = structlog.get_logger("vocero.policy.executor")

Listener = Callable[[OperationRecord], None]
_CODE = re.compile(r"^([a-z][a-z0-9_]{1,47})\b")
_SDK_PREFIX = re.compile(r"^Error executing tool [\w.\-]+:\s*")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutorSettings:
    max_attempts: int = 3
    """Sends of one operation, all under the same operation id."""
    max_reconciliations: int = 5
    max_concurrency: int = 16
    poll_interval_s: float = 0.5
    reconcile_delay_s: float = 0.1
    retry_delay_s: float = 0.5
    authorization_ttl_s: float = 300.0
    """An authorized operation not sent within this is rejected ``authorization_expired``."""
    call_margin_s: float = 2.0
    """Outer guard beyond the tool's own ``timeout_ms``."""


@dataclass(frozen=True, slots=True)
class Target:
    tool: ResolvedTool
    gateway: ToolGateway | None
    builtins: BuiltinTools | None


ProfileLookup = Callable[[str, str], AgentProfile | None]
GatewayFactory = Callable[[AgentProfile], ToolGateway | None]


class Targets:
    """Where an operation goes: its live session's gateway, or after a restart a gateway the
    application builds for the session's profile. The resolved tool must still be the one that
    was authorized, or nothing is sent."""

    def __init__(
        self,
        repo: ActionRepository,
        *,
        builtins: BuiltinTools | None,
        profiles: ProfileLookup | None = None,
        gateway_for: GatewayFactory | None = None,
    ) -> None:
        self._repo = repo
        self._builtins = builtins
        self._profiles = profiles
        self._gateway_for = gateway_for
        self._live: dict[str, tuple[AgentProfile, ToolGateway | None]] = {}
        self._askers: dict[str, InputHandler] = {}
        self._recovered: dict[str, tuple[AgentProfile, ToolGateway | None]] = {}

    def attach(self, session_id: str, profile: AgentProfile, gateway: ToolGateway | None) -> None:
        self._live[session_id] = (profile, gateway)

    def detach(self, session_id: str) -> None:
        self._live.pop(session_id, None)
        self._askers.pop(session_id, None)

    def set_asker(self, session_id: str, ask: InputHandler | None) -> None:
        """Who answers a server's questions during this session's calls (the live session);
        none: every question is declined (``input_unavailable``)."""
        if ask is None:
            self._askers.pop(session_id, None)
        else:
            self._askers[session_id] = ask

    def asker(self, session_id: str) -> InputHandler | None:
        return self._askers.get(session_id)

    async def resolve(self, op: OperationRecord) -> Target | None:
        found = self._live.get(op.session_id) or await self._recover(op.session_id)
        if found is None:
            return None
        profile, gateway = found
        tool = resolve(profile, op.tool)
        if tool is None or (tool.server, tool.tool) != (op.server, op.resolved_tool):
            return None
        return Target(tool=tool, gateway=gateway, builtins=self._builtins)

    async def _recover(self, session_id: str) -> tuple[AgentProfile, ToolGateway | None] | None:
        if session_id in self._recovered:
            return self._recovered[session_id]
        if self._profiles is None:
            return None
        ref = await self._repo.session_profile(session_id)
        profile = None if ref is None else self._profiles(*ref)
        if profile is None:
            return None
        gateway = self._gateway_for(profile) if self._gateway_for is not None else None
        self._recovered[session_id] = (profile, gateway)
        return profile, gateway


class OperationExecutor:
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
        self._reconciles: dict[str, int] = {}
        self._waits: dict[str, int] = {}
        self._busy: set[str] = set()
        """Operations this worker is processing now (never claimed twice at once)."""
        self.running = False

    # ------------------------------------------------------------------------- public

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

    # ----------------------------------------------------------------------- internals

    async def _claim(self, tg: anyio.abc.TaskGroup) -> None:
        room = self.settings.max_concurrency - self._running
        for op in await self.repo.claim_due(self.worker_id, room, busy=frozenset(self._busy)):
            if op.reason_code == "interrupted" and op.status == "unknown":
                log.info("executor.took_over", operation_id=op.id, worker_id=self.worker_id)
            self._busy.add(op.id)
            self._publish(op)
            if op.status == "dispatch_pending":
                self.step("dispatch_pending", op.id)
            self._running += 1
            self._idle = anyio.Event() if self._idle.is_set() else self._idle
            tg.start_soon(self._process, op)

    async def _process(self, op: OperationRecord) -> None:
        try:
            await self._advance(op)
        except LeaseLostError:  # another process holds it now: its worker carries on
            log.warning("executor.hold_lost", operation_id=op.id, worker_id=self.worker_id)
        except Exception:  # one operation's failure must not stop the worker
            log.exception("executor.operation_failed", operation_id=op.id)
            await self._park(op.id)
        finally:
            self._busy.discard(op.id)
            self._running -= 1
            if self._running == 0:
                self._idle.set()

    async def _advance(self, op: OperationRecord) -> None:
        while op.status not in TERMINAL:
            if op.status in ("authorized", "dispatch_pending"):
                op, again = await self._dispatch(op)
            elif op.status == "unknown":
                op, again = await self._reconcile(op)
            else:
                return
            if not again:
                return
            await anyio.sleep(self.settings.reconcile_delay_s)

    async def _dispatch(self, op: OperationRecord) -> tuple[OperationRecord, bool]:
        if self._expired(op):
            return await self._move(op, "rejected", reason="authorization_expired"), False
        target = await self.targets.resolve(op)
        if target is None or not _reachable(target):
            waits = self._waits[op.id] = self._waits.get(op.id, 0) + 1
            delay = min(self.settings.retry_delay_s * 2 ** (waits - 1), 30.0)
            return await self._move(op, "dispatch_pending", reason="target_unavailable",
                                    release_after_s=delay), False
        self._waits.pop(op.id, None)
        return await self._send(op, target)

    async def _send(self, op: OperationRecord, target: Target) -> tuple[OperationRecord, bool]:
        try:
            op = await self._move(op, "in_flight", sent=True)
        except InvalidOperationTransition:  # withdrawn meanwhile: consent is checked here last
            current = await self.repo.get(op.id)
            if current is None or current.status not in TERMINAL:
                raise
            self._publish(current)
            return current, False
        try:
            with anyio.fail_after(target.tool.timeout_ms / 1000 + self.settings.call_margin_s):
                result = await self._call(op, target)
        except ToolCallError as exc:
            return await self._failed(op, exc)
        except TimeoutError:
            return await self._move(op, "unknown", reason="timeout"), True
        self.step("sent", op.id)
        if result.is_error:
            return await self._move(op, "rejected", reason=refusal_code(result),
                                    receipt=_receipt(result, "dispatch")), False
        return await self._move(op, "committed", receipt=_receipt(result, "dispatch")), False

    async def _call(self, op: OperationRecord, target: Target) -> ToolResult:
        meta = _meta(op)
        if target.tool.builtin:
            assert target.builtins is not None
            return await target.builtins.call(target.tool.tool, op.arguments, meta,
                                              session_id=op.session_id)
        assert target.gateway is not None
        return await target.gateway.call(ToolCallRequest(
            tool=op.tool, arguments=op.arguments, meta=meta,
            ask=self.targets.asker(op.session_id)))

    async def _failed(
        self, op: OperationRecord, exc: ToolCallError
    ) -> tuple[OperationRecord, bool]:
        code = exc.reason_code
        if exc.possibly_executed:
            return await self._move(op, "unknown", reason=code), True
        if exc.retryable and op.attempts < self.settings.max_attempts:
            return await self._move(op, "dispatch_pending", reason=code,
                                    release_after_s=self.settings.retry_delay_s), False
        return await self._move(op, "rejected", reason=code), False

    async def _reconcile(self, op: OperationRecord) -> tuple[OperationRecord, bool]:
        count = self._reconciles[op.id] = self._reconciles.get(op.id, 0) + 1
        if count > self.settings.max_reconciliations:
            return await self._move(op, "unknown", reason="reconciliation_failed",
                                    done=True), False
        target = await self.targets.resolve(op)
        if target is None or not _reachable(target):
            return await self._move(op, "unknown", reason="target_unavailable",
                                    release_after_s=self.settings.retry_delay_s), False
        if target.tool.lookup_tool and isinstance(target.gateway, SupportsLookup):
            return await self._lookup(op, target, target.gateway)
        if target.tool.builtin or target.tool.idempotent:
            return await self._resend(op, target)
        return await self._move(op, "unknown", reason="reconciliation_required", done=True), False

    async def _lookup(
        self, op: OperationRecord, target: Target, gateway: SupportsLookup
    ) -> tuple[OperationRecord, bool]:
        try:
            with anyio.fail_after(target.tool.timeout_ms / 1000 + self.settings.call_margin_s):
                found = await gateway.lookup(op.tool, _meta(op))
        except (ToolCallError, TimeoutError):
            return await self._move(op, "unknown", reason="reconciliation_pending",
                                    release_after_s=self.settings.retry_delay_s), False
        state = str(found.content.get("status", "")) if not found.is_error else ""
        if state == "committed":
            receipt = found.content.get("receipt")
            content = receipt if isinstance(receipt, dict) else found.content
            return await self._move(op, "committed", reason="reconciled",
                                    receipt={"source": "lookup", "content": content}), False
        if state == "not_found":
            return await self._resend(op, target)
        return await self._move(op, "unknown", reason="reconciliation_pending",
                                release_after_s=self.settings.retry_delay_s), False

    async def _resend(self, op: OperationRecord, target: Target) -> tuple[OperationRecord, bool]:
        """The operation is proven absent (or the target deduplicates): send it again under the
        same id, unless its authorization or attempts are spent."""
        if self._expired(op):
            return await self._move(op, "rejected", reason="authorization_expired"), False
        if op.attempts >= self.settings.max_attempts:
            return await self._move(op, "rejected", reason="attempts_exhausted"), False
        return await self._send(op, target)

    async def _move(
        self, op: OperationRecord, status: ToolStatus, **changes: Any
    ) -> OperationRecord:
        moved = await self.repo.transition(op.id, status, holder=self.worker_id, **changes)
        self._publish(moved)
        self.step(status, op.id)
        if status in TERMINAL or moved.reason_code in FINAL_UNKNOWN:
            self._reconciles.pop(op.id, None)
            self._waits.pop(op.id, None)
        return moved

    async def _park(self, operation_id: str) -> None:
        """After an unexpected failure: hand the row back for later (never lose it)."""
        try:
            op = await self.repo.get(operation_id)
            if op is None or op.status in TERMINAL:
                return
            status: ToolStatus = "unknown" if op.status in ("in_flight", "unknown") \
                else "dispatch_pending"
            await self._move(op, status, reason="executor_error",
                             release_after_s=self.settings.retry_delay_s)
        except Exception:  # the next start recovers it
            log.exception("executor.park_failed", operation_id=operation_id)

    def _expired(self, op: OperationRecord) -> bool:
        ttl = timedelta(seconds=self.settings.authorization_ttl_s)
        return op.proposal_id is not None and self.repo.now() >= op.created_at + ttl

    def publish(self, op: OperationRecord) -> None:
        """Tell the operation's listeners of a change made outside the worker (a withdrawal)."""
        self._publish(op)

    def _publish(self, op: OperationRecord) -> None:
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


def settled(op: OperationRecord) -> bool:
    return op.status in TERMINAL or (op.status == "unknown" and op.reason_code in FINAL_UNKNOWN)


FINAL_UNKNOWN = frozenset({"reconciliation_required", "reconciliation_failed"})
"""Unknown for good: the worker will not learn more without an operator."""


def _reachable(target: Target) -> bool:
    if target.tool.builtin:
        return target.builtins is not None and target.builtins.handles(target.tool.tool)
    return target.gateway is not None


def _meta(op: OperationRecord) -> CallMeta:
    return CallMeta(operation_id=op.id, principal=op.principal,
                    proposal_id=op.proposal_id or "", revision=op.revision or 0)


def _receipt(result: ToolResult, source: str) -> dict[str, Any]:
    return {"source": source, "content": result.content}


def refusal_code(result: ToolResult) -> str:
    """The owning service's stable code for a refusal ("not_found: ..." -> ``not_found``)."""
    message = str(result.content.get("error") or result.content.get("code") or "")
    match = _CODE.match(_SDK_PREFIX.sub("", message.strip()))
    return match.group(1) if match else "refused"
