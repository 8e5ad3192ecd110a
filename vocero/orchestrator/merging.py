"""Yield and merge (ADR-0037, issue 45 item 2): a caller cut off at a pause keeps their turn.

A turn was committed at a pause and the agent began answering it; the caller resumes speaking
within ``merge_window_ms`` of the commit and takes the turn back through the ordinary barge-in
path (stop and flush at once, only what was heard kept as said). The continuation is then not
a new request: it is joined to the turn it continues, and the whole request is answered once.

* :meth:`TurnMerge.committed` remembers each committed caller turn (its words, its history
  message, when, and whether a question was already open then: the answer to one is never
  joined, its "yes" may already bind);
* :meth:`TurnMerge.interrupted` is told of every barge-in by speech: a stop of that turn's
  answer by speech that began inside the window, before the caller heard more than
  :data:`MAX_HEARD_MS` of it, marks the interrupting utterance as a continuation;
* :meth:`TurnMerge.began` is told of every utterance's first speech, and remembers what the
  caller had heard of the live answer then (:class:`Onset`). A caller who goes on inside the
  window while the turn's answer is live (or not yet begun) takes the turn back at once, on
  what they had heard when they began: the barge-in that stops the answer is judged hundreds of
  ms later (on the cpu runners, after a partial transcription), by when a short answer may
  have ended (nothing then stops it, and the barge-in path never sees the caller) or played
  past :data:`MAX_HEARD_MS`. A caller who speaks after the answer ended heard it out: that is a
  turn of its own;
* :meth:`TurnMerge.carry` is asked with each audio turn's words before they are committed: a
  caller whose speech began again after the turn's last word, while it was being transcribed,
  has gone on before anything was committed or answered. The turn is not committed: its words
  are said with the rest (joined to the next audio turn), and no answer to the half is begun
  (once a short continuation is over, no speech would stop it). If that next audio turn is no
  turn (no words, a backchannel), the first part is committed on its own then;
* :meth:`TurnMerge.join` is asked with each audio turn's words before they are committed: for
  the marked utterance, the first part's message leaves the history (what the agent was heard
  saying stays), the question its answer opened (a read-back of the cut-off half) is dropped
  before it can be confirmed, and the turn's words become the first part and the continuation;
* a join tells the caller's pace (:meth:`~.caller_pace.CallerPace.cut_off`, ADR-0038) the pause
  that was taken for an end: from the first part's last word to the frame the continuation's
  speech began in, on the session's clock of caller audio. From the next turn on, the caller's
  silence floor covers a pause that long.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from vocero.contracts.ports import Message
from vocero.orchestrator.caller_pace import CallerPace
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.machine import Event

log = structlog.get_logger("vocero.merging")


@dataclass(frozen=True, slots=True)
class CommittedTurn:
    turn_id: str
    text: str
    message: Message
    at: float
    """``monotonic`` seconds when it was committed."""
    question: tuple[str, int] | None
    """The open question (proposal, revision) when it was committed, if any."""
    spoken_to_ms: float | None = None
    """The caller's last word in it, on the session's clock of caller audio (ms)."""


@dataclass(frozen=True, slots=True)
class Yielded:
    utterance_id: str
    turn: CommittedTurn
    heard: str
    """What the caller heard of the answer that yielded (empty: none of it played)."""
    pause_ms: float | None = None
    """The caller's pause between the turn's last word and the continuation's speech."""
    carried: bool = False
    """The first part was never committed (:meth:`TurnMerge.carry`): nothing of it to take
    back, only its words to say with the rest."""


@dataclass(frozen=True, slots=True)
class Onset:
    """Where an utterance's speech began, and what the caller had heard by then."""

    utterance_id: str
    speech_from_ms: float | None
    """On the session's clock of caller audio."""
    generation_id: str | None
    """The answer live when it began, if any."""
    heard_ms: float
    """What the caller had heard of that answer then."""


MAX_HEARD_MS = 1_000.0
"""A caller who heard more of the answer than this before the stop reacted to it: a real
interruption ("stop please" over the agent's second sentence), not the rest of their own
sentence, whatever the window says."""


