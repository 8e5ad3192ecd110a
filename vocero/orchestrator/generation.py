"""One agent response (a generation): what was said, what was sent, what the caller heard."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

import anyio

from vocero.speech import PlannedUnit

ROUNDING_MS = 1.0
"""Playout reports are whole milliseconds; a unit within a millisecond of its end was heard."""


@dataclass(slots=True)
class UnitRecord:
    text: str
    start_ms: float = 0.0
    audio_ms: float = 0.0
    """Audio of it sent so far: its whole length only once :attr:`complete`."""
    voiced: bool = True
    started: bool = False
    """Admitted: its first audio (or, without a voice, its text) went to the client."""
    separator: str = ""
    """What goes before this unit's text on the wire: a space after the first unit, so the text
    deltas of a generation concatenate to exactly what is spoken (docs/protocol.md "Barge-in")."""
    complete: bool = False
    """Its synthesis ended: :attr:`audio_ms` is all of its audio."""
    alignment: list[tuple[float, float]] = field(default_factory=list)
    """Points the engine gave, in order: by ``audio_ms`` of this unit, ``fraction`` of its text
    was spoken (:class:`~vocero.contracts.ports.SpokenThrough`)."""
    speech_chars: int = 0
    """Characters of the text the TTS was given (its speech form)."""
    slowest_ms_per_char: float | None = None
    """The voice's slowest measured rate when the unit began; ``None``: not measured yet."""

    @property
    def wire_text(self) -> str:
        return self.separator + self.text

    def spoken_fraction(self, offset_ms: float) -> float:
        """How much of the text (0..1, by characters) was spoken by ``offset_ms`` of its audio.

        Between two known points (the engine's, the start, and the end once synthesis is
        complete) the share is interpolated. Past the last known point of a unit still being
        synthesized its length is unknown, so the audio sent so far is no measure of it: the
        voice's slowest measured rate bounds what more was said, and without a measurement
        nothing more counts.
        """
        if offset_ms <= 0:
            return 0.0
        points = [(0.0, 0.0), *self.alignment]
        if self.complete:
            points.append((self.audio_ms, 1.0))
        for (at, done), (until, through) in pairwise(points):
            if offset_ms < until:
                share = (offset_ms - at) / (until - at) if until > at else 1.0
                return done + (through - done) * share
        at, done = points[-1]
        if self.complete or done >= 1.0:
            return 1.0
        if not self.slowest_ms_per_char or not self.speech_chars:
            return done
        return min(1.0, done + (offset_ms - at) / (self.slowest_ms_per_char * self.speech_chars))


@dataclass(slots=True)
class Generation:
    generation_id: str
    turn_id: str
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    units: list[UnitRecord] = field(default_factory=list)
    audio_ms: float = 0.0
    done: bool = False
    had_audio: bool = False
    side_effect: bool = False
    status: str = ""
    heard: str = ""
    """What the caller heard of it, once it completed."""
    planned: list[PlannedUnit] = field(default_factory=list)
    """Every speakable unit planned for it, in order (bounded by the word budget): what a
    false interruption resumes from (ADR-0038)."""
    stalled: bool = False
    """The caller's playout stopped moving for the grace period while it played (a stalled
    network, a frozen tab): the rest was shed, so it ends ``interrupted``, as heard, never
    ``completed`` (docs/protocol.md "A client that stops reading")."""

    @property
    def text(self) -> str:
        return " ".join(u.text for u in self.units if u.text)

    def begin_unit(self, text: str) -> UnitRecord:
        separator = " " if any(u.text for u in self.units) else ""
        unit = UnitRecord(text=text, start_ms=self.audio_ms, separator=separator)
        self.units.append(unit)
        return unit

    def discard_unit(self, unit: UnitRecord) -> None:
        """A unit that never played (dropped at admission) is no part of what was said."""
        if unit in self.units and not unit.started:
            self.units.remove(unit)

    def add_audio(self, unit: UnitRecord, ms: float) -> None:
        unit.audio_ms += ms
        self.audio_ms += ms
        self.had_audio = True

    def heard_text(self, played_ms: float) -> str:
        """The prefix of the text the caller heard, cut at ``played_ms`` of audio.

        Fully played units count whole; the unit being played counts only the words whose share
        of its audio (:meth:`UnitRecord.spoken_fraction`) ended before ``played_ms``. A unit
        still being synthesized is never taken for whole because all its audio *sent* was
        played. A text-only unit (the TTS failed) counts once every audio before it was played.
        Never more than was played.
        """
        heard: list[str] = []
        for unit in self.units:
            if not unit.voiced:
                if played_ms + ROUNDING_MS < unit.start_ms:
                    break
                heard.append(unit.text)
                continue
            end_ms = unit.start_ms + unit.audio_ms
            if unit.complete and unit.audio_ms > 0 and played_ms + ROUNDING_MS >= end_ms:
                heard.append(unit.text)
                continue
            partial = _words_within(unit, played_ms - unit.start_ms)
            if partial:
                heard.append(partial)
            if partial != unit.text:
                break
        return " ".join(heard)


def _words_within(unit: UnitRecord, offset_ms: float) -> str:
    if offset_ms <= 0 or unit.audio_ms <= 0:
        return ""
    budget_chars = len(unit.text) * unit.spoken_fraction(offset_ms)
    words: list[str] = []
    used = 0
    for word in unit.text.split(" "):
        used += len(word) + (1 if words else 0)
        if used > budget_chars:
            break
        words.append(word)
    return " ".join(words)
