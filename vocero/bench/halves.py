"""The corpus part of ``vocero bench ttfs``: each half of ``fixtures/turns`` spoken into sessions.

Two halves (docs/adr/0022-words-carry-the-end-of-a-turn.md): ``tuning`` (``fixtures/turns``, the
clips the turn policy's thresholds were chosen on) and ``heldout``
(``fixtures/turns/heldout``, sentences written by someone who never saw the policy; never tuned
on). Each is reported on its own:

* a *complete* clip is a caller who says one finished thing: it is spoken in real time (the
  lead-in, the words, then the line's own noise, then silence) and timed from the end of the
  last word to the first playable audio frame of the answer (``ttfs_ms``, endpointing
  included); a commit before the last word ended is a cut-off too;
* a *paused* clip is a caller who stops mid-sentence for 400-1,200 ms and goes on: spoken the
  same way until the session commits the turn; a commit before the end of the last word cuts
  the caller off (``cut_off_rate``), one after it answers that much later
  (``answered_after_last_word_ms``: the commit, the moment the answer starts being made).

A half that ships the agent's line before each sentence (``prompts.yaml``: the development set,
ADR-0025) is spoken in context: the session's history holds that line as what the caller last
heard the agent say, as it would in a conversation (:func:`agent_lines`). The others are spoken
as a caller's first words.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio
import yaml

from vocero.bench.stats import percentiles
from vocero.bench.turn_corpus import CORPUS, Clip
from vocero.contracts import events as ev
from vocero.orchestrator.output import OutputChannel
from vocero.orchestrator.session import Session

FRAME = 640  # 20 ms of 16 kHz PCM16
PROMPTS = "prompts.yaml"
"""The file of a half's agent lines, one per sentence, in the sentences' order."""
HALVES: dict[str, Path] = {
    "tuning": CORPUS,
    "heldout": CORPUS / "heldout",
    "dev": CORPUS / "dev",
}
"""Each half of the turn corpus and where its ``corpus.yaml`` lives (``dev``: the tuning half's
development set, 327 more clips tuned on; ADR-0025)."""
ANSWER_TIMEOUT_S = 12.0
"""A complete clip whose answer has not started this long after its last word counts as never."""


class CommitClock(Protocol):
    committed_at: float | None
    """``perf_counter`` when the session first committed a turn."""
    trace: list[tuple[float, str]]
    """The session's counts and observations, with when (``perf_counter``)."""


@dataclass
class PausedTurn:
    clip_id: str
    text: str
    commit_after_last_word_ms: float | None
    """The session's commit relative to the end of the caller's last word (negative: it cut
    the caller off); ``None``: it never committed."""
    last_word_at: float = 0.0
    """``perf_counter`` at the end of the caller's last word."""
    verdicts: list[str] = field(default_factory=list)
    """The judge's verdicts on the way: when, relative to the end of the last word, the words
    it weighed, its probability."""
    ttfs_ms: float | None = None
    """Complete clips: the end of the last word to the first audio of the answer."""
    agent_said: str = ""
    """The agent's line the session held as heard before the clip (:func:`agent_lines`)."""
    timeline: list[str] = field(default_factory=list)
    """What the session counted and observed, relative to the end of the last word (a draft
    used or dropped, the speculation, the model's first output, the first unit's synthesis)."""

    @property
    def premature(self) -> bool:
        return self.commit_after_last_word_ms is not None and self.commit_after_last_word_ms < 0


async def _play(session: Session, out: OutputChannel) -> float | None:
    """Take what the session sent; audio is played at once, as a client would. Returns when
    the first audio frame arrived (``perf_counter``), if one did."""
    first: float | None = None
    while (frame := await out.receive(until=lambda: True)) is not None:
        if isinstance(frame.payload, ev.AudioOut):
            first = first or time.perf_counter()
            session.on_playout(
                frame.payload.generation_id,
                int(out.playout_of(frame.payload.generation_id).sent_ms),
            )
    return first


def agent_lines(directory: Path) -> dict[str, str]:
    """What the agent said before each sentence of the half in ``directory``, by the sentence as
    its clips' labels spell it (a pause, " | " in the prompts, is " ... " there); empty for a
    half without ``prompts.yaml``."""
    path = directory / PROMPTS
    if not path.exists():
        return {}
    prompts = yaml.safe_load(path.read_text())["prompts"]
    return {p["caller"].replace(" | ", " ... "): p["said"] for p in prompts}


