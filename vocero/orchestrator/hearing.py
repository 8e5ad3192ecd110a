"""The listening policy: what caller audio means while the agent listens or speaks.

* Barge-in: speech heard while the agent holds the turn is watched (the machine's
  ``WATCH_INTERRUPTION``); once it has lasted ``min_interruption_ms`` it is judged on a partial
  transcript, and, unless it is a backchannel ("mm-hmm"), it takes the turn (``INTERRUPTION``).
  Only speech louder than the agent's own voice coming back counts toward that time
  (:class:`~.echo.EchoGate`, the adaptive threshold while it speaks). A client's own speech
  hint takes it at once. A caller cut off at a pause who goes on (:mod:`.merging`) stops the
  answer to the half at their speech's onset when it cannot be the agent's echo, and a quiet
  one is told from the echo by its words once it ends (ADR-0037).
* Partials: after every ``partial_interval_ms`` of new speech (the recogniser's own cadence).
* Speculation: at a pause, the final transcription starts while the turn's end is still being
  decided, and is reused when no speech followed.
* Endpointing: with an end-of-turn judge in the runner set, the turn policy
  (:class:`~.endpointing.Endpointer`) ends each utterance (judged at its pauses, the early
  transcription weighed once ready); without one, the VAD's own fixed hangover does.

The handlers never await: a barge-in takes effect before the handler returns. Barge-in events
are sent only while a generation is live (a client's speech hint with none live is its own
event); the machine says what they do.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from vocero.contracts.ports import Transcription
from vocero.orchestrator.caller_pace import CallerPace, PaceSettings
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.drafts import Drafts
from vocero.orchestrator.endpointing import Endpointer
from vocero.orchestrator.false_interruptions import FalseInterruptions, ResumeSettings
from vocero.orchestrator.listening import (
    SAMPLE_RATE,
    Listener,
    Speculation,
    Utterance,
    echoes,
    is_backchannel,
)
from vocero.orchestrator.machine import Effect, Event
from vocero.orchestrator.merging import TurnMerge
from vocero.orchestrator.partials import Partials
from vocero.orchestrator.turn_policy import Commit

ECHO_RETURN_MS = 20
"""The agent's audio comes back in the caller's audio no sooner than one 20 ms frame after it
was handed over (the client plays it, then its microphone fills a frame and sends it; the
network only adds): speech that began before that cannot be its echo."""
SPECULATE_AFTER_MS = 160
"""A pause this long starts the final transcription while the VAD still waits for the end of
the turn (its ``min_silence_ms`` hangover); speech after it makes that transcription stale."""

_BYTES_PER_MS = SAMPLE_RATE * 2 // 1000

UtteranceSink = Callable[[Utterance, bool], None]
"""Takes an ended utterance (and whether it must be checked for a backchannel) as a turn."""


class Hearing:
    def __init__(
        self, core: SessionCore, tg: anyio.abc.TaskGroup, on_turn: UtteranceSink, *,
        pace: PaceSettings | None = None, false_interruptions: ResumeSettings | None = None,
    ) -> None:
        self.core = core
        self._tg = tg
        self._on_turn = on_turn
        self.pace = CallerPace(pace)
        """The caller's within-turn pauses, learnt for the session (ADR-0038)."""
        self.false_interruptions = FalseInterruptions(false_interruptions)
        """The answer a caller's sound last stopped, resumed if it held no words (ADR-0038)."""
        self.turn_mode: str = core.ctx.effective.turn_mode
        self.endpointer: Endpointer | None = None
        self.listener = self._new_listener()
        self._speech_detected_at: float | None = None
        self.heard_ms = 0.0
        """Caller audio heard in the session (ms): the clock pauses between utterances are
        measured on (:attr:`Utterance.clock_ms`)."""
        self._sounding_from_ms: float | None = None
        """Where, on that clock, the caller's audio began to arrive after the agent's audio
        was handed over (``None``: none for the echo gate's window): an echo of it can begin no
        sooner than :data:`ECHO_RETURN_MS` after."""
        self.drafts: Drafts | None = None
        """Told of each pause's words and of the caller going on (ADR-0037)."""
        self.merge: TurnMerge | None = None
        """Told of each utterance's first speech and each barge-in by speech (ADR-0037)."""
        self.partials = Partials(core, tg, lambda u: self.listener.current is u)
        core.on(Effect.WATCH_INTERRUPTION, self._watch)
        core.on(Effect.RESET_LISTENING, self.reset)

    def set_turn_mode(self, mode: str) -> None:
        if mode != self.turn_mode:
            self.turn_mode = mode
            self.listener = self._new_listener()

    def reset(self, **_: str) -> None:
        self.core.caller_speaking = False
        self.listener = self._new_listener()

    def _new_listener(self) -> Listener:
        vad = self.core.runners.vad.open() if self.turn_mode == "server_vad" else None
        judge = self.core.runners.turn
        self.endpointer = None
        if vad is not None and judge is not None:
            self.endpointer = Endpointer(
                judge,
                self.core.ctx.profile.turn_taking,
                self._tg,
                on_commit=self._judged_end,
                words_of=_words_of,
                agent_said=lambda: _agent_said(self.core),
                locale=self.core.ctx.effective.locale,
                pace=self.pace,
            )
        return Listener(vad, vad_ends=self.endpointer is None)

    # ------------------------------------------------------------------------ handlers

    def audio(self, pcm16: bytes) -> None:
        segment = self.listener.push(pcm16)
        endpointer = self.endpointer
        frame_from_ms, self.heard_ms = self.heard_ms, self.heard_ms + len(pcm16) / _BYTES_PER_MS
        if not self.core.echo.sounding(self.core.monotonic()):
            self._sounding_from_ms = None
        elif self._sounding_from_ms is None:
            self._sounding_from_ms = frame_from_ms
        if segment.started is not None:
            started = segment.started
            started.clock_ms = self.heard_ms - started.duration_ms
            began = self._speech_detected_at = self.core.monotonic()
            sounding = self._sounding_from_ms
            started.onset_no_echo = _no_echo(self.core, started, pcm16, began, sounding)
            self.core.caller_speaking = True
            if endpointer is not None:
                endpointer.begin(segment.started)
            self.core.fire(Event.SPEECH_STARTED)
            if self.merge is not None and self.turn_mode == "server_vad":
                # a caller the session cut off at a pause, going on (ADR-0037)
                self.merge.began(segment.started.utterance_id, began, speech_from_ms=(
                    segment.started.clock_ms + segment.started.speech_from_ms))
        current = self.listener.current
        if segment.grown_ms > 0 and self.drafts is not None:
            self.drafts.resumed()  # the caller goes on: the pause's prepared answer is not it
        if current is not None and segment.grown_ms > 0:
            # Speech counts toward a barge-in only above the agent's own voice coming back.
            loud = self.core.echo.over_echo(pcm16, self.core.monotonic())
            current.loud_ms += segment.grown_ms if loud else 0.0
        if current is not None and self._give_way(current):
            pass  # a caller cut off went on: the answer to the half stopped at once
        elif current is not None and current.candidate and not current.judged:
            if (
                current.loud_ms >= self.core.ctx.profile.min_interruption_ms
                or self.turn_mode != "server_vad"
            ):
                current.judged = True
                self._tg.start_soon(self._judge_interruption, current)
        elif current is not None and not current.candidate:
            self.partials.maybe(current)
        if current is not None and self.turn_mode == "server_vad":
            self._maybe_speculate(current)
        if segment.ended is not None:
            self._ended(segment.ended)
        elif current is not None and self._sound_over(current):
            return
        elif current is not None and endpointer is not None:
            endpointer.frame(current, segment.voiced)

    def hint(self) -> None:
        """Client-side VAD: speech began. While answering this is a barge-in at once."""
        self._speech_detected_at = self.core.monotonic()
        self.core.caller_speaking = True
        live = self.core.generations.live() is not None
        self._interrupt(Event.SPEECH_HINT if live else Event.SPEECH_HINT_NO_OUTPUT, by="hint")

    def commit(self) -> Utterance | None:
        self.core.caller_speaking = False
        if self.endpointer is not None:
            self.endpointer.forget()
        return self.listener.commit()

    def interrupt(self, reason: str, status: str = "interrupted") -> None:
        """Something other than speech takes the turn (a typed turn, a cancel request)."""
        if self.core.generations.live() is not None:
            self._speech_detected_at = None
            self.core.fire(Event.BARGE_IN, reason=reason, status=status)

    def not_a_turn(self, utterance: Utterance, backchannel_check: bool) -> None:
        """The utterance's final was empty or a backchannel (or the agent's own words)."""
        if utterance.echo_check:
            self.core.false_barge_ins += 1
            self.core.metrics.count("false_barge_ins", kind="echo")
        elif utterance.interrupted:
            self.core.false_barge_ins += 1
            self.core.metrics.count("false_barge_ins", kind="backchannel")
        elif backchannel_check:
            self.core.metrics.count("backchannels_ignored")

    # ----------------------------------------------------------------------- barge-in

    def _watch(self, **_: str) -> None:
        current = self.listener.current
        if current is not None:
            current.candidate = True

    def _interrupt(self, event: Event, *, by: str) -> None:
        """``by``: what decided the stop (``hint``: the client's VAD; ``judged``: speech long
        enough and no backchannel in its partial; ``continuation``: a caller cut off going on,
        stopped on their speech alone), counted with the barge-in."""
        core = self.core
        step = core.fire(event)
        if Effect.STOP_OUTPUT in step.effects:
            started = self._speech_detected_at or core.monotonic()
            current = self.listener.current
            if self.merge is not None and current is not None:
                self.merge.interrupted(current.utterance_id, started,
                                       speech_from_ms=current.clock_ms + current.speech_from_ms)
            self.core.barge_ins += 1
            core.metrics.count("barge_ins", by=by)
            core.metrics.observe_ms("barge_in_stop_ms", (core.monotonic() - started) * 1000.0)

    def _give_way(self, utterance: Utterance) -> bool:
        """A caller cut off at a pause who goes on (the merge took the turn back at their
        speech's onset, :mod:`.merging`) stops the answer to the half at once: at the onset
        (the VAD's own ``min_speech_ms``), or as soon as that answer begins while they speak;
        not after ``min_interruption_ms`` of speech, nor after a partial transcription, which
        the caller would hear the answer through. Only speech whose onset was louder than the
        agent's voice could come back stops it so (an answer's echo on a speakerphone is no
        caller); a quieter one stops it once ``min_interruption_ms`` of it was, as any
        barge-in. Whether it held words is decided afterwards, as for any barge-in: a sound
        with none resumes the answer from what was heard (ADR-0038). True when it stopped the
        answer now."""
        merge = self.merge
        if utterance.interrupted or merge is None or self.turn_mode != "server_vad":
            return False
        first = merge.continuation(utterance.utterance_id)
        live = self.core.generations.live()
        if first is None or live is None or live.turn_id != first.turn_id:
            return False
        if not (
            utterance.onset_no_echo
            or utterance.loud_ms >= self.core.ctx.profile.min_interruption_ms
        ):
            return False
        utterance.judged = utterance.interrupted = True
        self.false_interruptions.stopped(utterance.utterance_id, live, utterance.duration_ms)
        self._interrupt(Event.INTERRUPTION, by="onset")
        return True

    async def _judge_interruption(self, utterance: Utterance) -> None:
        """Long enough to be a barge-in: stop, unless it is only a backchannel. A caller cut
        off who goes on (:mod:`.merging`) is not asked for one: they are finishing their own
        sentence, and the answer to half of it stops without waiting for a transcription."""
        core = self.core
        merge = self.merge
        taken_back = merge is not None and merge.continuation(utterance.utterance_id) is not None
        if self.turn_mode == "server_vad" and not taken_back:
            try:
                partial = await core.runners.stt.partial(
                    bytes(utterance.audio), sample_rate=16000, locale=core.ctx.effective.locale
                )
            except Exception:
                partial = None
            if partial is not None and is_backchannel(partial.text):
                utterance.backchannel_suspected = True
                core.metrics.count("backchannels_ignored")
                return
        live = core.generations.live()
        if live is not None and self.listener.current is utterance:
            utterance.interrupted = True
            self.false_interruptions.stopped(utterance.utterance_id, live, utterance.duration_ms)
            self._interrupt(Event.INTERRUPTION, by="continuation" if taken_back else "judged")

    def _sound_over(self, utterance: Utterance) -> bool:
        """The sound that stopped the agent is over and its transcription (started at its
        pause) holds no words: the utterance ends now, a grace after its speech, not at the end
        of the turn's silence (ADR-0038). True when it ended."""
        speculation = utterance.speculation
        if (
            self.listener.current is not utterance
            or not utterance.interrupted
            or speculation is None
            or speculation.result is None
            or not utterance.speculation_holds()
        ):
            return False
        if not self.false_interruptions.sound_over(
            utterance.utterance_id, speculation.result.text,
            speech_end_ms=utterance.last_voiced_at_ms, silence_ms=utterance.pause_ms,
        ):
            return False
        self.listener.commit()
        self._ended(utterance)
        return True

    def _judged_end(self, utterance: Utterance, commit: Commit) -> None:
        """The turn policy ended the utterance in progress."""
        if self.listener.current is not utterance:
            return
        self.listener.commit()
        if not utterance.candidate or utterance.judged:
            self.core.metrics.observe_ms("turn_endpointing_ms", commit.endpointing_ms)
        self._ended(utterance)

    def _ended(self, utterance: Utterance) -> None:
        self.core.caller_speaking = False
        self.false_interruptions.ended(utterance.utterance_id, utterance.last_voiced_at_ms)
        if self.endpointer is not None:
            self.endpointer.forget()
        elif not utterance.candidate or utterance.judged:
            self.core.metrics.observe_ms("turn_endpointing_ms", utterance.pause_ms)
        if utterance.candidate and not utterance.judged:
            if self._quiet_continuation(utterance):
                utterance.echo_check = True
                self._on_turn(utterance, True)
                return
            self.core.false_barge_ins += 1
            self.core.metrics.count("false_barge_ins", kind="too_short")
            self.core.fire(Event.SPEECH_DISCARDED)
            return
        self._on_turn(utterance, utterance.candidate)

    def _quiet_continuation(self, utterance: Utterance) -> bool:
        """An utterance that never counted as a barge-in (under the echo gate all along) but
        took the last turn back at its onset (:mod:`.merging`) and lasted as long as a
        barge-in must: a caller cut off who went on quietly, or the agent's voice coming back.
        It is transcribed, and its words decide (:meth:`echoed`): until issue 45's third round
        it was dropped as a blip, with the rest of the caller's request."""
        merge = self.merge
        return (
            merge is not None
            and merge.continuation(utterance.utterance_id) is not None
            and utterance.voiced_ms >= self.core.ctx.profile.min_interruption_ms
        )

    def echoed(self, text: str) -> bool:
        """``text`` is mostly the agent's own words (the answer live or last planned, and what
        the caller last heard it say): its voice coming back, not the caller."""
        current = self.core.generations.current
        planned = " ".join(u.text for u in current.planned) if current is not None else ""
        return echoes(text, f"{planned} {_agent_said(self.core)}")

    # -------------------------------------------------------------------- speculation

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
        self._tg.start_soon(self._speculate, speculation, bytes(utterance.audio), utterance)
        if self.endpointer is not None:
            self.endpointer.transcribing(utterance)

    async def _speculate(
        self, speculation: Speculation, audio: bytes, utterance: Utterance
    ) -> None:
        core = self.core
        try:
            with speculation.scope:
                speculation.result = await core.runners.stt.transcribe(
                    audio,
                    sample_rate=16000,
                    locale=core.ctx.effective.locale,
                    utterance_id=utterance.utterance_id,
                    vocabulary=core.vocabulary(),
                )
        except Exception:
            speculation.result = None  # the final transcribes again and handles the error
        finally:
            speculation.done.set()
        result = speculation.result
        if (
            self.drafts is not None
            and result is not None
            and self.listener.current is utterance
            and utterance.speculation_holds()
            and utterance.speculation is speculation
            and (not utterance.candidate or utterance.interrupted)
        ):  # the answer to these words (a turn taken back: the whole), prepared meanwhile
            self.drafts.words(result.text, utterance.utterance_id)
        if utterance.speculation is speculation and self._sound_over(utterance):
            return  # a sound with no words, over for its grace already: decided
        if self.endpointer is not None and utterance.speculation is speculation:
            self.endpointer.words(utterance)  # the judge now weighs the words of this pause


