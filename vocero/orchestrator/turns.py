"""Caller turns, one at a time: transcribe, commit, route, answer.

A turn is committed (``transcript.final.v1``, the store, the history) and the machine routes it:
with no question open it is answered (``RESPOND``); with one open it is first classified, and
only ``confirm``/``reject``/``uncertain`` are answers to it, anything else a new request served
like any turn (a changed value makes a new proposal revision). Turns and clicks queue on one
lock, so one answer is settled (its delivery recorded) before the next turn is judged.
"""

from __future__ import annotations

import anyio
import structlog

from vocero.contracts import events as ev
from vocero.contracts.actions import ToolPlan, TurnRef
from vocero.contracts.errors import CapacityError, ErrorCode
from vocero.contracts.ports import Message, Transcription
from vocero.observability import tracing
from vocero.orchestrator.answers import Answers
from vocero.orchestrator.asking import Asking
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.drafts import Drafts
from vocero.orchestrator.false_interruptions import Resuming
from vocero.orchestrator.hearing import Hearing, final_transcript
from vocero.orchestrator.ids import new_id
from vocero.orchestrator.listening import Utterance, is_backchannel
from vocero.orchestrator.machine import Effect, Event, Intent, Step, routing_event
from vocero.orchestrator.merging import TurnMerge
from vocero.orchestrator.responding import Responder

log = structlog.get_logger("vocero.turns")
KEYED: dict[Intent, str] = {"confirm": "[keypad: yes]", "reject": "[keypad: no]"}
"""How a key answer reads in the history and the records (the caller said nothing)."""