async def speak_clip(
    session: Session, out: OutputChannel, clip: Clip, clock: CommitClock, *, answer: bool
) -> PausedTurn:
    """Speak one corpus clip in real time until the session commits a turn (``answer``: until
    its answer's first audio), or the clip and a silence after it end."""
    audio = clip.pcm16()
    silence = b"\x00\x00" * (FRAME // 2)
    started = time.perf_counter()
    last_word_at = started + clip.speech_end_ms / 1000.0
    frames = len(audio) // FRAME + (int(ANSWER_TIMEOUT_S * 50) if answer else 0)
    first_audio: float | None = None
    for index in range(frames):
        await anyio.sleep(max(0.0, started + index * 0.02 - time.perf_counter()))
        offset = index * FRAME
        session.on_audio(audio[offset : offset + FRAME] if offset < len(audio) else silence)
        first_audio = first_audio or await _play(session, out)
        if clock.committed_at is not None and (not answer or first_audio is not None):
            break
    commit = clock.committed_at
    outcome = PausedTurn(
        clip.id,
        clip.label.text,
        None if commit is None else (commit - last_word_at) * 1000.0,
        last_word_at,
    )
    if first_audio is not None:
        outcome.ttfs_ms = (first_audio - last_word_at) * 1000.0
    outcome.timeline = relative(clock.trace, last_word_at)
    return outcome


def relative(trace: list[tuple[float, str]], origin: float) -> list[str]:
    """``trace`` as ms relative to ``origin`` (``perf_counter``)."""
    return [f"{(at - origin) * 1000:+.0f} ms {said}" for at, said in trace]


def paused_report(paused: list[PausedTurn]) -> dict[str, Any]:
    committed = [p for p in paused if p.commit_after_last_word_ms is not None]
    late = [p.commit_after_last_word_ms for p in committed if not p.premature]
    answered = percentiles([v for v in late if v is not None])
    return {
        "clips": len(paused),
        "measure": "session commit vs the end of the caller's last word, caller audio in real "
        "time; premature: committed before it (the caller was cut off mid-sentence)",
        "premature_cut_off_rate": round(sum(p.premature for p in paused) / max(1, len(paused)), 4),
        "premature_cut_offs": sorted(p.clip_id for p in paused if p.premature),
        "never_committed": sorted(p.clip_id for p in paused if p.commit_after_last_word_ms is None),
        "added_latency_ms": answered,
        "answered_after_last_word_ms": answered,
        "clips_detail": [_detail(p) for p in paused],
    }


def complete_report(complete: list[PausedTurn]) -> dict[str, Any]:
    return {
        "clips": len(complete),
        "measure": "end of the caller's last word -> first playable audio frame of the answer, "
        "caller audio in real time, endpointing included",
        "ttfs_ms": percentiles([c.ttfs_ms for c in complete if c.ttfs_ms is not None]),
        "commit_after_last_word_ms": percentiles(
            [c.commit_after_last_word_ms for c in complete if c.commit_after_last_word_ms]
        ),
        "never_answered": sorted(c.clip_id for c in complete if c.ttfs_ms is None),
        "cut_offs": sorted(c.clip_id for c in complete if c.premature),
        "clips_detail": [_detail(c) for c in complete],
    }


def _detail(p: PausedTurn) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": p.clip_id,
        "text": p.text,
        "commit_after_last_word_ms": None
        if p.commit_after_last_word_ms is None
        else round(p.commit_after_last_word_ms, 1),
        "verdicts": p.verdicts,
    }
    if p.ttfs_ms is not None:
        row["ttfs_ms"] = round(p.ttfs_ms, 1)
        if p.commit_after_last_word_ms is not None:
            row["commit_to_first_audio_ms"] = round(p.ttfs_ms - p.commit_after_last_word_ms, 1)
    if p.timeline:
        row["timeline"] = p.timeline
    if p.agent_said:
        row["agent_said"] = p.agent_said
    return row


def half_summary(complete: list[PausedTurn], paused: list[PausedTurn]) -> dict[str, Any]:
    """The figures of one half that the issue's goals are stated in."""
    ttfs = percentiles([c.ttfs_ms for c in complete if c.ttfs_ms is not None])
    answered = paused_report(paused)
    return {
        "complete_ttfs_p50_ms": ttfs.get("p50"),
        "complete_ttfs_p95_ms": ttfs.get("p95"),
        "paused_cut_off_rate": answered["premature_cut_off_rate"],
        "paused_answered_p50_ms": answered["answered_after_last_word_ms"].get("p50"),
        "paused_answered_p95_ms": answered["answered_after_last_word_ms"].get("p95"),
        "goals": {
            "complete_ttfs_p95_ms": 700,
            "paused_cut_off_rate": 0.05,
            "paused_answered_p50_ms": 700,
        },
    }
