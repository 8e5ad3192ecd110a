"""What a paused caller lives through, in ``vocero bench ttfs`` (issue 45 item 5; ADR-0038).

A paused clip is spoken *whole* (both parts, then the open line) and the session's answers are
played as a caller's client plays them: in real time, in order, each from its first frame, the
playout reported every 20 ms (what a caller has heard of an answer is what has played, never
what was sent ahead of it). That goes on until the *final answer* completes: the last answer
whose audio began after the caller's last word and that was not stopped (or until
:data:`~vocero.bench.halves.ANSWER_TIMEOUT_S` after the last word). Then, per clip:

* **whole request answered**: the turn of the final answer holds the caller's words: at least
  half the words of each part of the sentence (the parts around its pause) are in that turn's
  final transcript;
* **agent audio heard before a yield**: for a caller cut off (committed before their last
  word), the audio of every answer that was stopped before the final one that had played when
  it was stopped: what the caller heard of an answer to half their request before the agent
  gave way; 0 when it gave way before its first audio. (Until issue 45's second round the bench
  reported every frame sent as played at once: a whole answer counted as heard the moment it
  was synthesized, and the session, told so, finished it before a caller going on could stop
  it, or judged them to have heard it out; see ADR-0037.)
* **agent audio heard before the final answer**: the same, with the answers that were *not*
  stopped: an answer to half the request that played out while the caller went on (their
  continuation never counted as a barge-in: quieter than the agent's own voice could come back)
  was heard whole, and "heard before a yield" does not see it (issue 45, third round);
* **unrecovered cut-off**: a cut-off caller whose whole request was not answered.

Each half is reported on its own (:mod:`.halves`). Nothing here chooses a threshold.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import anyio

from vocero.bench.halves import ANSWER_TIMEOUT_S, FRAME, CommitClock, PausedTurn, relative
from vocero.bench.stats import percentiles
from vocero.bench.turn_corpus import Clip
from vocero.contracts import events as ev
from vocero.orchestrator.output import OutputChannel
from vocero.orchestrator.session import Session

PAUSE_MARK = " ... "
"""Where a paused clip's label text pauses."""
_WORD = re.compile(r"[a-z0-9']+")
_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
          "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
          "eighteen", "nineteen")
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_NUMBERS = (
    {word: str(value) for value, word in enumerate(_UNITS)}
    | {word: str(10 * (index + 2)) for index, word in enumerate(_TENS)}
    | {"oh": "0"}
)
"""A spelled number and a recogniser's numeral read alike: both become their digits."""


def _words(text: str) -> list[str]:
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        word = _NUMBERS.get(word, word)
        words.extend(word if word.isdigit() else [word])
    return words


@dataclass
class Answer:
    turn_id: str
    first_audio_at: float | None = None
    audio_ms: float = 0.0
    """Audio received (sent by the session)."""
    played_ms: float = 0.0
    """Of it, what the client has played."""
    stopped: bool = False
    status: str = ""
    created_at: float = 0.0
    stopped_at: float | None = None


