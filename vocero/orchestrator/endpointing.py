"""The turn policy in a live session: caller frames in, end-of-turn judgements out, a commit.

:class:`Endpointer` drives one :class:`~vocero.orchestrator.turn_policy.TurnPolicy` over the
utterances of one listener, on the utterance's own audio clock (ms of audio heard, pre-roll
included), so the same frames always give the same decisions. A judgement the policy asks for
runs as a task of the session (the judge runs its model off the event loop); its verdict comes
back on the clock as it stands then. The transcript the judge weighs is the early transcription
of the current pause, once it is ready (:meth:`Endpointer.words`): the two overlap.

A verdict about an utterance that has ended or moved on (speech resumed, a newer judgement was
asked) is ignored; a judge that fails (busy, broken) makes the policy fall back to a fixed
silence for that pause, and so does one that is late: it has not answered once in this pause by
the time that silence has passed, nor in the time a judgement asked at ``judge_pause_ms`` has
until then (the audio arrived faster than it answered: a loaded machine, or a client that sends
its audio in bursts). A judgement asked at ``judge_pause_ms`` or sooner is late at the VAD's own
hangover; one the policy put off while the words were transcribed gets the same time from its
asking, not less. Nothing here awaits in a handler.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import structlog

from vocero.contracts.domain import TurnTaking
from vocero.contracts.ports import TurnJudge, TurnVerdict
from vocero.orchestrator.caller_pace import CallerPace
from vocero.orchestrator.listening import SAMPLE_RATE, Utterance
from vocero.orchestrator.turn_policy import AskJudge, Commit, Decision, TurnPolicy

log = structlog.get_logger("vocero.endpointing")

_BYTES_PER_MS = SAMPLE_RATE * 2 // 1000

CommitSink = Callable[[Utterance, Commit], None]
"""Ends the utterance as a turn; called at most once per utterance."""
WordsOf = Callable[[Utterance], tuple[str, float | None]]
"""The transcript of the utterance up to its current pause and the recogniser's confidence in
it, or ``("", None)`` when there is none."""


class Endpointer:
    def __init__(
        self,
        judge: TurnJudge,
        settings: TurnTaking,
        tg: anyio.abc.TaskGroup,
        *,
        on_commit: CommitSink,
        words_of: WordsOf,
        agent_said: Callable[[], str] = str,
        locale: str = "en-US",
        pace: CallerPace | None = None,
    ) -> None:
        """``pace``: the caller's learnt pauses, kept by the session across its utterances
        (ADR-0038)."""
        self._judge = judge
        self._tg = tg
        self._on_commit = on_commit
        self._words_of = words_of
        self._agent_said = agent_said
        """What the caller last heard the agent say: their words are judged as the answer to
        it (read again at each judgement: an answer the caller cut short is remembered, as
        heard, once the barge-in took the turn)."""
        self._locale = locale
        self.policy = TurnPolicy(settings, pace=pace)
        self._fallback_ms = settings.fallback_silence_ms
        self._late_ms = max(0, settings.fallback_silence_ms - settings.judge_pause_ms)
        """How long a judgement may take before it is late (once the fixed silence has passed)."""
        self._asked_ms = 0.0
        self.current: Utterance | None = None
        self.judgements = 0
        self._answered = False
        """A verdict came back in the current pause."""

    def begin(self, utterance: Utterance) -> None:
        """Speech started: ``utterance`` is the one the policy now watches."""
        self.current = utterance
        self._answered = False
        self.policy.begin(utterance.duration_ms)
        self._tg.start_soon(self._prepare, self._agent_said())  # while the caller speaks

    async def _prepare(self, said: str) -> None:
        try:
            await self._judge.prepare(agent_said=said, locale=self._locale)
        except Exception as exc:  # best effort: the judgements evaluate the line themselves
            log.info("endpointing.prepare_failed", error=type(exc).__name__)

    def forget(self) -> None:
        """The utterance ended some other way (its maximum length, an explicit commit)."""
        self.current = None

    def frame(self, utterance: Utterance, voiced: bool) -> None:
        """A frame of ``utterance`` was heard (``voiced``: speech grew in it)."""
        if utterance is not self.current:
            return
        policy, now = self.policy, utterance.duration_ms
        if voiced:
            self._answered = False
        elif (
            policy.pending is not None
            and not self._answered
            and now - policy.last_voiced_ms >= self._fallback_ms
            and now - self._asked_ms >= self._late_ms
        ):
            self._act(utterance, policy.failed(policy.pending, now))  # late: the fixed silence
            return
        self._act(utterance, policy.frame(now, voiced))

    def transcribing(self, utterance: Utterance) -> None:
        """The early transcription of ``utterance``'s current pause has started."""
        if utterance is self.current:
            self.policy.transcribing()

    def words(self, utterance: Utterance) -> None:
        """The early transcription of ``utterance``'s current pause is ready (or failed)."""
        if utterance is not self.current:
            return
        if self._words_of(utterance)[0]:
            self._act(utterance, self.policy.words(utterance.duration_ms))
        else:
            self.policy.no_words()

    def _act(self, utterance: Utterance, decision: Decision | None) -> None:
        if isinstance(decision, Commit):
            self.current = None
            self._on_commit(utterance, decision)
        elif isinstance(decision, AskJudge):
            self.judgements += 1
            self._asked_ms = decision.at_ms
            audio = bytes(utterance.audio[: round(decision.audio_end_ms) * _BYTES_PER_MS])
            self._tg.start_soon(
                self._ask, utterance, decision.ticket, audio, self._words_of(utterance)
            )

    async def _ask(
        self, utterance: Utterance, ticket: int, audio: bytes, words: tuple[str, float | None]
    ) -> None:
        verdict: TurnVerdict | None = None
        try:
            verdict = await self._judge.judge(
                audio,
                sample_rate=SAMPLE_RATE,
                transcript=words[0],
                confidence=words[1],
                locale=self._locale,
                utterance_id=utterance.utterance_id,
                agent_said=self._agent_said(),
            )
        except Exception as exc:  # busy (CapacityError) or broken: a fixed silence this pause
            log.info("endpointing.judge_failed", error=type(exc).__name__)
        if utterance is not self.current:
            return  # the utterance ended meanwhile: the verdict is of no use
        now = utterance.duration_ms
        if verdict is None:
            self._act(utterance, self.policy.failed(ticket, now))
            return
        if ticket == self.policy.pending:
            self._answered = True
        self._act(utterance, self.policy.verdict(ticket, verdict, now))
