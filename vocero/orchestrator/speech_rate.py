"""How slowly a voice speaks, measured on the units it finished: the bound that keeps heard text
honest while a unit is still being synthesized.

A streaming TTS sends a unit's audio as it makes it, so until its synthesis ends nobody knows
how long the unit is. Taking the audio sent so far for its length overstates what a caller who
barges in heard (docs/protocol.md "Barge-in"). Past the engine's own alignment points, the share of
a unit that was spoken is bounded with the *slowest* rate (milliseconds a character) the voice was
measured at over its recent complete units: a slower guess can only under-count what was heard,
which is the safe side. Shared by every session of a process that uses the same runner and
voice.
"""

from __future__ import annotations

from collections import deque
from weakref import WeakKeyDictionary

MIN_CHARS = 12
"""Units shorter than this say little about a rate (a word's onset and tail dominate)."""
WINDOW = 32
"""Complete units remembered per voice: recent enough to follow a change of speed."""


class SpeechRate:
    """The recent complete units of one voice, as milliseconds a character."""

    def __init__(self) -> None:
        self._recent: deque[float] = deque(maxlen=WINDOW)

    def learn(self, chars: int, audio_ms: float) -> None:
        if chars >= MIN_CHARS and audio_ms > 0:
            self._recent.append(audio_ms / chars)

    def slowest(self) -> float | None:
        """The slowest recent rate; ``None`` before any unit was measured."""
        return max(self._recent) if self._recent else None


_RATES: WeakKeyDictionary[object, dict[str, SpeechRate]] = WeakKeyDictionary()


def rate_of(tts: object, voice: str) -> SpeechRate:
    """The measured rate of ``voice`` on the runner ``tts`` (created empty on first use)."""
    voices = _RATES.setdefault(tts, {})
    return voices.setdefault(voice, SpeechRate())