@dataclass
class Heard:
    """What the session sent while one paused clip was spoken."""

    answers: dict[str, Answer] = field(default_factory=dict)
    """By generation id, in the order they began."""
    finals: dict[str, str] = field(default_factory=dict)
    """Each committed turn's final transcript, by turn id (the last one sent for it)."""

    def take(self, frame: Any, now: float) -> None:
        payload = frame.payload
        if isinstance(payload, ev.ResponseCreated):
            self.answers[payload.generation_id] = Answer(payload.turn_id, created_at=now)
        elif isinstance(payload, ev.Transcript) and frame.envelope is ev.TranscriptFinalV1:
            self.finals[payload.turn_id] = payload.text
        elif isinstance(payload, ev.AudioOut) and payload.generation_id in self.answers:
            answer = self.answers[payload.generation_id]
            answer.first_audio_at = answer.first_audio_at or now
            answer.audio_ms += len(payload.audio) / 2 / payload.sample_rate * 1000.0
        elif isinstance(payload, ev.StopAndFlush) and payload.generation_id in self.answers:
            answer = self.answers[payload.generation_id]
            answer.stopped = True  # flushed: nothing more plays
            answer.stopped_at = answer.stopped_at or now
        elif isinstance(payload, ev.ResponseCompleted) and payload.generation_id in self.answers:
            self.answers[payload.generation_id].status = payload.status

    def play(self, elapsed_ms: float) -> list[tuple[str, int]]:
        """``elapsed_ms`` of real time went by: each answer still playing plays on (in real
        time, as far as its audio has come). Returns the playout to report, by generation."""
        played: list[tuple[str, int]] = []
        for generation_id, answer in self.answers.items():
            if answer.first_audio_at is None or answer.stopped or answer.status:
                continue
            answer.played_ms = min(answer.audio_ms, answer.played_ms + elapsed_ms)
            played.append((generation_id, int(answer.played_ms)))
        return played

    def final(self, after: float) -> Answer | None:
        """The last answer whose audio began after ``after`` (the caller's last word) and that
        was not stopped."""
        late = [
            a for a in self.answers.values()
            if a.first_audio_at and a.first_audio_at >= after and a.status != "interrupted"
        ]
        return late[-1] if late else None

    def settled(self, after: float) -> bool:
        """The final answer has completed: nothing the caller says after the clip is left."""
        final = self.final(after)
        return final is not None and final.status == "completed"


@dataclass
class Lived:
    """One paused caller's outcome."""

    clip_id: str
    cut_off: bool
    whole: bool
    heard_before_yield_ms: float
    final_words: str = ""
    heard_before_final_ms: float = 0.0
    """Cut off: the audio of every answer before the final one that had played, stopped or not
    (an answer to half the request that played out while the caller went on, never stopped,
    counts here and not in :attr:`heard_before_yield_ms`)."""
    timeline: dict[str, Any] = field(default_factory=dict)
    """Where the clip pauses, and what the session and the answers did when (ms from the start
    of the clip): the continuation's onset against the agent's first audio and the stop."""


def covers(transcript: str, sentence: str) -> bool:
    """Whether ``transcript`` holds at least half the words of each part of ``sentence``
    (numbers compared digit by digit: "four seven" is "47")."""
    heard = set(_words(transcript))
    for part in sentence.split(PAUSE_MARK):
        words = _words(part)
        if words and sum(w in heard for w in words) * 2 < len(words):
            return False
    return True


def lived(clip_id: str, sentence: str, outcome: PausedTurn, heard: Heard) -> Lived:
    final = heard.final(outcome.last_word_at)
    words = heard.finals.get(final.turn_id, "") if final is not None else ""
    before = [a for a in heard.answers.values() if a is not final and a.status == "interrupted"]
    earlier = [a for a in heard.answers.values() if a is not final and (
        final is None or final.first_audio_at is None or a.first_audio_at is None
        or a.first_audio_at < final.first_audio_at)]
    return Lived(
        clip_id=clip_id,
        cut_off=outcome.premature,
        whole=final is not None and covers(words, sentence),
        heard_before_yield_ms=sum(a.played_ms for a in before) if outcome.premature else 0.0,
        heard_before_final_ms=sum(a.played_ms for a in earlier) if outcome.premature else 0.0,
        final_words=words,
    )


