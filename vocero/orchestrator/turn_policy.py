"""When the caller's turn is over: a sans-IO policy over VAD frames and end-of-turn verdicts.

Fed, on a clock it is given (ms), whether each frame of the utterance was voiced, and the
verdicts of the judge it asked for, it decides (docs/architecture.md "Turn-taking and endpointing",
ADR-0017, ADR-0022):

* ask the judge (:class:`AskJudge`) as soon as a transcript of the utterance up to this pause
  is ready (:meth:`TurnPolicy.words`), and at a pause of ``judge_pause_ms`` if none is yet,
  or ``words_wait_ms`` if one is on its way (:meth:`TurnPolicy.transcribing`): the words are
  worth waiting a little for, one judgement that weighs them costs less than two, and a
  judgement of the audio alone made while they are transcribed shares the cores with the
  recogniser and slows both;
* commit (:class:`Commit`) when a verdict says the caller has finished with enough confidence:
  ``finished_probability`` when the words read as a finished clause, ``complete_probability``
  when the judge weighed other words too, ``audio_probability`` when it heard the audio alone
  (never for an utterance with less than ``audio_min_speech_ms`` of speech);
* otherwise keep listening and ask again ``rejudge_ms`` later if there is more to hear, and at
  once when the transcript becomes ready. The judge hears at most ``judge_window_ms`` of the
  silence (an audio turn model trained on turns cut shortly after speech grows surer with
  every extra 100 ms of silence, mid-sentence too), so once that window is heard only new
  words are worth a new judgement;
* words that visibly go on (``TurnVerdict.words_going_on``: an open word, a number being
  spelled out) never commit, whatever the audio says; words the recogniser was sure of that
  read as finished commit at ``sure_probability`` (the words carry the decision);
* when a words model read the transcript (``TurnVerdict.words_probability``, ADR-0025), words
  it finds unlikely to end there (``words_hold_probability``) never commit on that verdict,
  and words it finds likely to (``words_end_probability``) commit unless the audio is all but
  sure the caller goes on (``words_end_audio_probability``);
* once the caller has paused (a pause the judge was asked about) and gone on, the utterance is
  *resumed*: its next pause is judged with the whole utterance's words and audio as quickly as
  any, a finished statement commits at ``resumed_probability``, and a pause whose words were
  judged and do not go on commits after ``resumed_silence_ms`` of silence;
* with the caller's pace learnt (:class:`~.caller_pace.CallerPace`, ADR-0038: their pauses that
  were no turn end), no verdict ends the turn before their silence floor (a judged end is
  taken when the silence reaches it), the words model's end waits that floor instead of
  ``words_end_silence_ms``, and the resumed end waits at least that floor;
* commit after ``max_silence_ms`` of silence whatever was said (the last resort), and after
  ``fallback_silence_ms`` when the judge failed or was busy this pause.

A verdict for a ticket that is no longer outstanding (speech resumed after it was asked, or a
newer one was asked) is stale and ignored. Speech never commits: only silence, or a verdict
about the silence so far, does. The table :data:`TRANSITIONS` is every legal move.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vocero.contracts.domain import TurnTaking
from vocero.contracts.ports import TurnVerdict
from vocero.orchestrator.caller_pace import CallerPace

TurnState = Literal["idle", "speaking", "paused", "judging", "committed"]
TurnEvent = Literal[
    "begin", "speech", "quiet", "due", "timeout", "finished", "going_on", "failed", "words"
]
CommitReason = Literal["judged", "max_silence", "fallback", "resumed", "words"]

TRANSITIONS: dict[tuple[TurnState, TurnEvent], TurnState] = {
    **{(state, "begin"): "speaking" for state in ("idle", "speaking", "paused", "judging")},
    ("committed", "begin"): "speaking",
    ("speaking", "speech"): "speaking",
    ("paused", "speech"): "speaking",
    ("judging", "speech"): "speaking",
    ("speaking", "quiet"): "speaking",
    ("paused", "quiet"): "paused",
    ("judging", "quiet"): "judging",
    ("speaking", "due"): "judging",
    ("paused", "due"): "judging",
    ("speaking", "timeout"): "committed",
    ("paused", "timeout"): "committed",
    ("judging", "timeout"): "committed",
    ("judging", "finished"): "committed",
    ("judging", "going_on"): "paused",
    ("judging", "failed"): "paused",
    ("speaking", "words"): "judging",
    ("paused", "words"): "judging",
    ("judging", "words"): "judging",
}


SHORT_ANSWER_WORDS = 2
"""Words of at most this many are a short answer (``TurnTaking.words_end_short_silence_ms``)."""


class TurnPolicyError(Exception):
    """An event the policy's state cannot take (a bug in the caller, never caller input)."""

    def __init__(self, state: TurnState, event: TurnEvent) -> None:
        super().__init__(f"turn policy: no move from {state!r} on {event!r}")
        self.state = state
        self.event = event