class TurnMerge:
    def __init__(
        self, core: SessionCore, *, window_ms: float, max_heard_ms: float = MAX_HEARD_MS,
        pace: CallerPace | None = None,
    ) -> None:
        """``pace``: the caller's pauses (ADR-0038), told each pause a join took back."""
        self.core = core
        self.pace = pace
        self.window_ms = window_ms
        self.max_heard_ms = max_heard_ms
        self.last: CommittedTurn | None = None
        self.pending: Yielded | None = None
        self.onset: Onset | None = None
        """The latest utterance's first speech."""
        self.merged = 0

    def _question(self) -> tuple[str, int] | None:
        coordinator = self.core.coordinator
        question = coordinator.active_question() if coordinator is not None else None
        return None if question is None else (question.proposal_id, question.revision)

    def committed(
        self, turn_id: str, text: str, message: Message, at: float, *, spoken: bool,
        spoken_to_ms: float | None = None,
    ) -> None:
        """A caller turn was committed; only a spoken one may be taken back (a typed turn, a
        key, a click was not cut off at a pause). ``spoken_to_ms``: its last word, on the
        session's clock of caller audio."""
        self.pending = None
        self.last = (
            CommittedTurn(turn_id, text, message, at, self._question(), spoken_to_ms)
            if spoken else None
        )

    def began(
        self, utterance_id: str, speech_at: float, *, speech_from_ms: float | None = None
    ) -> None:
        """An utterance's speech began at ``speech_at`` (``monotonic``; ``speech_from_ms`` on
        the session's clock of caller audio). A caller who goes on inside the window while the
        last turn's answer is live (or not yet begun) takes the turn back now, on what they had
        heard by now: the barge-in that stops the answer comes later (it is judged), or never,
        when the answer ends first. Once its answer is over, what they say answers it."""
        core = self.core
        live = core.generations.live()
        heard_ms = 0.0 if live is None else core.out.acknowledged_ms(live.generation_id)
        self.onset = Onset(utterance_id, speech_from_ms,
                           None if live is None else live.generation_id, heard_ms)
        last, answer = self.last, core.generations.current
        if last is None:
            return
        if answer is None or answer.turn_id != last.turn_id:
            heard_ms = 0.0  # the turn's answer has not begun
        elif answer is not live:
            return  # it was over: they heard it out
        self._yielded(utterance_id, last, speech_at, heard_ms, "", speech_from_ms, at="onset")

    def interrupted(
        self, utterance_id: str, speech_at: float, *, speech_from_ms: float | None = None
    ) -> None:
        """Speech that began at ``speech_at`` (``monotonic``; ``speech_from_ms`` on the
        session's clock of caller audio) stopped the live answer."""
        core = self.core
        last, stopped = self.last, core.generations.current
        if last is None or stopped is None or stopped.turn_id != last.turn_id:
            return
        heard_ms = core.out.acknowledged_ms(stopped.generation_id)
        onset = self.onset
        if onset is not None and onset.utterance_id == utterance_id:
            # What they had heard when they began: the answer played on while it was judged
            # (none of it, if the answer began after their speech did).
            heard_ms = onset.heard_ms if onset.generation_id == stopped.generation_id else 0.0
        self._yielded(utterance_id, last, speech_at, heard_ms, stopped.heard, speech_from_ms,
                      at="stop")

    def _yielded(
        self, utterance_id: str, last: CommittedTurn, speech_at: float, heard_ms: float,
        heard: str, speech_from_ms: float | None, *, at: str,
    ) -> None:
        """The caller took ``last`` back, unless the window, what they heard of its answer or
        an open question says their speech is a turn of its own. ``at``: told at the speech's
        ``onset`` or at the ``stop`` of the answer (counted so)."""
        core = self.core
        if self.window_ms <= 0 or last.question is not None:
            return
        after_ms = (speech_at - last.at) * 1000.0
        if after_ms > self.window_ms or heard_ms > self.max_heard_ms:
            return
        pause_ms = (
            None if speech_from_ms is None or last.spoken_to_ms is None
            else speech_from_ms - last.spoken_to_ms
        )
        pending = self.pending
        if pending is not None and (pending.utterance_id == utterance_id or pending.carried):
            return  # already taken back at its onset; or a carried part waits for its rest
        self.pending = Yielded(utterance_id, last, heard, pause_ms)
        core.metrics.count("turn_yields", at=at)
        core.metrics.observe_ms("turn_yield_heard_ms", heard_ms)
        log.info("turn.yielded", session_id=core.ctx.session_id, turn_id=last.turn_id,
                 after_ms=round(after_ms, 1), heard=bool(heard),
                 pause_ms=None if pause_ms is None else round(pause_ms))

    def carry(self, utterance_id: str, text: str, spoken_to_ms: float | None) -> bool:
        """The words of the audio turn ``utterance_id`` are transcribed, and the caller has
        already gone on (their speech began after its last word, ``spoken_to_ms``): True when
        it is not to be committed now, but said with the rest (the next audio turn's words are
        joined to it); an answer to half a request, which no speech would stop once the
        continuation is over, is never begun. Not while a question is open (the half may
        answer it)."""
        onset = self.onset
        if (
            self.window_ms <= 0 or spoken_to_ms is None or onset is None
            or onset.utterance_id == utterance_id or onset.speech_from_ms is None
            or onset.speech_from_ms <= spoken_to_ms or self._question() is not None
        ):
            return False
        core = self.core
        half = CommittedTurn("", text, Message(role="user", content=text), core.monotonic(),
                             None, spoken_to_ms)
        self.pending = Yielded(onset.utterance_id, half, "",
                               onset.speech_from_ms - spoken_to_ms, carried=True)
        core.metrics.count("turn_yields", at="carried")
        log.info("turn.carried", session_id=core.ctx.session_id,
                 pause_ms=round(onset.speech_from_ms - spoken_to_ms))
        return True

    def carried(self) -> str:
        """The words of a first part that was carried and not yet said with anything (its
        continuation was no turn): taken, to be committed on their own."""
        pending = self.pending
        if pending is None or not pending.carried:
            return ""
        self.pending = None
        return pending.turn.text

    def continuation(self, utterance_id: str) -> CommittedTurn | None:
        """The turn the utterance ``utterance_id`` took back, if it is one's continuation."""
        pending = self.pending
        if not utterance_id or pending is None or pending.utterance_id != utterance_id:
            return None
        return pending.turn

    async def join(self, utterance_id: str, text: str) -> str:
        """The words to commit for the audio turn of ``utterance_id``: joined to the turn it
        continues when it took the turn back inside the window."""
        pending = self.pending
        if pending is None or (pending.utterance_id != utterance_id and not pending.carried):
            return text  # (carried words go with the next audio turn, whichever it is)
        self.pending = None
        core = self.core
        first = pending.turn
        if not pending.carried:
            core.history.remove(first.message)
            await self._withdraw(first)
        self.merged += 1
        if self.pace is not None and pending.pause_ms is not None:
            self.pace.cut_off(pending.pause_ms)  # a pause inside their turn, taken for its end
        core.metrics.count("turns_merged")
        log.info("turn.merged", session_id=core.ctx.session_id, turn_id=first.turn_id)
        return f"{first.text} {text}"

    async def _withdraw(self, first: CommittedTurn) -> None:
        """A question opened by the answer to the cut-off half is dropped, unanswered."""
        coordinator = self.core.coordinator
        question = coordinator.active_question() if coordinator is not None else None
        if coordinator is None or question is None:
            return
        if (question.proposal_id, question.revision) == first.question:
            return  # it was open before the half was said: not the half's proposal
        await coordinator.drop_question(question.proposal_id, question.revision)
        self.core.fire(Event.QUESTION_CLOSED)
        self.core.metrics.count("proposals_withdrawn", reason="turn_merged")