class Turns:
    def __init__(
        self,
        core: SessionCore,
        hearing: Hearing,
        answers: Answers,
        responder: Responder,
        asking: Asking,
    ) -> None:
        self.core = core
        self.hearing = hearing
        self.answers = answers
        self.responder = responder
        self.asking = asking
        self._lock = anyio.Lock(fast_acquire=True)
        """One turn at a time. Taken without a checkpoint when free: a typed turn goes on to the
        model in the same step, not behind every task that became ready meanwhile."""
        self.resuming = Resuming(core, responder)
        self.drafts: Drafts | None = None
        self.merge: TurnMerge | None = None
        """Drafts told of each commit; a continuation joined to the turn it took back
        (ADR-0037)."""

    async def audio(self, utterance: Utterance, backchannel_check: bool = False) -> None:
        async with tracing.turn(self.core.ctx.session_id, "audio", utterance), self._lock:
            core = self.core
            started = core.monotonic()
            result = await self._transcribe(utterance)
            if result is None:
                await self._carried_alone(started)
                return
            core.metrics.observe_ms("stt_final_ms", (core.monotonic() - started) * 1000.0)
            text = result.text.strip()
            stopped = self.hearing.false_interruptions.take(utterance.utterance_id, text)
            echo = utterance.echo_check and self.hearing.echoed(text)  # (ADR-0037)
            if (stopped is not None or not text or echo
                    or (backchannel_check and is_backchannel(text))):
                self.hearing.not_a_turn(utterance, backchannel_check)
                core.fire(Event.SPEECH_DISCARDED)
                if stopped is not None:  # a cough, an "mm-hmm" stopped it (ADR-0038)
                    await self.resuming.resume(stopped)
                await self._carried_alone(started)
                return
            if self.merge is not None:
                text = await self.merge.join(utterance.utterance_id, text)
                if self.merge.carry(utterance.utterance_id, text, utterance.spoken_to_ms):
                    return  # the caller already went on: said with the rest (ADR-0037)
            await self._commit(text, "audio", endpoint_at=started,
                               spoken_to_ms=utterance.spoken_to_ms)

    async def _carried_alone(self, started: float) -> None:
        """The audio turn after a carried first part was no turn (no words, a backchannel, the
        recogniser failed): the first part is committed on its own after all."""
        text = self.merge.carried() if self.merge is not None else ""
        if text:
            await self._commit(text, "audio", endpoint_at=started)

    async def text(self, text: str) -> None:
        async with tracing.turn(self.core.ctx.session_id, "text"), self._lock:
            await self._commit(text, "text")

    async def keyed(self, decision: Intent) -> None:
        """A key answering the open confirmation question: committed as the caller's turn (the
        history reads it as their yes or no) and routed as a spoken answer with its intent
        known."""
        async with tracing.turn(self.core.ctx.session_id, "key"), self._lock:
            await self._commit(KEYED[decision], "text", known=decision)

    async def unanswered(self) -> None:
        """A server's question ran out of time with nobody answering (the machine queued the
        agent's turn): the agent takes the turn, unless the machine says the caller has begun
        one meanwhile (that turn has the floor)."""
        async with tracing.turn(self.core.ctx.session_id, "unanswered"), self._lock:
            core = self.core
            pending = self.responder.actor.pending
            if pending is None:
                return
            if Effect.SPEAK_UNASKED not in core.fire(Event.QUESTION_UNANSWERED).effects:
                return
            turn = TurnRef(session_id=core.ctx.session_id, turn_id=pending.turn_id,
                           traceparent=tracing.committed(pending.turn_id))
            await self.responder.unanswered(turn, pending.plan)

    async def opening(self, text: str) -> None:
        """The agent speaks first (a call-back answered on the phone says who is calling and
        why): its line takes a turn of its own, in the application's words, before any of the
        caller's (they queue behind it; speech over it barges in as over any answer)."""
        async with tracing.turn(self.core.ctx.session_id, "opening"), self._lock:
            core = self.core
            if Effect.RESPOND not in core.fire(Event.TURN_COMMITTED).effects:
                return  # not the agent's turn after all: nothing said
            turn_id = new_id("turn")
            turn = TurnRef(session_id=core.ctx.session_id, turn_id=turn_id,
                           traceparent=tracing.committed(turn_id))
            log.info("session.opening", session_id=core.ctx.session_id)
            await self.responder.say(turn, core.monotonic(), text)

    async def reoffer(self, question: ToolPlan) -> None:
        """A resumed session's question that was asked and never acted on is asked again, as
        the agent's turn, before any of the caller's (a "yes" sent at once queues behind it and
        binds once the read-back was heard; :mod:`.resuming`)."""
        async with tracing.turn(self.core.ctx.session_id, "reoffer"), self._lock:
            core = self.core
            if Effect.RESPOND not in core.fire(Event.TURN_COMMITTED).effects:
                return
            turn_id = new_id("turn")
            turn = TurnRef(session_id=core.ctx.session_id, turn_id=turn_id,
                           traceparent=tracing.committed(turn_id))
            log.info("session.question_reoffered", session_id=core.ctx.session_id,
                     proposal_id=question.proposal_id, revision=question.revision)
            await self.responder.reoffer(turn, core.monotonic(), question)

    async def clicked(self, proposal_id: str, revision: int, decision: Intent) -> None:
        async with tracing.turn(self.core.ctx.session_id, "click"), self._lock:
            await self.answers.clicked(proposal_id, revision, decision)

    async def _transcribe(self, utterance: Utterance) -> Transcription | None:
        core = self.core
        try:
            with core.clock.fail_after(core.timeouts.stt_s), tracing.span(tracing.STT):
                return await final_transcript(self.core, utterance)
        except CapacityError:
            core.error(ErrorCode.CAPACITY_EXHAUSTED)
            core.fire(Event.SPEECH_DISCARDED)
        except Exception:
            log.warning("stt_failed", exc_info=True)
            core.degrade(ErrorCode.STT_UNAVAILABLE)
        return None

    async def _commit(
        self,
        text: str,
        source: str,
        endpoint_at: float | None = None,
        *,
        known: Intent | None = None,
        spoken_to_ms: float | None = None,
    ) -> None:
        """Commit a caller turn. ``endpoint_at`` (audio turns) is when the end of speech was
        detected: time to first sound is measured from there, so it includes transcription.
        ``spoken_to_ms`` (audio turns): the caller's last word, on the session's clock of caller
        audio (a pause taken back is measured from it, ADR-0038)."""
        core = self.core
        turn_id = new_id("turn")
        committed_at = endpoint_at if endpoint_at is not None else core.monotonic()
        core.control(
            ev.Transcript(turn_id=turn_id, text=text), ev.TranscriptFinalV1, turn_id=turn_id
        )
        core.recorder.turn(core.ctx.session_id, turn_id, source, text)
        message = Message(role="user", content=text)
        core.remember(message)
        if self.drafts is not None:
            self.drafts.committed(text)
        if self.merge is not None:  # only a spoken turn is committed at a pause
            self.merge.committed(turn_id, text, message, committed_at, spoken=source == "audio",
                                 spoken_to_ms=spoken_to_ms)
        core.admission.revise_question()  # whatever was planned for the last one is stale
        step = core.fire(Event.TURN_COMMITTED)
        turn = TurnRef(session_id=core.ctx.session_id, turn_id=turn_id,
                       traceparent=tracing.committed(turn_id))
        await self._route(turn, step, committed_at, known)

    async def _route(
        self, turn: TurnRef, step: Step, committed_at: float, known: Intent | None = None
    ) -> None:
        core = self.core
        question: ToolPlan | None = None
        intent: Intent = "new_request"
        if Effect.CLASSIFY_ANSWER in step.effects and self.asking.open is not None:
            await self._answer_server(turn, committed_at)
            return
        if Effect.CLASSIFY_ANSWER in step.effects:
            coordinator = core.coordinator
            question = coordinator.active_question() if coordinator is not None else None
            if question is None:  # it expired or ended meanwhile: the turn is a request
                core.fire(Event.QUESTION_CLOSED)
            else:
                intent = known if known is not None else await self.answers.classify()
            step = core.fire(routing_event(intent))
        if Effect.SUBMIT_ANSWER in step.effects and question is not None:
            await self.answers.spoken(turn, question, intent, committed_at)
            return
        if await self.answers.withdrawal(turn, committed_at):
            return
        await self.responder.respond(turn, committed_at)

    async def _answer_server(self, turn: TurnRef, committed_at: float) -> None:
        """The turn answers a tool server's question (it is open: nothing else is routed)."""
        core = self.core
        step = core.fire(Event.ANSWER)
        assert Effect.SUBMIT_ANSWER in step.effects
        words, settled = self.asking.answer(core.history[-1].content)
        if settled:
            await self.responder.resume(turn, committed_at, words)
            return
        generation = await self.responder.say(turn, committed_at, words)
        self.asking.heard(generation.heard)
