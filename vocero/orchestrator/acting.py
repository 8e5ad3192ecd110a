"""Tools and confirmations inside a conversation: what the orchestrator does with a tool
intent, a gate decision, a spoken "yes" or a confirmation button.

The policy plane decides (through the :class:`ActionCoordinator` port); this module acts on the
decision: explain a denial, read a proposal back, run an authorized operation outside the
generation's cancel scope so a barge-in never undoes it, and report every status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import anyio
import structlog

from vocero.contracts import events as ev
from vocero.contracts.actions import ToolOutcome, ToolPlan, TurnRef
from vocero.contracts.errors import ErrorCode
from vocero.contracts.ports import IntentClassified, LlmRequest, Message, ToolIntent
from vocero.orchestrator.generation import Generation
from vocero.orchestrator.ids import new_id
from vocero.orchestrator.machine import Event
from vocero.orchestrator.speaking import Speaker

if TYPE_CHECKING:
    from vocero.orchestrator.session import Session

log = structlog.get_logger("vocero.acting")


class Actor:
    def __init__(self, session: Session) -> None:
        self.s = session

    async def propose(self, generation: Generation, turn: TurnRef, intent: ToolIntent) -> ToolPlan:
        self.s.try_fire(Event.TOOL_INTENT)
        if self.s.coordinator is None:
            return ToolPlan(
                kind="deny",
                tool=intent.name,
                reason_code="tool_not_allowed",
                summary="I can't do that here.",
            )
        ref = TurnRef(
            session_id=turn.session_id, turn_id=turn.turn_id, generation_id=generation.generation_id
        )
        return await self.s.coordinator.propose(ref, intent)

    async def run_plan(
        self, generation: Generation, speaker: Speaker, turn: TurnRef, plan: ToolPlan
    ) -> bool:
        """Act on the gate's decision. True: the model should continue with the result."""
        if plan.kind == "deny":
            self.s.try_fire(Event.DENIED)
            self.tool_status(plan.tool_call_id, plan.proposal_id, "rejected", plan.reason_code)
            self.s.metrics.count("denials", reason_code=plan.reason_code)
            if plan.result is not None:
                self.s.history.append(
                    Message(
                        role="tool",
                        content="",
                        tool_name=plan.tool,
                        tool_result=dict(plan.result),
                        tool_status="rejected",
                    )
                )
            await speaker.say(plan.summary)
            return False
        if plan.kind == "confirm":
            self.s.try_fire(Event.SENSITIVE_ACTION)
            self.s.control(
                ev.ConfirmationRequired(
                    proposal_id=plan.proposal_id,
                    revision=plan.revision,
                    tool=plan.tool,
                    summary=plan.summary,
                    fields=plan.fields,
                    expires_at=plan.expires_at,
                )
            )
            await speaker.say(plan.summary)
            return False
        if not self.s.try_fire(Event.ALLOWED):
            self.s.try_fire(Event.CONFIRMED)
        outcome = await self.execute(generation, plan)
        self.s.try_fire(Event.TOOL_RESULT)
        return outcome is not None

    async def execute(self, generation: Generation, plan: ToolPlan) -> ToolOutcome | None:
        """Run the operation outside the generation's cancel scope: a barge-in stops the words,
        never a dispatched operation; its status is still reported."""
        coordinator = self.s.coordinator
        assert coordinator is not None and self.s._tg is not None
        done = anyio.Event()
        box: list[ToolOutcome] = []

        async def run() -> None:
            started = self.s.monotonic()
            try:
                outcome = await coordinator.execute(plan, self.tool_status)
            except Exception:
                log.exception("tool_execution_failed")
                outcome = ToolOutcome(
                    tool_call_id=plan.tool_call_id,
                    proposal_id=plan.proposal_id,
                    status="unknown",
                    reason_code="execution_error",
                    side_effect=True,
                )
            self.s.metrics.observe_ms(
                "tool_latency_ms",
                (self.s.monotonic() - started) * 1000.0,
                tool=plan.tool,
                outcome=outcome.status,
            )
            self.s.history.append(
                Message(
                    role="tool",
                    content="",
                    tool_name=plan.tool,
                    tool_result=dict(outcome.result or {}),
                    tool_status=outcome.status,
                )
            )
            box.append(outcome)
            done.set()

        self.s._tg.start_soon(run)
        await done.wait()
        generation.side_effect = generation.side_effect or box[0].side_effect
        return box[0]

    def tool_status(
        self, tool_call_id: str, proposal_id: str, status: ev.ToolStatus, reason: str
    ) -> None:
        self.s.control(
            ev.ToolStatusChanged(
                tool_call_id=tool_call_id,
                proposal_id=proposal_id,
                status=status,
                reason_code=reason,
            )
        )

    async def spoken_confirmation(
        self, turn: TurnRef, question: ToolPlan, committed_at: float
    ) -> None:
        assert self.s.coordinator is not None
        intent = await self.classify()
        verdict = await self.s.coordinator.submit_confirmation(
            turn, question.proposal_id, question.revision, intent, source="speech"
        )
        await self.after_verdict(
            turn, question, verdict.binds, verdict.plan, verdict.reason_code, intent, committed_at
        )

    async def classify(self) -> Literal["confirm", "reject", "uncertain"]:
        request = LlmRequest(messages=self.s.model_messages(), mode="classify_confirmation")
        with anyio.fail_after(self.s.timeouts.llm_s):
            async for output in self.s.runners.llm.generate(request):
                if isinstance(output, IntentClassified):
                    return "uncertain" if output.intent == "new_request" else output.intent
        return "uncertain"

    async def button_confirmation(
        self, proposal_id: str, revision: int, decision: Literal["confirm", "reject"]
    ) -> None:
        if self.s.coordinator is None:
            self.tool_status("", proposal_id, "rejected", "no_active_question")
            return
        async with self.s._turn_lock:
            turn = TurnRef(session_id=self.s.ctx.session_id, turn_id=new_id("turn"))
            verdict = await self.s.coordinator.submit_confirmation(
                None, proposal_id, revision, decision, source="button"
            )
            if not verdict.binds:
                self.tool_status("", proposal_id, "rejected", verdict.reason_code)
                code = (
                    ErrorCode.PROPOSAL_CHANGED
                    if verdict.reason_code == "proposal_changed"
                    else ErrorCode.CONFIRMATION_INVALID
                )
                self.s.error(code)
                return
            if self.s.answering():
                self.s.barge_in(reason="confirmation")
            question = ToolPlan(kind="confirm", tool="", proposal_id=proposal_id, revision=revision)
            await self.after_verdict(
                turn, question, True, verdict.plan, "", decision, self.s.monotonic()
            )

    async def after_verdict(
        self,
        turn: TurnRef,
        question: ToolPlan,
        binds: bool,
        plan: ToolPlan | None,
        reason: str,
        intent: str,
        committed_at: float,
    ) -> None:
        if binds and plan is not None and intent == "confirm":
            self.s.try_fire(Event.CONFIRMED)
            await self.s.respond(turn, committed_at, first_plan=plan)
            return
        generation = self.s.begin_generation(turn)
        with generation.scope:
            async with Speaker(self.s, generation, committed_at) as speaker:
                if binds and intent == "reject":
                    self.s.try_fire(Event.DECLINED)
                    await speaker.say("All right, I have not made that change.")
                elif plan is not None and plan.kind == "deny":
                    await speaker.say(plan.summary)
                else:
                    if self.s.coordinator is not None:
                        await self.s.coordinator.readback_started(
                            question, generation.generation_id
                        )
                    await speaker.say(
                        f"Sorry, I need a clear yes or no. {question.summary}".strip()
                    )
                await speaker.finish()
        self.s.finish(generation, "completed")