@dataclass(frozen=True, slots=True)
class AskJudge:
    """Judge the utterance so far: its audio up to :attr:`audio_end_ms`, and its transcript when
    there is one; then hand the verdict to :meth:`TurnPolicy.verdict` with this ticket."""

    ticket: int
    at_ms: float
    silence_ms: float
    audio_end_ms: float
    """Where the audio the judge hears ends: now, or ``judge_window_ms`` after the last voiced
    frame when that is earlier."""


@dataclass(frozen=True, slots=True)
class Commit:
    """The caller's turn is over."""

    reason: CommitReason
    at_ms: float
    speech_end_ms: float
    """When the last voiced frame ended: the acoustic endpoint."""
    probability: float | None = None
    """The verdict that committed (``reason == "judged"``)."""

    @property
    def endpointing_ms(self) -> float:
        """Acoustic endpoint to commit: the ``turn_endpointing_ms`` metric."""
        return self.at_ms - self.speech_end_ms


Decision = AskJudge | Commit


class TurnPolicy:
    """One caller's turn-taking, one utterance at a time; ``judge=False``: a fixed silence
    (``fallback_silence_ms``), the rule of a VAD alone."""

    def __init__(
        self, settings: TurnTaking | None = None, *, judge: bool = True,
        pace: CallerPace | None = None,
    ) -> None:
        self.settings = settings or TurnTaking()
        self.judge_enabled = judge
        self.pace = pace
        """The caller's learnt pauses (ADR-0038): each pause they went on after is told to it,
        and its floor, once learnt, is the least silence any verdict ends the turn at."""
        self.state: TurnState = "idle"
        self._tickets = 0
        self._begun_ms = 0.0
        self._frame_end_ms = 0.0
        """Where the last frame ended: a voiced frame's pause ended where it began."""
        self.resumed = False
        """The caller paused (the judge was asked about the pause) and went on."""
        self._reset_utterance(0.0)

    def _reset_utterance(self, now_ms: float) -> None:
        self.last_voiced_ms = now_ms
        self.pending: int | None = None
        self._next_due_ms = now_ms + self.settings.judge_pause_ms
        # The end of the audio of this pause's last judgement: the same audio and the same
        # words would get the same answer, so the judge is asked again only about new ones.
        self._heard_until_ms = now_ms
        self._fallback = not self.judge_enabled
        self._words_fresh = False
        self._words_waiting = False
        self._words_coming = False
        self._have_words = False
        """A transcript of this pause is ready: every judgement from now on weighs it."""
        self._asked_words = False
        """The pending judgement weighs that transcript."""
        self._judged_words = False
        """A verdict of this pause weighed words that do not go on."""
        self._words_end_due: tuple[float, float, CommitReason] | None = None
        """The words model ended this pause before its silence (``words_end_silence_ms``, or
        ``words_end_short_silence_ms`` for a short answer), or a judged end came before the
        caller's learnt floor (:attr:`pace`): the probability the turn ends with, the silence
        it ends at, and why."""

    # ------------------------------------------------------------------------------ inputs

    def begin(self, now_ms: float) -> None:
        """Speech started: a new utterance (the previous one, if any, is forgotten)."""
        self._move("begin")
        self._begun_ms = now_ms
        self._frame_end_ms = now_ms
        self.resumed = False
        self._reset_utterance(now_ms)

    def frame(self, now_ms: float, voiced: bool) -> Decision | None:
        """A frame of the utterance ended at ``now_ms``; ``voiced``: speech was heard in it.
        Frames outside an utterance (idle, committed) are ignored."""
        if self.state in ("idle", "committed"):
            return None
        heard_to, self._frame_end_ms = self._frame_end_ms, now_ms
        if voiced:
            if self._heard_until_ms > self.last_voiced_ms:
                self.resumed = True  # the judge was asked about the pause that just ended
            if self.pace is not None:  # a pause that was no end: until this frame began
                self.pace.went_on(heard_to - self.last_voiced_ms)
            self._move("speech")
            self._reset_utterance(now_ms)
            return None
        silence = now_ms - self.last_voiced_ms
        if silence >= self.settings.max_silence_ms:
            return self._commit(now_ms, "max_silence")
        if self.resumed and self._judged_words and silence >= max(
            self.settings.resumed_silence_ms, self._floor_ms()
        ):
            return self._commit(now_ms, "resumed")
        if self._words_end_due is not None and silence >= self._words_end_due[1]:
            probability, _, reason = self._words_end_due
            return self._commit(now_ms, reason, probability)
        if self._fallback and silence >= self.settings.fallback_silence_ms:
            return self._commit(now_ms, "fallback")
        if self._judgement_due(now_ms):
            return self._ask("due", now_ms)
        self._move("quiet")
        return None

    def transcribing(self) -> None:
        """A transcript of the utterance up to this pause is being made: until it is ready
        (:meth:`words`, :meth:`no_words`) or ``words_wait_ms`` of silence, the audio alone is
        not judged."""
        if self.state not in ("idle", "committed"):
            self._words_coming = True

    def no_words(self) -> None:
        """The transcript of this pause came back empty, or failed: the audio alone is judged
        again from ``judge_pause_ms``."""
        self._words_coming = False

    def words(self, now_ms: float) -> Decision | None:
        """A transcript of the utterance up to this pause is ready: judge with it at once, the
        first judgement of the pause if it came before ``judge_pause_ms`` (the caller passes
        it with every judgement until speech resumes)."""
        if self.state in ("idle", "committed"):
            return None
        if now_ms <= self.last_voiced_ms or self._fallback:
            return None  # the transcript is of a pause that has ended, or silence decides
        self._words_coming = False
        self._words_fresh = True
        self._have_words = True
        if now_ms - self.last_voiced_ms < self.settings.words_pause_ms:
            return None  # judged once the pause is that long (:meth:`frame`)
        if self.state in ("speaking", "paused"):
            return self._ask("words", now_ms)
        self._move("words")
        self._words_waiting = True
        return None

    def verdict(self, ticket: int, verdict: TurnVerdict, now_ms: float) -> Decision | None:
        """The judge answered ``ticket``; stale answers are ignored."""
        if ticket != self.pending or self.state != "judging":
            return None
        self.pending = None
        if self._asked_words and not verdict.words_going_on:
            # The words model's doubt holds a judged end, not the resumed silence: after a
            # pause and more words, a second pause ends the turn at ``resumed_silence_ms``.
            self._judged_words = True
        threshold = self._threshold(verdict)
        if verdict.probability >= threshold:
            words = self._words_end(verdict)
            wait_ms = self._words_end_silence(verdict) if words else self._floor_ms()
            if now_ms - self.last_voiced_ms >= wait_ms:
                return self._commit(now_ms, "judged", verdict.probability)
            reason: CommitReason = "words" if words else "judged"
            self._words_end_due = (verdict.probability, wait_ms, reason)  # ends then (frame)
        self._move("going_on")
        self._next_due_ms = now_ms + self.settings.rejudge_ms
        if self._words_waiting:
            self._words_waiting = False
            return self._ask("words", now_ms)
        return None

    def failed(self, ticket: int, now_ms: float) -> Decision | None:
        """The judge could not answer ``ticket`` (busy, late, broken): until speech resumes the
        turn ends after ``fallback_silence_ms``, or at once if that much silence has passed."""
        if ticket != self.pending or self.state != "judging":
            return None
        self.pending = None
        self._move("failed")
        self._fallback = True
        if now_ms - self.last_voiced_ms >= self.settings.fallback_silence_ms:
            return self._commit(now_ms, "fallback")
        return None

    # ----------------------------------------------------------------------------- effects

    def _threshold(self, verdict: TurnVerdict) -> float:
        s = self.settings
        if verdict.words_going_on or self._words_hold(verdict):
            return float("inf")  # words that cannot end a turn never end one
        if self._words_end(verdict):
            return s.words_end_audio_probability  # words likely to end here: they decide
        if verdict.words_finished:
            finished = (
                s.finished_probability
                if verdict.words_question
                else (s.resumed_probability if self.resumed else s.finished_statement_probability)
            )
            if verdict.words_sure:
                finished = min(finished, s.sure_probability)
            return min(finished, s.complete_probability)
        if verdict.heard_words:
            return self.settings.complete_probability
        if self.last_voiced_ms - self._begun_ms < self.settings.audio_min_speech_ms:
            return float("inf")  # too short for the audio alone: wait for the words
        return self.settings.audio_probability

    def _words_end(self, verdict: TurnVerdict) -> bool:
        """The words model, not the earlier rules, ends the turn on this verdict."""
        probability = verdict.words_probability
        return (
            probability is not None
            and probability >= self.settings.words_end_probability
            and not verdict.words_going_on
            and not self._words_hold(verdict)
        )

    def _words_end_silence(self, verdict: TurnVerdict) -> float:
        """The least silence a turn the words model ends takes."""
        floor = self.pace.floor_ms if self.pace is not None else None
        if 0 < verdict.words_count <= SHORT_ANSWER_WORDS:
            return max(self.settings.words_end_short_silence_ms, floor or 0.0)
        return self.settings.words_end_silence_ms if floor is None else floor

    def _floor_ms(self) -> float:
        """The caller's learnt silence floor (ADR-0038); 0 until it is learnt."""
        floor = self.pace.floor_ms if self.pace is not None else None
        return floor or 0.0

    def _words_hold(self, verdict: TurnVerdict) -> bool:
        """The words model finds an end after these words all but impossible."""
        probability = verdict.words_probability
        if probability is None or verdict.words_identifier:
            return False
        return probability < self.settings.words_hold_probability

    def _judgement_due(self, now_ms: float) -> bool:
        if self.state == "judging" or self._fallback:
            return False
        if self._words_fresh and now_ms - self.last_voiced_ms >= self.settings.words_pause_ms:
            return True  # words that came before the pause was long enough to judge them
        if now_ms < self._next_due_ms:
            return False
        if self._words_coming and now_ms - self.last_voiced_ms < self.settings.words_wait_ms:
            return False  # the words are on their way: judged with them
        return self._audio_end(now_ms) > self._heard_until_ms

    def _audio_end(self, now_ms: float) -> float:
        window = self.settings.judge_window_ms
        return min(now_ms, self.last_voiced_ms + window) if window > 0 else now_ms

    def _ask(self, event: TurnEvent, now_ms: float) -> AskJudge:
        self._move(event)
        self._tickets += 1
        self.pending = self._tickets
        self._heard_until_ms = self._audio_end(now_ms)
        self._words_fresh = False
        self._asked_words = self._have_words
        return AskJudge(
            ticket=self._tickets,
            at_ms=now_ms,
            silence_ms=now_ms - self.last_voiced_ms,
            audio_end_ms=self._heard_until_ms,
        )

    def _commit(
        self, now_ms: float, reason: CommitReason, probability: float | None = None
    ) -> Commit:
        # A judged end the caller's floor put off is taken at a frame, out of "paused".
        self._move("finished" if reason == "judged" and self.state == "judging" else "timeout")
        self.pending = None
        return Commit(
            reason=reason,
            at_ms=now_ms,
            speech_end_ms=self.last_voiced_ms,
            probability=probability,
        )

    def _move(self, event: TurnEvent) -> None:
        following = TRANSITIONS.get((self.state, event))
        if following is None:
            raise TurnPolicyError(self.state, event)
        self.state = following
