"""One session's execution: what a ``run`` plan may do, done once.

A read runs at once through the gateway (it has no effect to protect) and is recorded after it
finished. A write is authorized in one transaction
(``docs/adr/0010-confirmation-and-idempotency.md``): the proposal revision is reloaded from storage,
the final gate runs over it, and the operation and its outbox row are written together; the outbox
worker (:mod:`vocero.policy.executor`) does the rest, and :class:`Execution` follows the operation
until it settles or the caller has waited long enough. A confirmed write not yet sent can still be
withdrawn.
"""

from __future__ import annotations

from typing import Any

import anyio
import structlog

from vocero.contracts.actions import StatusCallback, ToolOutcome, ToolPlan, TurnRef
from vocero.contracts.errors import ToolCallError
from vocero.contracts.events import ToolStatus
from vocero.contracts.ports import CallMeta, InputHandler, ToolCallRequest, ToolResult
from vocero.policy import readback
from vocero.policy.answers import Confirmations
from vocero.policy.canonical import CanonicalError
from vocero.policy.dispatch import refusal_code
from vocero.policy.executor import OperationExecutor, Watch
from vocero.policy.gate import (
    ConfirmationFacts,
    Decision,
    PermitRequest,
    arguments_hash,
    permit,
    resolve,
)
from vocero.policy.reasons import explain
from vocero.policy.records import OperationRecord, StoredRevision
from vocero.policy.rows import new_id
from vocero.policy.runnables import Runnable, Runnables
from vocero.policy.session import SessionFacts
from vocero.policy.steps import RequiredSteps, stored_facts

log = structlog.get_logger("vocero.policy")


