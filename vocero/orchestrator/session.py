"""The async shell around the session state machine.

The relay calls the ``on_*`` handlers; they never await, so control (barge-in, cancel) takes
effect before the handler returns. Work that awaits (transcription, the model, synthesis, tools)
runs in tasks of the session's task group; each generation runs inside its own cancel scope, and
tool executions run outside it so a barge-in never undoes a dispatched operation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Literal

import anyio
import structlog

from vocero.contracts import events as ev
from vocero.contracts.actions import ActionCoordinator, ToolPlan, TurnRef
from vocero.contracts.errors import CODES, CapacityError, ErrorCode
from vocero.contracts.ports import (
    ClaimAnswer,
    IntentClassified,
    LlmRequest,
    Message,
    ToolIntent,
    Transcription,
)
from vocero.inference.runner_set import RunnerSet
from vocero.orchestrator.acting import Actor
from vocero.orchestrator.context import (
    NullMetrics,
    NullRecorder,
    SessionContext,
    SessionMetrics,
    SessionRecorder,
    Timeouts,
)
from vocero.orchestrator.generation import Generation
from vocero.orchestrator.ids import new_id
from vocero.orchestrator.listening import Listener, Speculation, Utterance, is_backchannel
from vocero.orchestrator.machine import Event, SessionMachine
from vocero.orchestrator.output import OutFrame, OutputChannel
from vocero.orchestrator.speaking import Speaker

log = structlog.get_logger("vocero.session")

SPECULATE_AFTER_MS = 160
"""A pause this long starts the final transcription while the VAD still waits for the end of
the turn (its ``min_silence_ms`` hangover); speech after it makes that transcription stale."""
ANSWERING = frozenset(
    {"THINKING", "TOOL_PENDING", "TOOL_RUNNING", "AWAITING_CONFIRMATION", "SPEAKING"}
)


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
        monotonic: Callable[[], float],
    ) -> None:
        self.ctx = ctx
        self.runners = runners
        self.out = out
        self.coordinator = coordinator
        self.recorder = recorder or NullRecorder()
        self.metrics = metrics or NullMetrics()
        self.timeouts = timeouts
        self.monotonic = monotonic
        self.machine = SessionMachine("CONFIGURING")
        self.history: list[Message] = []
        self.generation: Generation | None = None
        self.generations: dict[str, Generation] = {}
        self.turn_mode: str = ctx.effective.turn_mode
        self.listener = self._new_listener()
        self._tg: anyio.abc.TaskGroup | None = None
        self._turn_lock = anyio.Lock()
        self._speech_detected_at: float | None = None
        self._tts_failed = False
        self.actor = Actor(self)
        self.barge_ins = 0
        self.false_barge_ins = 0

    # ----------------------------------------------------------------------- lifecycle

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Own the session's tasks until :meth:`close` cancels them."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self.fire(Event.CONFIGURED)
            task_status.started()
            await anyio.sleep_forever()

    def close(self, reason: str = "client_close") -> None:
        if self.generation is not None and not self.generation.done:
            self._stop(self.generation, reason="session_closed", status="canceled")
        if self.machine.can(Event.CLOSE):
            self.fire(Event.CLOSE)
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    def set_turn_mode(self, mode: str) -> None:
        if mode != self.turn_mode:
            self.turn_mode = mode
            self.listener = self._new_listener()

    def _new_listener(self) -> Listener:
        vad = self.runners.vad.open() if self.turn_mode == "server_vad" else None
        return Listener(vad)

    # ------------------------------------------------------------------- inbound handlers

    def on_audio(self, pcm16: bytes) -> None:
        if self.machine.state == "DEGRADED":
            self._maybe_recover()
            return
        segment = self.listener.push(pcm16)
        if segment.started is not None:
            self._speech_started(segment.started)
        current = self.listener.current
        if current is not None and current.candidate and not current.judged:
            if (
                current.voiced_ms >= self.ctx.profile.min_interruption_ms
                or self.turn_mode != "server_vad"
            ):
                current.judged = True
                self.spawn(self._judge_interruption, current)
        elif current is not None and not current.candidate:
            self._maybe_partial(current)
        if current is not None and self.turn_mode == "server_vad":
            self._maybe_speculate(current)
        if segment.ended is not None:
            self._utterance_ended(segment.ended)

    def on_speech_hint(self) -> None:
        """Client-side VAD: speech began. While answering this is a barge-in."""
        self._speech_detected_at = self.monotonic()
        if self.answering():
            self.barge_in()
        elif self.machine.can(Event.SPEECH_STARTED) and self.machine.state == "LISTENING":
            self.fire(Event.SPEECH_STARTED)

    def on_commit(self) -> None:
        utterance = self.listener.commit()
        if utterance is not None and utterance.audio:
            self.spawn(self._audio_turn, utterance)

    def on_text(self, text: str) -> None:
        if self.answering():
            self.barge_in(reason="new_input")
        self.spawn(self._text_turn, text)

    def on_playout(self, generation_id: str, played_ms: int) -> None:
        self.out.report_playout(generation_id, played_ms)

    def on_cancel(self, generation_id: str) -> None:
        generation = self.generations.get(generation_id)
        if generation is not None and not generation.done:
            self._stop(generation, reason="canceled", status="canceled")

    def on_confirmation(
        self, proposal_id: str, revision: int, decision: Literal["confirm", "reject"]
    ) -> None:
        self.spawn(self.actor.button_confirmation, proposal_id, revision, decision)

    # ------------------------------------------------------------------------- speech in

    def answering(self) -> bool:
        generation = self.generation
        return generation is not None and not generation.done and self.machine.state in ANSWERING

    def _speech_started(self, utterance: Utterance) -> None:
        self._speech_detected_at = self.monotonic()
        if self.answering():
            utterance.candidate = True
        elif self.machine.state == "LISTENING":
            self.fire(Event.SPEECH_STARTED)

    async def _judge_interruption(self, utterance: Utterance) -> None:
        """Long enough to be a barge-in: stop, unless it is only a backchannel."""
        if self.turn_mode == "server_vad":
            try:
                partial = await self.runners.stt.partial(
                    bytes(utterance.audio), sample_rate=16000, locale=self.ctx.effective.locale
                )
            except Exception:
                partial = None
            if partial is not None and is_backchannel(partial.text):
                utterance.backchannel_suspected = True
                self.metrics.count("backchannels_ignored")
                return
        if self.answering() and self.listener.current is utterance:
            utterance.interrupted = True
            self.barge_in()

    def _maybe_partial(self, utterance: Utterance) -> None:
        """After every ``partial_interval_ms`` of new speech (the STT runner's own cadence; none
        when it is 0), transcribe what was said so far, one partial at a time."""
        interval = self.runners.stt.partial_interval_ms
        if interval <= 0 or utterance.partial_running:
            return
        if utterance.voiced_ms < max(utterance.next_partial_ms, interval):
            return
        utterance.partial_running = True
        utterance.next_partial_ms = utterance.voiced_ms + interval
        self.spawn(self._partial, utterance)

    async def _partial(self, utterance: Utterance) -> None:
        try:
            result = await self.runners.stt.partial(
                bytes(utterance.audio), sample_rate=16000, locale=self.ctx.effective.locale
            )
        except Exception:
            return
        finally:
            utterance.partial_running = False
        if result.text and self.listener.current is utterance:
            frame = OutFrame(
                payload=ev.Transcript(turn_id="", text=result.text), envelope=ev.TranscriptPartialV1
            )
            self.out.partial(frame)

    def _maybe_speculate(self, utterance: Utterance) -> None:
        """At a pause, transcribe what was said so far, once per pause. Not for a sound heard
        while the agent speaks that is too short to count as a barge-in: it will not be a turn."""
        if utterance.pause_ms < SPECULATE_AFTER_MS or utterance.speculation_holds():
            return
        if utterance.candidate and not utterance.judged:
            return
        if utterance.voiced_ms <= 0:
            return
        if utterance.speculation is not None:
            utterance.speculation.scope.cancel()
        speculation = Speculation(voiced_ms=utterance.voiced_ms)
        utterance.speculation = speculation
        self.spawn(self._speculate, speculation, bytes(utterance.audio), utterance.utterance_id)

    async def _speculate(self, speculation: Speculation, audio: bytes, utterance_id: str) -> None:
        try:
            with speculation.scope:
                speculation.result = await self.runners.stt.transcribe(
                    audio,
                    sample_rate=16000,
                    locale=self.ctx.effective.locale,
                    utterance_id=utterance_id,
                )
        except Exception:
            speculation.result = None  # the final transcribes again and handles the error
        finally:
            speculation.done.set()

    async def _final_transcript(self, utterance: Utterance) -> Transcription:
        """The utterance's final: the speculation started at its last pause when no speech came
        after it, otherwise a transcription of the whole utterance."""
        speculation = utterance.speculation
        if speculation is not None and utterance.speculation_holds():
            await speculation.done.wait()
            if speculation.result is not None:
                self.metrics.count("stt_speculations", outcome="used")
                return speculation.result
        elif speculation is not None:
            speculation.scope.cancel()
            self.metrics.count("stt_speculations", outcome="stale")
        return await self.runners.stt.transcribe(
            bytes(utterance.audio),
            sample_rate=16000,
            locale=self.ctx.effective.locale,
            utterance_id=utterance.utterance_id,
        )

    def _utterance_ended(self, utterance: Utterance) -> None:
        if utterance.candidate and not utterance.judged:
            self.false_barge_ins += 1
            self.metrics.count("false_barge_ins", kind="too_short")
            return
        self.spawn(self._audio_turn, utterance, utterance.candidate)

    def barge_in(self, reason: str = "barge_in") -> None:
        generation = self.generation
        if generation is None or generation.done:
            return
        started = self._speech_detected_at or self.monotonic()
        self._stop(generation, reason=reason, status="interrupted")
        self.barge_ins += 1
        self.metrics.count("barge_ins")
        self.metrics.observe_ms("barge_in_stop_ms", (self.monotonic() - started) * 1000.0)
        if reason == "barge_in" and self.machine.state == "LISTENING":
            self.fire(Event.SPEECH_STARTED)

    # ---------------------------------------------------------------------------- turns

    async def _audio_turn(self, utterance: Utterance, backchannel_check: bool = False) -> None:
        async with self._turn_lock:
            started = self.monotonic()
            try:
                with anyio.fail_after(self.timeouts.stt_s):
                    result = await self._final_transcript(utterance)
            except CapacityError:
                self.error(ErrorCode.CAPACITY_EXHAUSTED)
                self._discard_speech()
                return
            except Exception:
                log.warning("stt_failed", exc_info=True)
                self._degrade(ErrorCode.STT_UNAVAILABLE)
                return
            self.metrics.observe_ms("stt_final_ms", (self.monotonic() - started) * 1000.0)
            text = result.text.strip()
            if not text or (backchannel_check and is_backchannel(text)):
                if utterance.interrupted:
                    self.false_barge_ins += 1
                    self.metrics.count("false_barge_ins", kind="backchannel")
                elif backchannel_check:
                    self.metrics.count("backchannels_ignored")
                self._discard_speech()
                return
            if self.answering():
                self.barge_in(reason="new_input")
            await self._commit_turn(text, "audio", endpoint_at=started)

    async def _text_turn(self, text: str) -> None:
        async with self._turn_lock:
            await self._commit_turn(text, "text")

    def _discard_speech(self) -> None:
        if self.machine.state == "TRANSCRIBING":
            self.fire(Event.SPEECH_DISCARDED)

    async def _commit_turn(self, text: str, source: str, endpoint_at: float | None = None) -> None:
        """Commit a caller turn. ``endpoint_at`` (audio turns) is when the end of speech was
        detected: time to first sound is measured from there, so it includes transcription."""
        turn_id = new_id("turn")
        committed_at = endpoint_at if endpoint_at is not None else self.monotonic()
        self.control(
            ev.Transcript(turn_id=turn_id, text=text), ev.TranscriptFinalV1, turn_id=turn_id
        )
        self.recorder.turn(self.ctx.session_id, turn_id, source, text)
        self.history.append(Message(role="user", content=text))
        if self.generation is not None and not self.generation.done:
            self._stop(self.generation, reason="new_input", status="interrupted")
        self.fire(Event.TURN_COMMITTED)
        turn = TurnRef(session_id=self.ctx.session_id, turn_id=turn_id)
        question = self.coordinator.active_question() if self.coordinator else None
        if question is not None:
            await self.actor.spoken_confirmation(turn, question, committed_at)
        else:
            await self.respond(turn, committed_at)

    # ------------------------------------------------------------------------ responding

    def begin_generation(self, turn: TurnRef) -> Generation:
        generation = Generation(generation_id=new_id("gen"), turn_id=turn.turn_id)
        self.generation = generation
        self.generations[generation.generation_id] = generation
        self.control(
            ev.ResponseCreated(generation_id=generation.generation_id, turn_id=turn.turn_id)
        )
        return generation

    async def respond(
        self, turn: TurnRef, committed_at: float, first_plan: ToolPlan | None = None
    ) -> None:
        generation = self.begin_generation(turn)
        failure: ErrorCode | None = None
        with generation.scope:
            try:
                async with Speaker(self, generation, committed_at) as speaker:
                    proceed = True
                    if first_plan is not None:
                        proceed = await self.actor.run_plan(generation, speaker, turn, first_plan)
                    if proceed:
                        await self._model_loop(generation, speaker, turn)
                    await speaker.finish()
            except* TimeoutError:
                failure = ErrorCode.LLM_TIMEOUT
            except* CapacityError:
                failure = ErrorCode.CAPACITY_EXHAUSTED
        if failure is not None and not generation.done:
            self.error(failure)
            self.finish(generation, "failed")
            return
        self.finish(generation, "completed")

    async def _model_loop(self, generation: Generation, speaker: Speaker, turn: TurnRef) -> None:
        """Ask the model until it answers in words; run each tool it asks for in between."""
        for _ in range(4):
            intent = await self._model_with_retry(generation, speaker)
            if intent is None:
                return
            plan = await self.actor.propose(generation, turn, intent)
            if not await self.actor.run_plan(generation, speaker, turn, plan):
                return

    async def _model_with_retry(
        self, generation: Generation, speaker: Speaker
    ) -> ToolIntent | None:
        try:
            return await self._stream_model(generation, speaker)
        except TimeoutError:
            if generation.side_effect or generation.units:
                raise
            self.metrics.count("llm_retries")
            return await self._stream_model(generation, speaker)

    async def _stream_model(self, generation: Generation, speaker: Speaker) -> ToolIntent | None:
        request = LlmRequest(
            messages=self.model_messages(),
            tools=list(self.ctx.tools),
            max_words=self.ctx.profile.word_budget,
        )
        started = self.monotonic()
        stream = aiter(self.runners.llm.generate(request))
        first = True
        while True:
            with anyio.fail_after(self.timeouts.llm_s):
                try:
                    output = await anext(stream)
                except StopAsyncIteration:
                    break
            if first:
                self.metrics.observe_ms("llm_ttft_ms", (self.monotonic() - started) * 1000.0)
                first = False
            if isinstance(output, ToolIntent):
                await speaker.flush()
                return output
            if isinstance(output, IntentClassified | ClaimAnswer):
                continue
            await speaker.feed(output.text)
        await speaker.flush()
        return None

    def model_messages(self) -> list[Message]:
        profile = self.ctx.profile
        system = "\n".join([profile.instructions, *profile.rules]).strip()
        return [Message(role="system", content=system), *self.history]

    # --------------------------------------------------------------------- finishing

    def finish(self, generation: Generation, status: ev.CompletionStatus) -> None:
        if generation.done:
            return
        generation.done = True
        self.out.stop_generation(generation.generation_id)
        track = self.out.playout_of(generation.generation_id)
        played = (
            self.out.acknowledged_ms(generation.generation_id)
            if self.out.playout_acks
            else track.sent_ms
        )
        heard = generation.heard_text(played) if generation.had_audio else generation.text
        self._complete(generation, status, heard, played, track.sent_ms)
        if self.machine.state in ("THINKING", "SPEAKING", "AWAITING_CONFIRMATION"):
            self.fire(Event.RESPONSE_COMPLETED)
        if self.machine.state == "LISTENING" and self._stt_down():
            self._degrade(ErrorCode.STT_UNAVAILABLE)

    def _stop(self, generation: Generation, *, reason: str, status: ev.CompletionStatus) -> None:
        """Stop a generation now: flush first, then nothing more of it, then its completion."""
        generation.done = True
        self.out.stop_generation(generation.generation_id)
        self.control(ev.StopAndFlush(generation_id=generation.generation_id, reason=reason))
        generation.scope.cancel()
        if self.try_fire(Event.BARGE_IN):
            self.fire(Event.OUTPUT_STOPPED)
        played = self.out.acknowledged_ms(generation.generation_id)
        sent = self.out.playout_of(generation.generation_id).sent_ms
        self._complete(generation, status, generation.heard_text(played), played, sent)

    def _complete(
        self,
        generation: Generation,
        status: ev.CompletionStatus,
        heard: str,
        played: float,
        sent: float,
    ) -> None:
        generation.status = status
        if heard:
            self.history.append(Message(role="assistant", content=heard))
        self.control(
            ev.ResponseCompleted(
                generation_id=generation.generation_id, status=status, heard_text=heard
            )
        )
        self.recorder.generation(
            self.ctx.session_id,
            generation.generation_id,
            generation.turn_id,
            status=status,
            generated_text=generation.text,
            heard_text=heard,
            played_ms=played,
            sent_ms=sent,
        )
        self.metrics.count("generations", status=status)
        if self.coordinator is not None:
            delivery = functools.partial(
                self.coordinator.record_delivery,
                generation.generation_id,
                delivered=heard == generation.text and status == "completed",
                observable=self.out.playout_acks and generation.had_audio,
            )
            self.spawn(delivery)

    # ------------------------------------------------------------------ degradation

    def _stt_down(self) -> bool:
        return self.turn_mode != "text" and self.runners.stt.status().health == "unavailable"

    def _degrade(self, code: ErrorCode) -> None:
        self.error(code)
        self.listener = self._new_listener()
        if self.machine.state == "TRANSCRIBING":
            self.fire(Event.SPEECH_DISCARDED)
        self.try_fire(Event.DEPENDENCY_FAILED)

    def _maybe_recover(self) -> None:
        if self.runners.stt.status().health in ("ready", "degraded"):
            self.fire(Event.DEPENDENCY_RECOVERED)

    # ------------------------------------------------------------------ plumbing

    def fire(self, event: Event) -> None:
        previous, new = self.machine.fire(event)
        if previous != new:
            self.control(ev.StateChanged(state=new, previous=previous))  # type: ignore[arg-type]
            self.recorder.state(self.ctx.session_id, new)

    def try_fire(self, event: Event) -> bool:
        if not self.machine.can(event):
            return False
        self.fire(event)
        return True

    def control(
        self, payload: object, envelope: type[ev.ServerEnvelope] | None = None, *, turn_id: str = ""
    ) -> None:
        self.out.control(OutFrame(payload=payload, envelope=envelope, turn_id=turn_id))  # type: ignore[arg-type]

    def error(self, code: ErrorCode) -> None:
        info = CODES[code]
        self.metrics.count("errors", code=code.value)
        self.control(
            ev.Error(
                code=code.value,
                category=info.category.value,
                retryable=info.retryable,
                user_message_key=info.user_message_key,
                correlation_id=new_id("corr"),
            )
        )

    def spawn(self, func: Callable[..., object], *args: object) -> None:
        if self._tg is not None:
            self._tg.start_soon(func, *args)  # type: ignore[arg-type]
