"""False interruptions: the agent was stopped by a sound that carried no words (ADR-0038).

A barge-in stops the answer at once, before anything is known of what the caller said. When the
sound that stopped it turns out to have held nothing the caller asked for, the answer resumes
from what the caller heard, instead of being dropped.

**The signal.** The utterance that stopped the agent (``Utterance.interrupted``):

* its final transcript has no words (:func:`~vocero.contracts.lexicon.backchannels.has_no_words`:
  empty, non-speech marks such as "[cough]", fillers, or a backchannel such as "mm-hmm"), and
* its speech ended within :attr:`ResumeSettings.window_ms` of the stop, on the utterance's
  own audio clock (a cough, not a caller who talks on and whose words the recogniser missed;
  the silence the turn policy then waits, up to ``max_silence_ms`` for a sound without words,
  does not count).

**When it is decided.** At the end of the utterance, on its final transcript; or sooner
(:meth:`FalseInterruptions.sound_over`), once the sound's speech has been over for
:attr:`ResumeSettings.grace_ms` and the recogniser's transcription of it, started at its pause,
holds no words. Without that, a sound with no words waits for its utterance's end: with the
end-of-turn judge, ``max_silence_ms`` (1.6 s) of silence, since its audio alone is too short to
end a turn (``audio_min_speech_ms``) and it has no words to judge. Speech within the grace keeps
the utterance going (its words are judged whole); after it, it is a new utterance, which barges
in on the resumed answer as any would.

**What resumes** (:func:`unheard_rest`): the units the stopped answer had planned, from the
first one the caller did not hear whole: the cut unit is said again whole, the ones after it
as planned. A read-back among them is read again whole, disclosures first, as the question's
only valid delivery (a partly heard read-back is never taken as heard). An answer stopped before
it planned any unit is asked for again. History keeps what was heard of the stopped answer, and
then the resumed part as it is heard, each by playout (:mod:`.completion`).

Sans-IO except :class:`Resuming`, the small async shell that performs a resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from vocero.contracts.actions import TurnRef
from vocero.contracts.lexicon.backchannels import has_no_words
from vocero.observability import tracing
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.generation import Generation
from vocero.orchestrator.machine import Effect, Event
from vocero.orchestrator.responding import Responder
from vocero.speech import PlannedUnit

log = structlog.get_logger("vocero.false_interruptions")

MIN_GRACE_MS = 160
"""The early decision never comes sooner after the sound than this: the transcription it reads
starts at a pause this long (``hearing.SPECULATE_AFTER_MS``), and a gap between words is shorter."""
MAX_GRACE_MS = 1_000
"""... nor later than this: a longer grace would come about as late as the end-of-turn silence
it stands in for."""


@dataclass(frozen=True, slots=True)
class ResumeSettings:
    """``vocero serve --resume-false-interruptions on|off --false-interruption-window-ms
    --false-interruption-grace-ms``."""

    enabled: bool = True
    """A false interruption resumes the answer it stopped (off: the answer is dropped)."""
    window_ms: int = 1500
    """The speech of the sound that stopped the agent must have ended within this long of the
    stop (ms of its audio): a cough, a hum, an "mm-hmm"; one that goes on longer is the
    caller's, whatever its words."""
    grace_ms: int = 300
    """Decide this long after the sound's speech ended, once its transcription has no words,
    instead of waiting for the utterance to end (``max_silence_ms`` with the end-of-turn judge).
    Held within :data:`MIN_GRACE_MS` and :data:`MAX_GRACE_MS`; 0: only the utterance's end
    decides, as before."""

    @property
    def grace(self) -> float | None:
        """The grace in force (bounded), or ``None`` when the early decision is off."""
        if not self.enabled or self.grace_ms <= 0:
            return None
        return float(min(max(self.grace_ms, MIN_GRACE_MS), MAX_GRACE_MS))


@dataclass(slots=True)
class _Stop:
    utterance_id: str
    generation: Generation
    stopped_ms: float
    """Where in the utterance's audio the agent was stopped."""
    speech_end_ms: float | None = None
    """Where in it the sound's speech ended, once the utterance ended."""