async def speak_paused(
    session: Session, out: OutputChannel, clip: Clip, clock: CommitClock
) -> tuple[PausedTurn, Lived]:
    """Speak a paused clip whole in real time, playing every answer in real time, until an
    answer begun after the caller's last word completes unstopped (or the time allowed runs
    out)."""
    audio = clip.pcm16()
    silence = b"\x00\x00" * (FRAME // 2)
    started = time.perf_counter()
    last_word_at = started + clip.speech_end_ms / 1000.0
    heard = Heard()
    frames = clip.speech_end_ms // 20 + int(ANSWER_TIMEOUT_S * 50)
    ticked = started
    for index in range(frames):
        await anyio.sleep(max(0.0, started + index * 0.02 - time.perf_counter()))
        offset = index * FRAME
        session.on_audio(audio[offset : offset + FRAME] if offset < len(audio) else silence)
        while (frame := await out.receive(until=lambda: True)) is not None:
            heard.take(frame, time.perf_counter())
        now = time.perf_counter()
        for generation_id, played_ms in heard.play((now - ticked) * 1000.0):
            session.on_playout(generation_id, played_ms)
        ticked = now
        if heard.settled(last_word_at):
            break
    commit = clock.committed_at
    outcome = PausedTurn(
        clip.id,
        clip.label.text,
        None if commit is None else (commit - last_word_at) * 1000.0,
        last_word_at,
    )
    caller = lived(clip.id, clip.label.text, outcome, heard)
    caller.timeline = timeline(clip, started, clock.trace, heard)
    return outcome, caller


def timeline(
    clip: Clip, started: float, trace: list[tuple[float, str]], heard: Heard
) -> dict[str, Any]:
    """One paused caller, ms from the start of the clip: where they paused and went on, and
    what the session and its answers did (created, first audio, flushed with what had played)."""
    events = list(trace)
    for generation_id, answer in heard.answers.items():
        events.append((answer.created_at, f"answer {generation_id} created ({answer.turn_id})"))
        if answer.first_audio_at is not None:
            events.append((answer.first_audio_at, f"answer {generation_id} first audio"))
        if answer.stopped_at is not None:
            events.append((answer.stopped_at, f"answer {generation_id} flushed, "
                                              f"{answer.played_ms:.0f} ms played"))
    events.sort()
    return {
        "pause_ms": list(clip.pause) if clip.pause else None,
        "last_word_ms": clip.speech_end_ms,
        "events": relative(events, started),
    }


def lived_report(callers: list[Lived]) -> dict[str, Any]:
    """The paused callers' figures of one half."""
    cut = [c for c in callers if c.cut_off]
    unrecovered = sorted(c.clip_id for c in cut if not c.whole)
    return {
        "clips": len(callers),
        "measure": "each paused clip spoken whole, every answer played in real time; whole: the "
        "turn of the last answer begun after the caller's last word holds at least half the "
        "words of each part of the sentence; heard before a yield: audio of the answers stopped "
        "before it that had played when they were stopped, over the callers cut off (0: stopped "
        "before its first audio)",
        "whole_request_answered_rate": round(sum(c.whole for c in callers) / max(1, len(callers)),
                                             4),
        "not_whole": sorted(c.clip_id for c in callers if not c.whole),
        "cut_off": len(cut),
        "agent_audio_heard_before_yield_ms": percentiles([c.heard_before_yield_ms for c in cut]),
        "agent_audio_heard_before_the_final_answer_ms": percentiles(
            [c.heard_before_final_ms for c in cut]),
        "unrecovered_cut_offs": len(unrecovered),
        "unrecovered_cut_off_clips": unrecovered,
        "final_words": {c.clip_id: c.final_words for c in callers if not c.whole},
        "clips_detail": [
            {"id": c.clip_id, "cut_off": c.cut_off, "whole": c.whole,
             "heard_before_yield_ms": round(c.heard_before_yield_ms, 1),
             "heard_before_the_final_answer_ms": round(c.heard_before_final_ms, 1), **c.timeline}
            for c in callers
        ],
    }


def lived_summary(callers: list[Lived]) -> dict[str, Any]:
    """The same figures, for a half's summary."""
    report = lived_report(callers)
    heard = report["agent_audio_heard_before_yield_ms"]
    return {
        "paused_whole_request_answered_rate": report["whole_request_answered_rate"],
        "paused_heard_before_yield_p50_ms": heard.get("p50"),
        "paused_heard_before_yield_p95_ms": heard.get("p95"),
        "paused_heard_before_the_final_answer_p95_ms":
            report["agent_audio_heard_before_the_final_answer_ms"].get("p95"),
        "paused_unrecovered_cut_offs": report["unrecovered_cut_offs"],
    }
