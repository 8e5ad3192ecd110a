"""One conversation: the async shell around the session machine, in parts.

The relay calls the ``on_*`` handlers; they never await, so control (barge-in, cancel) takes
effect before the handler returns. The work lives in parts, each holding the shared
:class:`~vocero.orchestrator.core.SessionCore` and nothing of the others:

* :class:`~.hearing.Hearing` — the listening policy (barge-in, partials, speculation);
* :class:`~.turns.Turns` — caller turns, one at a time, routed by the machine;
* :class:`~.responding.Responder` — one generation, the model and tool loop inside it;
* :class:`~.acting.Actor` — tool intents, the gate's plans, operations outside the generation;
* :class:`~.answers.Answers` — answers to the open question, clicks, withdrawals;
* :class:`~.completion.Completion` — stop, finish, heard text, delivery evidence.

The parts are built inside :meth:`Session.run`, with the session's task group passed to the two
that start tasks; before that the handlers do nothing. Nothing here reads the machine's state:
the handlers report what happened and act on the effects of the step (caller audio is heard, or
in text mode asks whether the recogniser is back); the composition root reports a dependency
lost or back the same way (:meth:`Session.dependency_failed`,
:meth:`Session.dependency_recovered`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import anyio
import structlog

from vocero.contracts.actions import ActionCoordinator
from vocero.contracts.clock import SystemClock
from vocero.contracts.events import SessionState
from vocero.contracts.ports import Message, Timers
from vocero.inference.runner_set import RunnerSet
from vocero.orchestrator.acting import Actor
from vocero.orchestrator.answers import Answers
from vocero.orchestrator.asking import Asking
from vocero.orchestrator.caller_pace import PaceSettings
from vocero.orchestrator.completion import Completion
from vocero.orchestrator.context import SessionContext, SessionMetrics, Timeouts
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.drafts import Drafts, RecoverySettings
from vocero.orchestrator.false_interruptions import ResumeSettings
from vocero.orchestrator.hearing import Hearing
from vocero.orchestrator.listening import Utterance
from vocero.orchestrator.machine import Effect, Event, Intent
from vocero.orchestrator.merging import TurnMerge
from vocero.orchestrator.output import OutputChannel
from vocero.orchestrator.recording import SessionRecorder
from vocero.orchestrator.responding import Responder
from vocero.orchestrator.resuming import Resumed
from vocero.orchestrator.turns import Turns

log = structlog.get_logger("vocero.session")


@dataclass(slots=True)
class _Parts:
    hearing: Hearing
    turns: Turns
    tg: anyio.abc.TaskGroup


class Session:
    def __init__(
        self,
        ctx: SessionContext,
        runners: RunnerSet,
        out: OutputChannel,
        *,
        coordinator: ActionCoordinator | None = None,
        recorder: SessionRecorder | None = None,
        metrics: SessionMetrics | None = None,
        timeouts: Timeouts = Timeouts(),
        monotonic: Callable[[], float] | None = None,
        clock: Timers | None = None,
        history: Iterable[Message] = (),
        resumed: Resumed | None = None,
        recovery: RecoverySettings = RecoverySettings(),
        false_interruptions: ResumeSettings | None = None,
        caller_pace: PaceSettings | None = None,
    ) -> None:
        """``clock`` drives every timeout and pause (a virtual one in tests); without one the
        real clock, read through ``monotonic`` when given. ``recovery``: prepared answers and
        yield-and-merge (ADR-0037)."""
        self.core = SessionCore(
            ctx,
            runners,
            out,
            coordinator=coordinator,
            recorder=recorder,
            metrics=metrics,
            timeouts=timeouts,
            clock=clock or (SystemClock(monotonic) if monotonic else SystemClock()),
        )
        for message in history:
            self.core.remember(message)
        self.machine = self.core.machine
        """The session's table (tests drive and inspect it); the shell only fires events."""
        self.history = self.core.history
        self.generations = self.core.generations
        self._parts: _Parts | None = None
        self._closed = False
        self._resumed = resumed
        """A resumed session: the statuses and the question its lost connection may have
        missed (:mod:`.resuming`), told before any new turn."""
        self._recovery = recovery
        self._false_interruptions = false_interruptions
        self._caller_pace = caller_pace
        """A false interruption resumes; the caller's pauses move the floor (ADR-0038)."""
        self.drafts: Drafts | None = None
        """The session's prepared answers (their counts), once it runs."""

    @property
    def ctx(self) -> SessionContext:
        return self.core.ctx

    @ctx.setter
    def ctx(self, ctx: SessionContext) -> None:
        self.core.ctx = ctx

    @property
    def state_name(self) -> SessionState:
        """The session's state as last reported (to show or record it, never to decide)."""
        return self.core.state_name

    # ----------------------------------------------------------------------- lifecycle

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Own the session's tasks until :meth:`close` cancels them. A part that fails takes
        the session to ``FAILED`` (the relay then closes the connection)."""
        core = self.core
        try:
            async with anyio.create_task_group() as tg:
                completion = Completion(core)
                asking = Asking(core)
                responder = Responder(core, Actor(core, tg, asking), completion, asking)
                answers = Answers(core, responder)
                hearing = Hearing(core, tg, self._utterance_ended, pace=self._caller_pace,
                                  false_interruptions=self._false_interruptions)
                turns = Turns(core, hearing, answers, responder, asking)
                self._parts = _Parts(hearing, turns, tg)
                self._recover(tg, hearing, turns, responder, asking)

                def expired() -> None:  # the table decides whether the agent speaks unasked
                    core.fire(Event.QUESTION_EXPIRED)

                def unasked(**_: str) -> None:  # queued behind any caller turn
                    tg.start_soon(turns.unanswered)

                asking.on_unanswered = expired
                core.on(Effect.QUEUE_UNASKED, unasked)
                if core.coordinator is not None:
                    core.coordinator.set_input_handler(asking.ask)
                core.fire(Event.CONFIGURED)
                tg.start_soon(self._prepare_model)
                if self._resumed is not None:
                    for status in self._resumed.statuses:
                        core.control(status)
                    if self._resumed.question is not None:
                        tg.start_soon(turns.reoffer, self._resumed.question)
                if core.ctx.opening:  # the agent speaks first (a call-back)
                    tg.start_soon(turns.opening, core.ctx.opening)
                task_status.started()
                await anyio.sleep_forever()
        except Exception:
            log.exception("session.failed", session_id=core.ctx.session_id)
            core.fire(Event.FAIL)
            raise

    def _recover(
        self,
        tg: anyio.abc.TaskGroup,
        hearing: Hearing,
        turns: Turns,
        responder: Responder,
        asking: Asking,
    ) -> None:
        """Wire the prepared answer and yield-and-merge into the parts (ADR-0037)."""
        core, settings = self.core, self._recovery

        def question_open() -> bool:
            coordinator = core.coordinator
            return asking.open is not None or (
                coordinator is not None and coordinator.active_question() is not None
            )

        drafts = Drafts(core, tg, responder.model_request, question_open=question_open,
                        settings=settings)
        merge = TurnMerge(core, window_ms=settings.merge_window_ms, pace=hearing.pace)
        self.drafts = hearing.drafts = turns.drafts = responder.drafts = drafts
        hearing.merge = turns.merge = drafts.merge = merge

    async def _prepare_model(self) -> None:
        """Let the model learn the session's tools and claims before the first turn; a failure
        is logged and the first turn tries again."""
        core = self.core
        try:
            await core.runners.llm.prepare(
                list(core.ctx.tools), core.claim_topics, core.ctx.refused_tools
            )
        except Exception:
            log.warning("session.model_prepare_failed", session_id=core.ctx.session_id,
                        exc_info=True)

    def close(self, reason: str = "client_close") -> None:
        self._closed = True
        core = self.core
        core.fire(Event.CLOSE, reason="session_closed", status="canceled")
        if self._parts is not None:
            self._parts.tg.cancel_scope.cancel()

    def set_turn_mode(self, mode: str) -> None:
        if self._parts is not None:
            self._parts.hearing.set_turn_mode(mode)

    # ------------------------------------------------------------------------ handlers

    def on_audio(self, pcm16: bytes) -> None:
        parts = self._parts
        if parts is None:
            return
        effects = self.core.fire(Event.AUDIO).effects
        if Effect.HEAR in effects:
            parts.hearing.audio(pcm16)
        elif Effect.PROBE_RECOVERY in effects and self.core.stt_ready():
            self.core.fire(Event.DEPENDENCY_RECOVERED)

    def dependency_failed(self) -> bool:
        """A dependency outside the session (the store) stopped answering: an idle session
        goes to text mode, a busy one carries on. True once the session has taken the outage
        (now or before); False: report it again later."""
        return Effect.OUTAGE_TAKEN in self.core.fire(Event.DEPENDENCY_FAILED).effects

    def dependency_recovered(self) -> None:
        """The dependency answers again: text mode ends, unless the recogniser is down too."""
        if not self.core.stt_down():
            self.core.fire(Event.DEPENDENCY_RECOVERED)

    def on_speech_hint(self) -> None:
        if self._parts is not None:
            self._parts.hearing.hint()

    def on_commit(self) -> None:
        parts = self._parts
        if parts is None:
            return
        utterance = parts.hearing.commit()
        if utterance is not None and utterance.audio:
            parts.tg.start_soon(parts.turns.audio, utterance)

    def on_text(self, text: str) -> None:
        parts = self._parts
        if parts is not None:
            parts.hearing.interrupt("new_input")
            parts.tg.start_soon(parts.turns.text, text)

    def on_playout(self, generation_id: str, played_ms: int) -> None:
        self.core.out.report_playout(generation_id, played_ms)

    def on_cancel(self, generation_id: str) -> None:
        live = self.generations.live()
        if self._parts is not None and live is not None and live.generation_id == generation_id:
            self._parts.hearing.interrupt("canceled", status="canceled")

    def on_confirmation(self, proposal_id: str, revision: int, decision: Intent) -> None:
        parts = self._parts
        if parts is not None:
            parts.tg.start_soon(parts.turns.clicked, proposal_id, revision, decision)

    def on_key_answer(self, decision: Intent) -> None:
        """A key pressed as the answer to the open confirmation question (on the phone, DTMF
        ``1``/``2``; docs/telephony.md "Keys"): judged exactly as a spoken "yes"/"no" is (a
        "yes" binds only once the read-back was heard, and only to the question last asked),
        without a classification. With no question open the key means nothing."""
        parts = self._parts
        coordinator = self.core.coordinator
        if parts is None or coordinator is None or coordinator.active_question() is None:
            return
        parts.hearing.interrupt("new_input")
        parts.tg.start_soon(parts.turns.keyed, decision)

    def _utterance_ended(self, utterance: Utterance, backchannel_check: bool) -> None:
        parts = self._parts
        if parts is not None:
            parts.tg.start_soon(parts.turns.audio, utterance, backchannel_check)