class FalseInterruptions:
    """The last answer a caller's sound stopped, and whether that sound was a false one."""

    def __init__(self, settings: ResumeSettings | None = None) -> None:
        self.settings = settings or ResumeSettings()
        self._stop: _Stop | None = None

    def stopped(self, utterance_id: str, generation: Generation, at_ms: float) -> None:
        """The utterance ``utterance_id`` stopped ``generation`` at ``at_ms`` of its audio."""
        self._stop = _Stop(utterance_id, generation, at_ms)

    def ended(self, utterance_id: str, speech_end_ms: float) -> None:
        """The utterance ended; its speech ended at ``speech_end_ms`` of its audio."""
        stop = self._stop
        if stop is not None and stop.utterance_id == utterance_id and stop.speech_end_ms is None:
            stop.speech_end_ms = speech_end_ms

    def sound_over(
        self, utterance_id: str, words: str, *, speech_end_ms: float, silence_ms: float
    ) -> bool:
        """The utterance ``utterance_id`` has been silent ``silence_ms`` since its speech ended at
        ``speech_end_ms`` of its audio, and the transcription of it so far reads ``words``: True
        when it is the sound that stopped the agent and that is enough to decide it was a false
        interruption now (its grace has passed, no words, within the window). The caller then
        ends the utterance and :meth:`take` decides on the same words."""
        stop, grace = self._stop, self.settings.grace
        if stop is None or stop.utterance_id != utterance_id or grace is None:
            return False
        if silence_ms < grace or speech_end_ms - stop.stopped_ms > self.settings.window_ms:
            return False
        if not has_no_words(words):
            return False
        log.info("false_interruption.sound_over", silence_ms=round(silence_ms),
                 lasted_ms=round(speech_end_ms - stop.stopped_ms),
                 generation_id=stop.generation.generation_id)
        return True

    def take(self, utterance_id: str, final: str) -> Generation | None:
        """The utterance's final transcript is ``final``: the answer it stopped, when that was a
        false interruption and is to resume; ``None`` otherwise (the stop is forgotten)."""
        stop = self._stop
        if stop is None or stop.utterance_id != utterance_id:
            return None
        self._stop = None
        if not self.settings.enabled:
            return None
        lasted_ms = None if stop.speech_end_ms is None else stop.speech_end_ms - stop.stopped_ms
        no_words = has_no_words(final)
        resume = no_words and lasted_ms is not None and lasted_ms <= self.settings.window_ms
        log.info(
            "false_interruption.judged",
            resume=resume,
            no_words=no_words,
            lasted_ms=None if lasted_ms is None else round(lasted_ms),
            generation_id=stop.generation.generation_id,
        )
        return stop.generation if resume else None


def unheard_rest(planned: Sequence[PlannedUnit], heard: str) -> list[PlannedUnit]:
    """The planned units from the first one ``heard`` does not hold whole (the cut one)."""
    said = ""
    for index, unit in enumerate(planned):
        through = f"{said} {unit.text}".strip()
        if heard != through and not heard.startswith(through + " "):
            return list(planned[index:])
        said = through
    return []


class Resuming:
    """Performs a resume: the stopped answer's unheard rest, in a new generation of its turn."""

    def __init__(self, core: SessionCore, responder: Responder) -> None:
        self.core = core
        self.responder = responder

    async def resume(self, stopped: Generation) -> None:
        core = self.core
        rest = unheard_rest(stopped.planned, stopped.heard)
        coordinator = core.coordinator
        question = coordinator.active_question() if coordinator is not None else None
        reread = question is not None and any(unit.kind == "readback" for unit in rest)
        again = not stopped.planned and not stopped.side_effect
        if not (rest or again):
            return  # all of it was heard, or it did something it must not do twice
        if Effect.RESUME_ANSWER not in core.fire(Event.FALSE_INTERRUPTION).effects:
            return  # the caller has begun again meanwhile: their turn has the floor
        turn = TurnRef(
            session_id=core.ctx.session_id,
            turn_id=stopped.turn_id,
            traceparent=tracing.committed(stopped.turn_id),
        )
        core.metrics.count("false_interruptions_resumed")
        log.info("false_interruption.resumed", generation_id=stopped.generation_id,
                 units=len(rest), of=len(stopped.planned), reread=reread)
        if reread and question is not None:
            await self.responder.say(turn, None, question.summary, readback=question)
        elif rest:
            await self.responder.again(turn, rest)
        else:  # stopped before it planned a word: asked again, on the same history
            await self.responder.respond(turn, None)
