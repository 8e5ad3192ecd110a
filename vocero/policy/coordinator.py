"""One session's :class:`~vocero.contracts.actions.ActionCoordinator`.

The model proposes, the application decides, and a "yes" approves only the exact thing the
caller heard. ``propose`` resolves the tool through the profile, canonicalises the arguments and
asks :func:`~vocero.policy.gate.permit`: a read runs, a write that needs no confirmation runs
through the outbox, a confirmable write becomes a proposal revision whose read-back the caller
hears. ``submit_confirmation`` binds an answer only to that active revision, after its read-back
was delivered. ``execute`` reloads the proposal from storage, runs the final gate and authorizes
the operation and its outbox row in one transaction; the worker does the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any, Literal

import anyio
import structlog

from vocero.contracts.actions import (
    ConfirmationVerdict,
    StatusCallback,
    ToolOutcome,
    ToolPlan,
    TurnRef,
)
from vocero.contracts.domain import AgentProfile, Caller, Principal
from vocero.contracts.errors import ToolCallError
from vocero.contracts.events import ToolStatus
from vocero.contracts.ports import (
    CallMeta,
    InputHandler,
    Message,
    Timers,
    ToolCallRequest,
    ToolGateway,
    ToolIntent,
    ToolResult,
)
from vocero.policy import readback
from vocero.policy.canonical import (
    Canonical,
    CanonicalError,
    Context,
    canonicalize,
    observed_versions,
    zone_of,
)
from vocero.policy.confirmations import Answer, Question, Source, judge
from vocero.policy.delivery import DeliveryEvidence
from vocero.policy.executor import OperationExecutor, Watch, refusal_code
from vocero.policy.gate import (
    ConfirmationFacts,
    Decision,
    PermitRequest,
    ResolvedTool,
    arguments_hash,
    binding_hash,
    permit,
    resolve,
    schema_version,
)
from vocero.policy.ports import BuiltinTools, Counter, NullCounter
from vocero.policy.reasons import explain
from vocero.policy.records import OperationRecord, StoredRevision
from vocero.policy.repository import ActionRepository, RevisionDraft
from vocero.policy.rows import new_id

log = structlog.get_logger("vocero.policy")

POLICY_VERSION = "actions.v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorSettings:
    confirmation_ttl_s: float = 120.0
    """How long a read-back can be answered (and its confirmation used)."""
    settle_wait_s: float = 15.0
    """How long ``execute`` waits for a receipt before telling the caller it is pending."""


@dataclass(slots=True)
class _Runnable:
    """What a ``run`` plan may execute, kept here: the plan itself is never trusted."""

    tool: ResolvedTool
    arguments: dict[str, Any]
    arguments_hash: str
    proposal_id: str = ""
    revision: int = 0
    operation_id: str = ""
    traceparent: str = ""


@dataclass(slots=True)
class _State:
    question: Question | None = None
    runnable: dict[str, _Runnable] = field(default_factory=dict)
    revisions: dict[str, int] = field(default_factory=dict)
    answered: set[tuple[str, int]] = field(default_factory=set)
    observed: dict[str, int] = field(default_factory=dict)
    watches: list[Watch] = field(default_factory=list)
    unsent: dict[str, OperationRecord] = field(default_factory=dict)
    """Confirmed operations not yet sent: the caller may still withdraw them."""


class SessionCoordinator:
    def __init__(
        self,
        *,
        session_id: str,
        caller: Caller,
        profile: AgentProfile,
        gateway: ToolGateway | None,
        builtins: BuiltinTools | None,
        repo: ActionRepository,
        executor: OperationExecutor,
        clock: Timers,
        settings: CoordinatorSettings | None = None,
        metrics: Counter | None = None,
    ) -> None:
        self.session_id = session_id
        self.caller = caller
        self.principal = Principal.of(caller)
        self.profile = profile
        self.gateway = gateway
        self.builtins = builtins
        self.repo = repo
        self.executor = executor
        self.clock = clock
        self.settings = settings or CoordinatorSettings()
        self.metrics = metrics or NullCounter()
        self.workflow_revision = f"{profile.id}@{profile.version}/{POLICY_VERSION}"
        self._s = _State()
        self.evidence = DeliveryEvidence(repo, session_id, self._audit)
        executor.targets.attach(session_id, profile, gateway)

    def close(self) -> None:
        """The session ended: stop forwarding statuses. Operations already authorized go on."""
        self.executor.targets.detach(self.session_id)
        for watch in self._s.watches:
            watch.close()
        self._s.watches.clear()

    # ------------------------------------------------------------------------- propose

    async def propose(
        self,
        turn: TurnRef,
        intent: ToolIntent,
        *,
        history: Sequence[Message] = (),
        locale: str = "",
    ) -> ToolPlan:
        """``history`` is the conversation as heard: built-in tools judge against it (the
        call-back rule takes the time from the caller's own words). ``locale`` is the session's
        effective one (a ``session.update`` may have changed it): values are read in it."""
        tool = resolve(self.profile, intent.name)
        call_id = new_id("call")
        schema, schema_ver, available = self._definition(tool)
        request = self._request("propose", tool, schema_ver, available)
        decision = permit(request)
        canonical: Canonical | None = None
        if decision.outcome != "deny" and tool is not None:
            try:
                canonical = self._canonical(
                    tool, intent.arguments, schema, history, locale or self.caller.locale
                )
            except CanonicalError as exc:
                lead = explain(exc.reason_code) if exc.result is None else ""
                return await self._deny(
                    intent.name,
                    call_id,
                    exc.reason_code,
                    "propose",
                    summary=f"{lead} {exc.question}".strip(),
                    result=exc.result,
                )
            decision = permit(replace(request, claimed_tenant=canonical.claimed_tenant))
        if decision.outcome == "deny" or tool is None or canonical is None:
            return await self._deny(intent.name, call_id, decision.reason, "propose")
        args_hash = arguments_hash(tool, schema_ver or "", canonical.arguments)
        if not tool.write:
            self._s.runnable[call_id] = _Runnable(
                tool=tool,
                arguments=canonical.arguments,
                arguments_hash=args_hash,
                traceparent=turn.traceparent,
            )
            return ToolPlan(kind="run", tool=intent.name, tool_call_id=call_id)
        try:
            return await self._open(
                turn, intent.name, call_id, tool, canonical, args_hash, decision
            )
        except Exception:  # unavailable policy data denies
            log.exception("policy.propose_failed")
            return await self._deny(intent.name, call_id, "authorization_unavailable", "propose")

    async def _open(
        self,
        turn: TurnRef,
        name: str,
        call_id: str,
        tool: ResolvedTool,
        canonical: Canonical,
        args_hash: str,
        decision: Decision,
    ) -> ToolPlan:
        now = self.clock.now()
        expires = datetime.fromtimestamp(now + self.settings.confirmation_ttl_s, UTC)
        spoken = readback.readback(
            tool.tool,
            canonical.arguments,
            template=self._readback_template(tool),
            today=self._today(),
        )
        summary = spoken.text
        opened = await self.repo.open_revision(
            RevisionDraft(
                session_id=self.session_id,
                turn_id=turn.turn_id,
                tool=tool,
                arguments=canonical.arguments,
                target_resource=canonical.target_resource,
                object_version=canonical.object_version,
                arguments_hash=args_hash,
                workflow_revision=self.workflow_revision,
                summary=summary,
                expires_at=expires,
            )
        )
        key = (opened.proposal_id, opened.revision)
        if opened.superseded is not None:
            old = (opened.proposal_id, opened.superseded)
            self.evidence.supersede(old)
        self._s.revisions[opened.proposal_id] = opened.revision
        expires_at = opened.expires_at
        if decision.outcome == "allow":
            self._s.runnable[call_id] = _Runnable(
                tool=tool,
                arguments=canonical.arguments,
                arguments_hash=args_hash,
                proposal_id=opened.proposal_id,
                revision=opened.revision,
                operation_id=new_id("op"),
                traceparent=turn.traceparent,
            )
            return ToolPlan(
                kind="run",
                tool=name,
                tool_call_id=call_id,
                proposal_id=opened.proposal_id,
                revision=opened.revision,
            )
        fields = readback.fields_of(canonical.arguments)
        expires_text = datetime.fromtimestamp(expires_at, UTC).isoformat().replace("+00:00", "Z")
        self._s.question = Question(
            proposal_id=opened.proposal_id,
            revision=opened.revision,
            tool=name,
            summary=summary,
            expires_at=expires_at,
            asked_turn_id=turn.turn_id,
            fields=fields,
            expires_at_text=expires_text,
            parts=spoken.parts,
        )
        await self.evidence.asked(key, turn.generation_id, first=True, parts=spoken.parts)
        return self.active_question() or ToolPlan(kind="deny", tool=name)

    # ---------------------------------------------------------------------- confirmation

    def active_question(self) -> ToolPlan | None:
        q = self._s.question
        if q is None:
            return None
        return ToolPlan(
            kind="confirm",
            tool=q.tool,
            proposal_id=q.proposal_id,
            revision=q.revision,
            summary=q.summary,
            fields=dict(q.fields),
            expires_at=q.expires_at_text,
        )

    async def readback_started(self, plan: ToolPlan, generation_id: str) -> None:
        """The question is being read again (after a clarification) in ``generation_id``."""
        await self.evidence.asked((plan.proposal_id, plan.revision), generation_id)

    async def submit_confirmation(
        self,
        turn: TurnRef | None,
        proposal_id: str,
        revision: int,
        decision: Literal["confirm", "reject", "uncertain"],
        *,
        source: Literal["button", "speech"],
    ) -> ConfirmationVerdict:
        delivered = await self.evidence.satisfied((proposal_id, revision))
        question = self._s.question
        current = source == "button" or self.evidence.last_heard_was((proposal_id, revision))
        judgement = judge(
            question,
            proposal_id=proposal_id,
            revision=revision,
            answer=decision,
            source=source,
            turn_id=turn.turn_id if turn else "",
            now=self.clock.now(),
            delivered=delivered,
            last_heard=current,
            current_revisions=self._s.revisions,
            used=self._s.answered,
        )
        if not judgement.keep_question:
            self._s.question = None
        if not judgement.binds or question is None:
            return await self._not_bound(proposal_id, revision, decision, source, judgement.reason)
        try:
            return await self._bind(question, decision, source, turn)
        except Exception:  # unavailable policy data: nothing binds
            log.exception("policy.confirmation_failed")
            self._s.question = question
            return await self._not_bound(
                proposal_id, revision, decision, source, "authorization_unavailable"
            )

    async def _bind(
        self, question: Question, decision: Answer, source: Source, turn: TurnRef | None
    ) -> ConfirmationVerdict:
        key = (question.proposal_id, question.revision)
        tool = resolve(self.profile, question.tool)
        assert tool is not None
        stored = await self.repo.record_answer(
            session_id=self.session_id,
            proposal_id=question.proposal_id,
            revision=question.revision,
            decision=decision,
            binding=lambda s: self._binding(
                question.proposal_id, s.revision, s.arguments_hash, s.expires_at
            ),
            asked_turn_id=question.asked_turn_id,
            answer_turn_id=turn.turn_id if turn else "",
            source=source,
        )
        self._s.answered.add(key)
        if decision == "reject":
            return ConfirmationVerdict(binds=True)
        call_id = new_id("call")
        self._s.runnable[call_id] = _Runnable(
            tool=tool,
            arguments=stored.canonical_arguments,
            arguments_hash=stored.arguments_hash,
            proposal_id=question.proposal_id,
            revision=question.revision,
            operation_id=new_id("op"),
            traceparent=turn.traceparent if turn else "",
        )
        plan = ToolPlan(
            kind="run",
            tool=question.tool,
            tool_call_id=call_id,
            proposal_id=question.proposal_id,
            revision=question.revision,
        )
        return ConfirmationVerdict(binds=True, plan=plan)

    async def _not_bound(
        self, proposal_id: str, revision: int, decision: str, source: str, reason: str
    ) -> ConfirmationVerdict:
        self.metrics.count("denials", reason_code=reason)
        await self._audit(
            "confirmation.not_bound",
            {
                "proposal_id": proposal_id,
                "revision": revision,
                "answer": decision,
                "source": source,
                "reason_code": reason,
            },
        )
        plan = None
        if reason in ("authorization_expired", "authorization_unavailable"):
            plan = ToolPlan(
                kind="deny",
                tool="",
                proposal_id=proposal_id,
                revision=revision,
                reason_code=reason,
                summary=explain(reason),
            )
        return ConfirmationVerdict(binds=False, plan=plan, reason_code=reason)

    # ---------------------------------------------------------------------------- evidence

    async def record_delivery(
        self, generation_id: str, *, heard_text: str, complete: bool, observable: bool = True
    ) -> None:
        """Playout evidence of one generation: what the caller heard of it."""
        await self.evidence.delivered(
            generation_id, heard_text=heard_text, complete=complete, observable=observable
        )

    async def drop_question(self, proposal_id: str, revision: int) -> None:
        """The conversation gives up on the question (it could not get a clear answer): it can
        no longer be confirmed, and nothing was done."""
        question = self._s.question
        if question is None or (question.proposal_id, question.revision) != (
            proposal_id,
            revision,
        ):
            return
        self._s.question = None
        self.evidence.supersede((proposal_id, revision))
        try:
            await self.repo.close_proposal(proposal_id, "abandoned")
        except Exception:  # the question is gone from the conversation either way
            log.exception("policy.drop_failed")
        await self._audit(
            "confirmation.abandoned", {"proposal_id": proposal_id, "revision": revision}
        )

    # ---------------------------------------------------------------------------- withdrawal

    def withdrawable(self) -> ToolPlan | None:
        """The confirmed operation of this session that has not been dispatched yet, if any."""
        for op in reversed(self._s.unsent.values()):
            return ToolPlan(kind="run", tool=op.tool, proposal_id=op.proposal_id or "",
                            revision=op.revision or 0, tool_call_id=op.id)
        return None

    async def withdraw(self, turn: TurnRef) -> str:
        """The caller takes back a confirmed action before it was sent: the operation is
        rejected ``withdrawn`` unless it already left (then its status is told as it is)."""
        plan = self.withdrawable()
        if plan is None:
            return "There is nothing waiting to be sent."
        op = await self.repo.withdraw(plan.tool_call_id)
        await self._audit(
            "action.withdrawn" if op.status == "rejected" else "action.withdrawal_too_late",
            {"operation_id": op.id, "proposal_id": op.proposal_id, "revision": op.revision,
             "status": op.status, "turn_id": turn.turn_id},
        )
        self.executor.publish(op)
        if op.status == "rejected" and op.reason_code == "withdrawn":
            return "All right, I've withdrawn that request before it was sent; nothing changed."
        tool = resolve(self.profile, op.tool)
        return readback.outcome(
            tool.tool if tool else op.tool, op.arguments, op.status, op.reason_code,
            today=self._today(),
        )

    # ----------------------------------------------------------------------------- execute

    async def execute(self, plan: ToolPlan, on_status: StatusCallback) -> ToolOutcome:
        runnable = self._s.runnable.get(plan.tool_call_id)
        if runnable is None or (runnable.proposal_id, runnable.revision) != (
            plan.proposal_id,
            plan.revision,
        ):
            return self._refused(plan, "not_authorized", on_status)
        if not runnable.tool.write:
            self._s.runnable.pop(plan.tool_call_id, None)
            return await self._read(plan, runnable, on_status)
        return await self._write(plan, runnable, on_status)

    async def _write(
        self, plan: ToolPlan, run: _Runnable, on_status: StatusCallback
    ) -> ToolOutcome:
        def forward(op: OperationRecord) -> None:
            self._track_unsent(op)
            on_status(plan.tool_call_id, run.proposal_id, op.status, op.reason_code)

        watch = Watch(self.executor, run.operation_id, forward, self.clock)
        self._s.watches.append(watch)
        try:
            _, schema_now, available = self._definition(run.tool)
            authorization = await self.repo.authorize(
                session_id=self.session_id,
                proposal_id=run.proposal_id,
                revision=run.revision,
                operation_id=run.operation_id,
                tool=run.tool,
                principal=self.principal,
                decide=lambda stored: self._final_gate(stored, run, schema_now, available),
            )
        except Exception:  # unavailable policy data denies
            log.exception("policy.authorize_failed")
            authorization = None
        if authorization is None or authorization.operation is None:
            reason = authorization.reason if authorization else "authorization_unavailable"
            self.metrics.count("denials", reason_code=reason)
            return self._refused(plan, reason, on_status)
        op = authorization.operation
        self._track_unsent(op)
        if authorization.created:
            on_status(plan.tool_call_id, run.proposal_id, "authorized", "")
            self.executor.step("authorized", op.id)
        self._s.answered.add((run.proposal_id, run.revision))
        final = await watch.wait(self.settings.settle_wait_s) or op
        return self._outcome(plan, run, final)

    def _final_gate(
        self, stored: StoredRevision, run: _Runnable, schema_now: str | None, available: bool
    ) -> Decision:
        digest_now = arguments_hash(run.tool, schema_now or "", stored.canonical_arguments)
        return permit(
            PermitRequest(
                stage="execute",
                tenant=self.caller.tenant,
                principal=self.principal,
                profile_version=self.profile.version,
                tool=run.tool,
                policy_available=available,
                schema_version=schema_now,
                arguments_match=digest_now == stored.arguments_hash,
                revision=stored.revision,
                current_revision=stored.current_revision,
                expected_binding=self._binding(
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
                now=self.clock.now(),
            )
        )

    async def _read(self, plan: ToolPlan, run: _Runnable, on_status: StatusCallback) -> ToolOutcome:
        operation_id = new_id("op")
        on_status(plan.tool_call_id, "", "in_flight", "")
        meta = CallMeta(
            operation_id=operation_id, principal=self.principal, traceparent=run.traceparent
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
            await self.repo.record_read(
                session_id=self.session_id,
                operation_id=operation_id,
                tool=run.tool,
                principal=self.principal,
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
        self._observe(content)
        return ToolOutcome(
            tool_call_id=plan.tool_call_id,
            status=status,
            result=content,
            reason_code=reason,
            arguments=dict(run.arguments),
        )

    async def _call(self, run: _Runnable, name: str, meta: CallMeta) -> ToolResult:
        if run.tool.builtin:
            assert self.builtins is not None
            return await self.builtins.call(
                run.tool.tool, run.arguments, meta, session_id=self.session_id
            )
        assert self.gateway is not None
        return await self.gateway.call(
            ToolCallRequest(
                tool=name, arguments=run.arguments, meta=meta,
                ask=self.executor.targets.asker(self.session_id),
            )
        )

    def set_input_handler(self, ask: InputHandler | None) -> None:
        """Who answers a server's questions during this session's tool calls, reads and
        writes alike (the live session asks the caller by voice)."""
        self.executor.targets.set_asker(self.session_id, ask)

    def _outcome(self, plan: ToolPlan, run: _Runnable, op: OperationRecord) -> ToolOutcome:
        receipt = (op.receipt or {}).get("content") if op.status == "committed" else None
        if isinstance(receipt, dict):
            self._observe(receipt)
        result: dict[str, Any] = {
            "summary": readback.outcome(
                run.tool.tool, run.arguments, op.status, op.reason_code, today=self._today()
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

    # ----------------------------------------------------------------------------- helpers

    def _definition(self, tool: ResolvedTool | None) -> tuple[dict[str, Any], str | None, bool]:
        """(input schema, schema version or ``None`` when not callable, policy data available)."""
        if tool is None:
            return {}, "", True
        if tool.builtin:
            if self.builtins is None or not self.builtins.handles(tool.tool):
                return {}, None, self.builtins is not None
            schema = self.builtins.schema(tool.tool)
            return schema, schema_version(schema), True
        if self.gateway is None:
            return {}, None, False
        try:
            definitions = list(self.gateway.definitions())
        except Exception:  # unavailable policy data denies
            log.exception("policy.definitions_failed")
            return {}, None, False
        found = next((d for d in definitions if d.name == tool.name), None)
        if found is None:
            return {}, None, True
        return found.input_schema, schema_version(found.input_schema), True

    def _request(
        self,
        stage: Literal["propose", "execute"],
        tool: ResolvedTool | None,
        schema: str | None,
        available: bool,
    ) -> PermitRequest:
        return PermitRequest(
            stage=stage,
            tenant=self.caller.tenant,
            principal=self.principal,
            profile_version=self.profile.version,
            tool=tool,
            policy_available=available,
            schema_version=schema,
            now=self.clock.now(),
        )

    def _canonical(
        self,
        tool: ResolvedTool,
        arguments: dict[str, Any],
        schema: dict[str, Any],
        history: Sequence[Message] = (),
        locale: str = "",
    ) -> Canonical:
        ctx = Context(
            tenant=self.caller.tenant,
            timezone=self.caller.timezone,
            now=datetime.fromtimestamp(self.clock.now(), UTC),
            server=tool.server,
            observed_versions=self._s.observed,
            history=tuple(history),
            locale=locale or self.caller.locale,
            subject_ref=self.caller.subject_ref,
        )
        if tool.builtin and self.builtins is not None:
            return self.builtins.canonicalize(tool.tool, arguments, ctx)
        return canonicalize(arguments, schema, ctx)

    def _track_unsent(self, op: OperationRecord) -> None:
        if op.status in ("authorized", "dispatch_pending"):
            self._s.unsent[op.id] = op
        else:
            self._s.unsent.pop(op.id, None)

    def _readback_template(self, tool: ResolvedTool) -> str:
        """The profile's read-back wording for the tool, only when every profile tool resolving
        to the same server tool says the same: an alias must never read back as something else
        than what will actually happen (then the generic read-back of the resolved tool)."""
        same = {
            t.readback
            for t in self.profile.tools
            if (t.server, t.resolves_to) == (tool.server, tool.tool)
        }
        return same.pop() if len(same) == 1 else ""

    def _today(self) -> date:
        moment = datetime.fromtimestamp(self.clock.now(), UTC)
        return moment.astimezone(zone_of(self.caller.timezone)).date()

    def _binding(self, proposal_id: str, revision: int, args_hash: str, expires_at: float) -> str:
        return binding_hash(
            proposal_id=proposal_id,
            revision=revision,
            arguments_digest=args_hash,
            principal=self.principal,
            expires_at=expires_at,
            workflow_revision=self.workflow_revision,
        )

    async def _deny(
        self,
        name: str,
        call_id: str,
        reason: str,
        stage: str,
        summary: str = "",
        result: dict[str, Any] | None = None,
    ) -> ToolPlan:
        tool = resolve(self.profile, name)
        await self._audit(
            "action.denied",
            {
                "stage": stage,
                "tool": name,
                "tool_call_id": call_id,
                "reason_code": reason,
                "resolved_tool": f"{tool.server}/{tool.tool}" if tool else "",
            },
        )
        return ToolPlan(
            kind="deny",
            tool=name,
            tool_call_id=call_id,
            reason_code=reason,
            summary=summary or explain(reason),
            result=result,
        )

    async def _audit(self, kind: str, data: dict[str, Any]) -> None:
        try:
            await self.repo.audit(kind, data, session_id=self.session_id)
        except Exception:  # a failed audit is logged; the decision stands
            log.exception("policy.audit_failed", kind=kind)

    def _observe(self, content: dict[str, Any]) -> None:
        """Remember object versions the owning service reported (``expected_version``)."""
        self._s.observed.update(observed_versions(content))