async def final_transcript(core: SessionCore, utterance: Utterance) -> Transcription:
    """The utterance's final: the speculation started at its last pause when no speech came
    after it, otherwise a transcription of the whole utterance."""
    speculation = utterance.speculation
    if speculation is not None and utterance.speculation_holds():
        await speculation.done.wait()
        if speculation.result is not None:
            core.metrics.count("stt_speculations", outcome="used")
            return speculation.result
    elif speculation is not None:
        speculation.scope.cancel()
        core.metrics.count("stt_speculations", outcome="stale")
    return await core.runners.stt.transcribe(
        bytes(utterance.audio),
        sample_rate=16000,
        locale=core.ctx.effective.locale,
        utterance_id=utterance.utterance_id,
        vocabulary=core.vocabulary(),
    )


def _agent_said(core: SessionCore) -> str:
    """What the caller last heard the agent say (the history keeps it as heard)."""
    for message in reversed(core.history):
        if message.role == "assistant" and message.content.strip():
            return message.content
    return ""


def _no_echo(
    core: SessionCore, utterance: Utterance, pcm16: bytes, now: float, sounding: float | None
) -> bool:
    """The speech that began ``utterance`` cannot be the agent's own voice coming back: it
    is louder than that could be (:class:`~.echo.EchoGate`), or it began in caller audio
    that arrived before any agent audio could be back in it (:data:`ECHO_RETURN_MS` after
    ``sounding``, where the first of the echo gate's window was handed over)."""
    onset = bytes(utterance.audio[round(utterance.speech_from_ms) * _BYTES_PER_MS:])
    if core.echo.over_echo(onset or pcm16, now):
        return True
    speech_from = utterance.clock_ms + utterance.speech_from_ms
    return sounding is None or speech_from < sounding + ECHO_RETURN_MS


def _words_of(utterance: Utterance) -> tuple[str, float | None]:
    """The early transcription of the current pause and its confidence, when it is ready and
    still current."""
    speculation = utterance.speculation
    if speculation is None or speculation.result is None or not utterance.speculation_holds():
        return "", None
    return speculation.result.text, speculation.result.confidence
