"""Answering a turn: one generation, the model and tool loop inside it, and its ending.

A generation runs inside its own cancel scope: a stop cancels the model, the synthesis and the
queued audio together, while operations run outside it (:mod:`.acting`). Whatever ends it, the
generation is settled after its work has unwound (:meth:`Completion.settle`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from vocero.contracts import events as ev
from vocero.contracts.actions import ToolPlan, TurnRef
from vocero.contracts.errors import CapacityError, ErrorCode, VoceroError
from vocero.contracts.ports import (
    ClaimAnswer,
    IntentClassified,
    LlmOutput,
    LlmRequest,
    Message,
    ToolIntent,
)
from vocero.observability import tracing
from vocero.orchestrator.acting import Actor, proposal_evidence, say_disclosures
from vocero.orchestrator.asking import Asking
from vocero.orchestrator.completion import Completion
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.drafts import Drafts
from vocero.orchestrator.generation import Generation
from vocero.orchestrator.handoff import Handoff
from vocero.orchestrator.machine import Event
from vocero.orchestrator.resuming import RESUMED_LEAD
from vocero.orchestrator.speaking import Speaker, speaking
from vocero.speech import PlannedUnit, ToolEvidence

MAX_TOOL_ROUNDS = 4
"""Tool calls one answer may chain before the model must answer in words."""


class Responder:
    def __init__(
        self, core: SessionCore, actor: Actor, completion: Completion, asking: Asking
    ) -> None:
        self.core = core
        self.actor = actor
        self.completion = completion
        self.asking = asking
        self.handoff = Handoff(core, actor)
        self.drafts: Drafts | None = None
        """The session's prepared answer, taken by a committed turn's first model call."""

    def begin(self, turn: TurnRef) -> Generation:
        generation = self.core.generations.begin(turn.turn_id)
        self.core.control(
            ev.ResponseCreated(generation_id=generation.generation_id, turn_id=turn.turn_id)
        )
        return generation

    async def respond(
        self, turn: TurnRef, committed_at: float | None, first_plan: ToolPlan | None = None
    ) -> None:
        """Answer the turn with the model (after running ``first_plan``, a confirmed action).
        ``committed_at`` ``None``: no caller turn was just committed (an answer asked for again
        after a false interruption) and no time to first sound is counted."""
        generation = self.begin(turn)
        failure: ErrorCode | None = None
        with generation.scope:
            try:
                planner = self.core.planner(generation)
                async with speaking(self.core, generation, planner, committed_at) as speaker:
                    result: ToolEvidence | None = None
                    proceed = True
                    if first_plan is not None:
                        ran = await self.actor.run_plan(generation, speaker, first_plan)
                        proceed = await self._carry_on(speaker, ran)
                        if self.handoff.refused(first_plan):
                            history = self.core.history.messages()
                            await self.handoff.after_refusals(generation, speaker, turn, history)
                            proceed = False
                        result = ran if isinstance(ran, ToolEvidence) else None
                    if proceed:
                        await self._model_loop(generation, speaker, turn, result)
                    await speaker.finish()
            except* TimeoutError:
                failure = ErrorCode.LLM_TIMEOUT
            except* CapacityError:
                failure = ErrorCode.CAPACITY_EXHAUSTED
            except* VoceroError as failed:  # a runner's own code (a serving engine that failed)
                failure = first_code(failed)
        await self._end(generation, failure)

    async def say(
        self, turn: TurnRef, committed_at: float | None, text: str, *,
        readback: ToolPlan | None = None,
    ) -> Generation:
        """A short answer in the application's own words (a decline, a clarification); with
        ``readback``, it asks that question again, and only its delivery can satisfy it."""
        generation = self.begin(turn)
        coordinator = self.core.coordinator
        if readback is not None and coordinator is not None:
            await coordinator.readback_started(readback, generation.generation_id)
        with generation.scope:
            planner = self.core.planner(generation)
            async with speaking(self.core, generation, planner, committed_at) as speaker:
                if readback is not None:
                    await say_disclosures(speaker, readback)
                    await speaker.say(text, kind="readback", evidence=[proposal_evidence(readback)])
                else:
                    await speaker.say(text)
                await speaker.finish()
        await self._end(generation, None)
        return generation

    async def again(self, turn: TurnRef, units: Sequence[PlannedUnit]) -> Generation:
        """Say again the unheard ``units`` of an answer a false interruption stopped
        (ADR-0038), as a generation of the same turn."""
        generation = self.begin(turn)
        with generation.scope:
            planner = self.core.planner(generation)
            async with speaking(self.core, generation, planner, None) as speaker:
                for unit in units:
                    await speaker.again(unit)
                await speaker.finish()
        await self._end(generation, None)
        return generation

    async def reoffer(self, turn: TurnRef, committed_at: float, question: ToolPlan) -> None:
        """Ask ``question`` again on a resumed session: ``tool.confirmation_required.v1`` and
        its read-back anew, recorded as read back in this generation (:mod:`.resuming`)."""
        generation = self.begin(turn)
        coordinator = self.core.coordinator
        if coordinator is not None:
            await coordinator.readback_started(question, generation.generation_id)
        with generation.scope:
            planner = self.core.planner(generation)
            async with speaking(self.core, generation, planner, committed_at) as speaker:
                await speaker.say(RESUMED_LEAD)
                self.core.fire(Event.TOOL_INTENT)
                await self.actor.run_plan(generation, speaker, question)
                await speaker.finish()
        await self._end(generation, None)

    async def _end(self, generation: Generation, failure: ErrorCode | None) -> None:
        stopped = generation.done
        if not stopped:
            if failure is not None:
                self.core.error(failure)
            self.completion.finish(generation, "failed" if failure is not None else "completed")
        await self.completion.settle(generation, stopped=stopped)

    async def _model_loop(
        self,
        generation: Generation,
        speaker: Speaker,
        turn: TurnRef,
        result: ToolEvidence | None,
    ) -> None:
        """Ask the model until it answers in words; run each tool it asks for in between. A
        tool result the model says nothing about is read out in the profile's words."""
        for _ in range(MAX_TOOL_ROUNDS):
            intent, worded = await self._model_with_retry(generation, speaker)
            if generation.done:
                # Stopped while the model ran: its cancellation lands a loop iteration later
                # (completion._cancel_soon), and a stopped generation proposes nothing.
                return
            if intent is None:
                if not worded and result is not None:
                    await speaker.read_out(result)
                return
            history = self.core.history.messages()
            plan = await self.actor.propose(generation, turn, intent, history)
            if self.handoff.claims(plan):  # the caller asked for a person
                await self.handoff.perform(generation, speaker, plan)
                return
            ran = await self.actor.run_plan(generation, speaker, plan)
            if self.handoff.refused(plan):  # refused often enough: a person takes over
                await self.handoff.after_refusals(generation, speaker, turn, history)
                return
            if not await self._carry_on(speaker, ran):
                return
            result = ran if isinstance(ran, ToolEvidence) else None

    async def _carry_on(
        self, speaker: Speaker, ran: ToolEvidence | Literal["asked"] | None
    ) -> bool:
        """Whether the answer goes on after a tool plan: not after a denial or a read-back, and
        not when the tool's server asks the caller something (the answer says the question and
        ends; the call waits for the answer turn)."""
        if ran == "asked":
            await speaker.say(self.asking.first_words())
            return False
        return ran is not None

    async def resume(self, turn: TurnRef, committed_at: float, words: str) -> None:
        """The caller answered a server's question: say ``words`` (if any), then the result of
        the call it continued, once that call ends."""
        generation = self.begin(turn)
        with generation.scope:
            planner = self.core.planner(generation)
            async with speaking(self.core, generation, planner, committed_at) as speaker:
                pending = self.actor.pending
                outcome = await self.actor.resumed()  # the call carries on first
                if pending is not None and outcome is not None:
                    self.core.fire(Event.TOOL_RESULT)
                if words:
                    await speaker.say(words)
                if pending is not None and outcome is not None:
                    await speaker.read_out(self.actor.evidence(pending.plan, outcome, speaker))
                await speaker.finish()
        await self._end(generation, None)

    async def unanswered(self, turn: TurnRef, plan: ToolPlan) -> None:
        """A server's question ran out of time unanswered (the gateway cancelled it and told
        the server): once its call (``plan``, the pending one) ends, say what became of it, in
        the profile's words for its result (``input_timeout``: nothing was done), as the answer
        to the turn that made it."""
        generation = self.begin(turn)
        with generation.scope:
            planner = self.core.planner(generation)
            async with speaking(self.core, generation, planner, None) as speaker:
                outcome = await self.actor.resumed()
                if outcome is not None:
                    self.core.fire(Event.TOOL_RESULT)
                    await speaker.read_out(self.actor.evidence(plan, outcome, speaker))
                await speaker.finish()
        await self._end(generation, None)

    async def _model_with_retry(
        self, generation: Generation, speaker: Speaker
    ) -> tuple[ToolIntent | None, bool]:
        try:
            return await self._stream_model(speaker)
        except TimeoutError:
            if generation.side_effect or generation.units:
                raise
            self.core.metrics.count("llm_retries")
            return await self._stream_model(speaker)

    async def _stream_model(self, speaker: Speaker) -> tuple[ToolIntent | None, bool]:
        """One model answer: its tool intent (if it asked for one), and whether it said
        anything (words, or approved claims)."""
        core = self.core
        request = self.model_request()
        started = core.monotonic()
        draft = self.drafts.take(request) if self.drafts is not None else None
        if draft is not None and self.drafts is not None:  # prepared at the pause (ADR-0037)
            speaker.held = draft.audio_for
            stream = aiter(self.drafts.outputs(draft, request))
        else:
            stream = aiter(core.runners.llm.generate(request))
        first = True
        worded = False
        # One deadline for the stream: each output must come within llm_s of the model being
        # asked for it (the time the speaker takes to accept an output does not count).
        with tracing.span(tracing.LLM), core.clock.deadline(core.timeouts.llm_s) as deadline:
            async for output in stream:
                deadline.pause()
                if first:
                    core.metrics.observe_ms("llm_ttft_ms", (core.monotonic() - started) * 1000.0)
                    first = False
                intent, worded = await self._take(speaker, output, worded)
                if intent is not None:
                    return intent, worded
                deadline.extend()
        await speaker.flush()
        return None, worded

    @staticmethod
    async def _take(
        speaker: Speaker, output: LlmOutput, worded: bool
    ) -> tuple[ToolIntent | None, bool]:
        """Hand one model output to the speaker: the intent it asks for, and whether the answer
        has said anything so far."""
        if isinstance(output, ToolIntent):
            await speaker.flush()
            return output, worded
        if isinstance(output, IntentClassified):
            return None, worded
        if isinstance(output, ClaimAnswer):
            await speaker.answer(output)
            return None, True
        await speaker.feed(output.text)
        return None, worded or bool(output.text.strip())

    def pending(self) -> ToolIntent | None:
        """The proposal the caller is being asked about, so a correction can be made to it."""
        coordinator = self.core.coordinator
        question = coordinator.active_question() if coordinator is not None else None
        if question is None:
            return None
        return ToolIntent(name=question.tool, arguments=dict(question.fields))

    def model_request(
        self, mode: Literal["respond", "classify_confirmation"] = "respond"
    ) -> LlmRequest:
        """What the model is asked this turn: the conversation as heard, the tools it may use
        (and, as material only, the prohibited ones it must refuse), the open proposal, the
        caller's clock and timezone, and the profile's approved claims."""
        core = self.core
        ctx = core.ctx
        return LlmRequest(
            messages=self.model_messages(),
            tools=list(ctx.tools),
            max_words=ctx.profile.word_budget,
            mode=mode,
            pending=self.pending(),
            timezone=ctx.caller.timezone,
            now=core.clock.now(),
            locale=ctx.effective.locale,
            claims=core.claim_topics,
            refused=ctx.refused_tools,
        )

    def model_messages(self) -> list[Message]:
        profile = self.core.ctx.profile
        system = "\n".join([profile.instructions, *profile.rules]).strip()
        return [Message(role="system", content=system), *self.core.history]


def first_code(group: BaseExceptionGroup[VoceroError]) -> ErrorCode:
    """The public code of a failed generation: its first runner error's."""
    return group.exceptions[0].code if isinstance(group.exceptions[0], VoceroError) \
        else ErrorCode.INTERNAL
