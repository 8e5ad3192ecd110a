"""One claimed operation driven to its end: dispatch, send, record, reconcile, resend.

:class:`Dispatcher` is what the outbox worker (:mod:`vocero.policy.executor`) runs for each
operation it claimed (``docs/adr/0010-confirmation-and-idempotency.md``). It marks an operation
``in_flight`` *before* the call leaves, and records ``committed`` (the owning service's receipt),
``rejected`` (a refusal, or proof that nothing was executed) or ``unknown`` (a timeout or crash
after sending). An ``unknown`` operation is reconciled through the tool's ``lookup_tool`` before
anything is sent again; only a proven absence, a built-in tool or a tool declared idempotent is
re-sent, and always under the same ``io.vocero/operation_id``. Each step is its own short
transaction, fenced by the worker's hold on the outbox row (:mod:`vocero.policy.outbox`): no
transaction is open while the remote call runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import anyio
import structlog

from vocero.contracts.errors import ToolCallError
from vocero.contracts.events import ToolStatus
from vocero.contracts.ports import CallMeta, ToolCallRequest, ToolResult
from vocero.policy.operations import FINAL_UNKNOWN, TERMINAL, InvalidOperationTransition
from vocero.policy.ports import StepHook, SupportsLookup
from vocero.policy.records import OperationRecord
from vocero.policy.repository import ActionRepository
from vocero.policy.targets import Target, Targets

log = structlog.get_logger("vocero.policy.executor")

Publish = Callable[[OperationRecord], None]
Outcome = tuple[OperationRecord, bool]
"""The operation as it stands now, and whether to go on with it at once (after a short pause)."""

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


class Dispatcher:
    """Moves claimed operations through their lifecycle, one step at a time, for one worker."""

    def __init__(
        self,
        repo: ActionRepository,
        targets: Targets,
        *,
        settings: ExecutorSettings,
        worker_id: str,
        publish: Publish,
        step: StepHook,
    ) -> None:
        self._repo = repo
        self._targets = targets
        self._settings = settings
        self._worker_id = worker_id
        self._publish = publish
        self._step = step
        self._reconciles: dict[str, int] = {}
        """Reconciliations tried per operation, until it settles."""
        self._waits: dict[str, int] = {}
        """Consecutive waits for an unreachable target per operation (the backoff's exponent)."""

    async def advance(self, op: OperationRecord) -> None:
        """Until the operation is terminal or handed back for a later claim."""
        while op.status not in TERMINAL:
            if op.status in ("authorized", "dispatch_pending"):
                op, again = await self._dispatch(op)
            elif op.status == "unknown":
                op, again = await self._reconcile(op)
            else:
                return
            if not again:
                return
            await anyio.sleep(self._settings.reconcile_delay_s)

    async def park(self, operation_id: str) -> None:
        """After an unexpected failure: hand the row back for later (never lose it)."""
        try:
            op = await self._repo.get(operation_id)
            if op is None or op.status in TERMINAL:
                return
            status: ToolStatus = "unknown" if op.status in ("in_flight", "unknown") \
                else "dispatch_pending"
            await self._move(op, status, reason="executor_error",
                             release_after_s=self._settings.retry_delay_s)
        except Exception:  # the next start recovers it
            log.exception("executor.park_failed", operation_id=operation_id)

    async def _dispatch(self, op: OperationRecord) -> Outcome:
        if self._expired(op):
            return await self._move(op, "rejected", reason="authorization_expired"), False
        target = await self._targets.resolve(op)
        if target is None or not target.reachable:
            waits = self._waits[op.id] = self._waits.get(op.id, 0) + 1
            delay = min(self._settings.retry_delay_s * 2 ** (waits - 1), 30.0)
            return await self._move(op, "dispatch_pending", reason="target_unavailable",
                                    release_after_s=delay), False
        self._waits.pop(op.id, None)
        return await self._send(op, target)

    async def _send(self, op: OperationRecord, target: Target) -> Outcome:
        try:
            op = await self._move(op, "in_flight", sent=True)
        except InvalidOperationTransition:  # withdrawn meanwhile: consent is checked here last
            current = await self._repo.get(op.id)
            if current is None or current.status not in TERMINAL:
                raise
            self._publish(current)
            return current, False
        try:
            with anyio.fail_after(target.tool.timeout_ms / 1000 + self._settings.call_margin_s):
                result = await self._call(op, target)
        except ToolCallError as exc:
            return await self._failed(op, exc)
        except TimeoutError:
            return await self._move(op, "unknown", reason="timeout"), True
        self._step("sent", op.id)
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
            ask=self._targets.asker(op.session_id)))

    async def _failed(self, op: OperationRecord, exc: ToolCallError) -> Outcome:
        code = exc.reason_code
        if exc.possibly_executed:
            return await self._move(op, "unknown", reason=code), True
        if exc.retryable and op.attempts < self._settings.max_attempts:
            return await self._move(op, "dispatch_pending", reason=code,
                                    release_after_s=self._settings.retry_delay_s), False
        return await self._move(op, "rejected", reason=code), False

    async def _reconcile(self, op: OperationRecord) -> Outcome:
        count = self._reconciles[op.id] = self._reconciles.get(op.id, 0) + 1
        if count > self._settings.max_reconciliations:
            return await self._move(op, "unknown", reason="reconciliation_failed",
                                    done=True), False
        target = await self._targets.resolve(op)
        if target is None or not target.reachable:
            return await self._move(op, "unknown", reason="target_unavailable",
                                    release_after_s=self._settings.retry_delay_s), False
        if target.tool.lookup_tool and isinstance(target.gateway, SupportsLookup):
            return await self._lookup(op, target, target.gateway)
        if target.tool.builtin or target.tool.idempotent:
            return await self._resend(op, target)
        return await self._move(op, "unknown", reason="reconciliation_required", done=True), False

    async def _lookup(
        self, op: OperationRecord, target: Target, gateway: SupportsLookup
    ) -> Outcome:
        try:
            with anyio.fail_after(target.tool.timeout_ms / 1000 + self._settings.call_margin_s):
                found = await gateway.lookup(op.tool, _meta(op))
        except (ToolCallError, TimeoutError):
            return await self._move(op, "unknown", reason="reconciliation_pending",
                                    release_after_s=self._settings.retry_delay_s), False
        state = str(found.content.get("status", "")) if not found.is_error else ""
        if state == "committed":
            receipt = found.content.get("receipt")
            content = receipt if isinstance(receipt, dict) else found.content
            return await self._move(op, "committed", reason="reconciled",
                                    receipt={"source": "lookup", "content": content}), False
        if state == "not_found":
            return await self._resend(op, target)
        return await self._move(op, "unknown", reason="reconciliation_pending",
                                release_after_s=self._settings.retry_delay_s), False

    async def _resend(self, op: OperationRecord, target: Target) -> Outcome:
        """The operation is proven absent (or the target deduplicates): send it again under the
        same id, unless its authorization or attempts are spent."""
        if self._expired(op):
            return await self._move(op, "rejected", reason="authorization_expired"), False
        if op.attempts >= self._settings.max_attempts:
            return await self._move(op, "rejected", reason="attempts_exhausted"), False
        return await self._send(op, target)

    async def _move(
        self, op: OperationRecord, status: ToolStatus, **changes: Any
    ) -> OperationRecord:
        moved = await self._repo.outbox.transition(
            op.id, status, holder=self._worker_id, **changes
        )
        self._publish(moved)
        self._step(status, op.id)
        if status in TERMINAL or moved.reason_code in FINAL_UNKNOWN:
            self._reconciles.pop(op.id, None)
            self._waits.pop(op.id, None)
        return moved

    def _expired(self, op: OperationRecord) -> bool:
        ttl = timedelta(seconds=self._settings.authorization_ttl_s)
        return op.proposal_id is not None and self._repo.now() >= op.created_at + ttl


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
