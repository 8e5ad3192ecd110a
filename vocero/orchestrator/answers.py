"""Answers to the open question: a spoken "yes"/"no"/"I think so", a click, a withdrawal.

The model only classifies (``confirm``, ``reject``, ``uncertain``, or ``new_request`` when the
turn asks for something else), and its ``confirm`` stands only for a line the consent rule reads
as a bare yes (:mod:`vocero.contracts.lexicon.consent`, issue 42); the coordinator alone decides
whether an answer binds, and to which revision. Here the session acts on that decision:

* a binding "yes" runs the exact confirmed revision (``CONFIRMED``), a binding "no" declines;
* an answer that does not bind ("I think so", a "yes" before every consequential field of the
  read-back was played, a "yes" once another answer came after the read-back) asks again,
  briefly; after :data:`MAX_REASKS` such answers the question is dropped, nothing is done and the
  caller is told so: the agent never loops on one question;
* a "no, don't" while a confirmed operation still waits for dispatch withdraws it.
"""

from __future__ import annotations

from vocero.contracts.actions import ToolPlan, TurnRef
from vocero.contracts.errors import ErrorCode
from vocero.contracts.lexicon import consent, for_locale
from vocero.contracts.ports import IntentClassified
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.ids import new_id
from vocero.orchestrator.machine import Event, Intent
from vocero.orchestrator.responding import Responder

MAX_REASKS = 2
"""Answers that do not bind, per question revision, before the question is dropped."""
DECLINED = "All right, I haven't changed anything."
DROPPED = "I'll leave that for now; nothing has been changed."
REASK_LEAD = {
    "required_delivery_missing": "Let me finish first.",
    "different_question": "Just to be sure.",
    "confirmation_unclear": "Sorry, I didn't catch that.",
}


class Answers:
    def __init__(self, core: SessionCore, responder: Responder) -> None:
        self.core = core
        self.responder = responder
        self._reasks: dict[tuple[str, int], int] = {}

    async def classify(self) -> Intent:
        """The runner's label for the caller's last line, as the consent rule lets it stand:
        ``confirm`` only for a bare yes, whatever the runner said (a line naming a value is a
        correction, any other is asked about; :func:`~vocero.contracts.lexicon.consent.bound`)."""
        core = self.core
        request = self.responder.model_request("classify_confirmation")
        label: str = "uncertain"
        with core.clock.fail_after(core.timeouts.llm_s):
            async for output in core.runners.llm.generate(request):
                if isinstance(output, IntentClassified):
                    label = output.intent
                    break
        said = core.history[-1].content if core.history and core.history[-1].role == "user" else ""
        question = core.coordinator.active_question() if core.coordinator is not None else None
        # "Yes, book it." or "Yes, the van." restates what waits
        action = consent.restatable(question.tool, question.fields) if question is not None else ""
        return consent.bound(label, said, for_locale(core.ctx.effective.locale), action)

    async def spoken(
        self, turn: TurnRef, question: ToolPlan, intent: Intent, committed_at: float
    ) -> None:
        coordinator = self.core.coordinator
        assert coordinator is not None and intent != "new_request"
        said = self.core.history[-1].content if self.core.history else ""
        restated = intent == "confirm" and consent.restates(said, question.tool, question.fields)
        verdict = await coordinator.submit_confirmation(
            turn, question.proposal_id, question.revision, intent, source="speech",
            restated=restated,
        )
        if verdict.binds and intent == "confirm" and verdict.plan is not None:
            self.core.fire(Event.CONFIRMED)
            await self.responder.respond(turn, committed_at, first_plan=verdict.plan)
        elif verdict.binds:
            self.core.fire(Event.DECLINED)
            await self.responder.say(turn, committed_at, DECLINED)
        elif verdict.plan is not None and verdict.plan.kind == "deny":
            self.core.fire(Event.QUESTION_CLOSED)
            await self.responder.say(turn, committed_at, verdict.plan.summary)
        else:
            await self._ask_again(turn, question, verdict.reason_code, committed_at)

    async def _ask_again(
        self, turn: TurnRef, question: ToolPlan, reason: str, committed_at: float
    ) -> None:
        key = (question.proposal_id, question.revision)
        self._reasks[key] = self._reasks.get(key, 0) + 1
        coordinator = self.core.coordinator
        assert coordinator is not None
        if self._reasks[key] > MAX_REASKS:
            await coordinator.drop_question(question.proposal_id, question.revision)
            self.core.fire(Event.QUESTION_CLOSED)
            await self.responder.say(turn, committed_at, DROPPED)
            return
        lead = REASK_LEAD.get(reason, REASK_LEAD["confirmation_unclear"])
        await self.responder.say(
            turn, committed_at, f"{lead} {question.summary}", readback=question
        )

    async def clicked(self, proposal_id: str, revision: int, decision: Intent) -> None:
        """A confirmation button: binds only to the exact active revision, once delivered."""
        core = self.core
        coordinator = core.coordinator
        if coordinator is None or decision not in ("confirm", "reject"):
            self.responder.actor.tool_status("", proposal_id, "rejected", "no_active_question")
            return
        turn = TurnRef(session_id=core.ctx.session_id, turn_id=new_id("turn"))
        verdict = await coordinator.submit_confirmation(
            None, proposal_id, revision, decision, source="button"
        )
        if not verdict.binds:
            self.responder.actor.tool_status("", proposal_id, "rejected", verdict.reason_code)
            core.error(
                ErrorCode.PROPOSAL_CHANGED
                if verdict.reason_code == "proposal_changed"
                else ErrorCode.CONFIRMATION_INVALID
            )
            return
        if decision == "confirm" and verdict.plan is not None:
            core.fire(Event.CONFIRMED)
            await self.responder.respond(turn, core.monotonic(), first_plan=verdict.plan)
        else:
            core.fire(Event.DECLINED)
            await self.responder.say(turn, core.monotonic(), DECLINED)

    async def withdrawal(self, turn: TurnRef, committed_at: float) -> bool:
        """A "no, don't" while a confirmed operation still waits for dispatch withdraws it.
        True when the turn was that withdrawal (and has been answered)."""
        coordinator = self.core.coordinator
        if coordinator is None or coordinator.withdrawable() is None:
            return False
        if await self.classify() != "reject":
            return False
        summary = await coordinator.withdraw(turn)
        await self.responder.say(turn, committed_at, summary)
        return True