class Execution:
    """Runs a session's plans (reads directly, writes through the outbox), follows its writes'
    statuses, and withdraws a confirmed write that was not sent yet."""

    def __init__(
        self,
        facts: SessionFacts,
        executor: OperationExecutor,
        *,
        settle_wait_s: float,
        confirmations: Confirmations,
        runnables: Runnables,
        steps: RequiredSteps | None = None,
    ) -> None:
        self._facts = facts
        self._executor = executor
        self._steps = steps
        """The profile's required steps: verifications are performed before the final gate,
        which checks every step's stored evidence (ADR-0030)."""
        self.settle_wait_s = settle_wait_s
        """How long :meth:`execute` waits for a receipt before telling the caller it is pending."""
        self._confirmations = confirmations
        self._runnables = runnables
        self._watches: list[Watch] = []
        """One per write executed in this session: closed with the session."""
        self._unsent: dict[str, OperationRecord] = {}
        """Confirmed operations not yet sent: the caller may still withdraw them."""
        executor.targets.attach(facts.session_id, facts.profile, facts.gateway)

    def close(self) -> None:
        """The session ended: stop forwarding statuses. Operations already authorized go on."""
        self._executor.targets.detach(self._facts.session_id)
        for watch in self._watches:
            watch.close()
        self._watches.clear()

    def set_input_handler(self, ask: InputHandler | None) -> None:
        """Who answers a server's questions during this session's tool calls, reads and
        writes alike (the live session asks the caller by voice)."""
        self._executor.targets.set_asker(self._facts.session_id, ask)

    async def execute(self, plan: ToolPlan, on_status: StatusCallback) -> ToolOutcome:
        runnable = self._runnables.matching(plan)
        if runnable is None:
            return self._refused(plan, "not_authorized", on_status)
        if not runnable.tool.write:
            self._runnables.discard(plan.tool_call_id)
            return await self._read(plan, runnable, on_status)
        return await self._write(plan, runnable, on_status)

    # ------------------------------------------------------------------------------ writes

    async def _write(self, plan: ToolPlan, run: Runnable, on_status: StatusCallback) -> ToolOutcome:
        facts = self._facts

        def forward(op: OperationRecord) -> None:
            self._track_unsent(op)
            on_status(plan.tool_call_id, run.proposal_id, op.status, op.reason_code)

        watch = Watch(self._executor, run.operation_id, forward, facts.clock)
        self._watches.append(watch)
        if self._steps is not None:
            await self._steps.verify(
                run.tool, ask=self._executor.targets.asker(facts.session_id),
                read=self._verification_read, operation_id=run.operation_id,
            )
        try:
            _, schema_now, available = facts.definition(run.tool)
            authorization = await facts.repo.outbox.authorize(
                session_id=facts.session_id,
                proposal_id=run.proposal_id,
                revision=run.revision,
                operation_id=run.operation_id,
                tool=run.tool,
                principal=facts.principal,
                decide=lambda stored: self._final_gate(stored, run, schema_now, available),
            )
        except Exception:  # unavailable policy data denies
            log.exception("policy.authorize_failed")
            authorization = None
        if authorization is None or authorization.operation is None:
            reason = authorization.reason if authorization else "authorization_unavailable"
            facts.metrics.count("denials", reason_code=reason)
            return self._refused(plan, reason, on_status)
        op = authorization.operation
        self._track_unsent(op)
        if authorization.created:
            on_status(plan.tool_call_id, run.proposal_id, "authorized", "")
            self._executor.step("authorized", op.id)
        self._confirmations.executed((run.proposal_id, run.revision))
        final = await watch.wait(self.settle_wait_s) or op
        return self._outcome(plan, run, final)

    def _final_gate(
        self, stored: StoredRevision, run: Runnable, schema_now: str | None, available: bool
    ) -> Decision:
        facts = self._facts
        digest_now = arguments_hash(run.tool, schema_now or "", stored.canonical_arguments)
        return permit(
            PermitRequest(
                stage="execute",
                tenant=facts.caller.tenant,
                principal=facts.principal,
                profile_version=facts.profile.version,
                tool=run.tool,
                policy_available=available,
                schema_version=schema_now,
                arguments_match=digest_now == stored.arguments_hash,
                revision=stored.revision,
                current_revision=stored.current_revision,
                expected_binding=facts.binding(
                    run.proposal_id, run.revision, digest_now, stored.expires_at
                ),
                confirmation=ConfirmationFacts(
                    status=stored.confirmation_status,
                    binding_hash=stored.confirmation_hash,
                    revision=stored.revision,
                    expires_at=stored.confirmation_expires_at,
                )
                if stored.confirmation_status
                else None,
                evidence_satisfied=stored.evidence_status == "satisfied",
                now=facts.clock.now(),
                steps=stored_facts(self._steps.applicable(run.tool), stored.steps)
                if self._steps is not None
                else (),
            )
        )

    async def _verification_read(
        self, name: str, arguments: dict[str, Any]
    ) -> dict[str, Any] | None:
        """A verification step's read, through the ordinary gate and gateway like any read the
        model asks for (recorded the same way); its result reaches neither the model nor the
        caller. ``None`` when the gate refused it or it gave no record."""
        facts = self._facts
        tool = resolve(facts.profile, name)
        schema, schema_ver, available = facts.definition(tool)
        if not permit(facts.request("propose", tool, schema_ver, available)).allowed:
            return None
        assert tool is not None
        try:
            canonical = facts.canonical(tool, arguments, schema)
        except CanonicalError:
            return None
        run = Runnable(
            tool=tool, arguments=canonical.arguments,
            arguments_hash=arguments_hash(tool, schema_ver or "", canonical.arguments),
        )
        plan = ToolPlan(kind="run", tool=name, tool_call_id=new_id("call"))
        outcome = await self._read(plan, run, lambda *_: None)
        if outcome.status != "committed" or not isinstance(outcome.result, dict):
            return None
        return outcome.result

    def _outcome(self, plan: ToolPlan, run: Runnable, op: OperationRecord) -> ToolOutcome:
        receipt = (op.receipt or {}).get("content") if op.status == "committed" else None
        if isinstance(receipt, dict):
            self._facts.observe(receipt)
        result: dict[str, Any] = {
            "summary": readback.outcome(
                run.tool.tool,
                run.arguments,
                op.status,
                op.reason_code,
                today=self._facts.today(),
                receipt=receipt if isinstance(receipt, dict) else None,
            ),
            "operation_id": op.id,
        }
        if isinstance(receipt, dict):
            result["receipt"] = receipt
        return ToolOutcome(
            tool_call_id=plan.tool_call_id,
            proposal_id=run.proposal_id,
            status=op.status,
            result=result,
            reason_code=op.reason_code,
            side_effect=op.status != "rejected",
            arguments=dict(run.arguments),
        )

    def _refused(self, plan: ToolPlan, reason: str, on_status: StatusCallback) -> ToolOutcome:
        on_status(plan.tool_call_id, plan.proposal_id, "rejected", reason)
        return ToolOutcome(
            tool_call_id=plan.tool_call_id,
            proposal_id=plan.proposal_id,
            status="rejected",
            reason_code=reason,
            result={"summary": explain(reason)},
        )

    def _track_unsent(self, op: OperationRecord) -> None:
        if op.status in ("authorized", "dispatch_pending"):
            self._unsent[op.id] = op
        else:
            self._unsent.pop(op.id, None)

    # ------------------------------------------------------------------------------- reads

    async def _read(self, plan: ToolPlan, run: Runnable, on_status: StatusCallback) -> ToolOutcome:
        facts = self._facts
        operation_id = new_id("op")
        on_status(plan.tool_call_id, "", "in_flight", "")
        meta = CallMeta(
            operation_id=operation_id, principal=facts.principal, traceparent=run.traceparent
        )
        status: ToolStatus = "committed"
        reason = ""
        result: ToolResult | None = None
        try:
            with anyio.fail_after(run.tool.timeout_ms / 1000 + 2.0):
                result = await self._call(run, plan.tool, meta)
            if result.is_error:
                status, reason = "rejected", refusal_code(result)
        except ToolCallError as exc:
            status = "unknown" if exc.possibly_executed else "rejected"
            reason = exc.reason_code
        except TimeoutError:
            status, reason = "unknown", "timeout"
        try:
            await facts.repo.record_read(
                session_id=facts.session_id,
                operation_id=operation_id,
                tool=run.tool,
                principal=facts.principal,
                arguments_hash=run.arguments_hash,
                status=status,
                reason=reason,
            )
        except Exception:  # a read has no effect to protect
            log.exception("policy.read_record_failed")
        on_status(plan.tool_call_id, "", status, reason)
        content = (
            result.content
            if result is not None and status == "committed"
            else {"error": reason or "refused"}
        )
        facts.observe(content)
        return ToolOutcome(
            tool_call_id=plan.tool_call_id,
            status=status,
            result=content,
            reason_code=reason,
            arguments=dict(run.arguments),
        )

    async def _call(self, run: Runnable, name: str, meta: CallMeta) -> ToolResult:
        facts = self._facts
        if run.tool.builtin:
            assert facts.builtins is not None
            return await facts.builtins.call(
                run.tool.tool, run.arguments, meta, session_id=facts.session_id
            )
        assert facts.gateway is not None
        return await facts.gateway.call(
            ToolCallRequest(
                tool=name, arguments=run.arguments, meta=meta,
                ask=self._executor.targets.asker(facts.session_id),
            )
        )

    # -------------------------------------------------------------------------- withdrawal

    def withdrawable(self) -> ToolPlan | None:
        """The confirmed operation of this session that has not been dispatched yet, if any."""
        for op in reversed(self._unsent.values()):
            return ToolPlan(kind="run", tool=op.tool, proposal_id=op.proposal_id or "",
                            revision=op.revision or 0, tool_call_id=op.id)
        return None

    async def withdraw(self, turn: TurnRef) -> str:
        """The caller takes back a confirmed action before it was sent: the operation is
        rejected ``withdrawn`` unless it already left (then its status is told as it is)."""
        plan = self.withdrawable()
        if plan is None:
            return "There is nothing waiting to be sent."
        facts = self._facts
        op = await facts.repo.outbox.withdraw(plan.tool_call_id)
        await facts.audit(
            "action.withdrawn" if op.status == "rejected" else "action.withdrawal_too_late",
            {"operation_id": op.id, "proposal_id": op.proposal_id, "revision": op.revision,
             "status": op.status, "turn_id": turn.turn_id},
        )
        self._executor.publish(op)
        if op.status == "rejected" and op.reason_code == "withdrawn":
            return "All right, I've withdrawn that request before it was sent; nothing changed."
        tool = resolve(facts.profile, op.tool)
        return readback.outcome(
            tool.tool if tool else op.tool, op.arguments, op.status, op.reason_code,
            today=facts.today(),
        )
