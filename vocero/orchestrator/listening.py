"""Caller audio: VAD segmentation into utterances, pre-roll, and barge-in candidacy."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from vocero.contracts.ports import VadEvent, VadStream

BACKCHANNELS: frozenset[str] = frozenset(
    {
        "mm",
        "mhm",
        "mm-hmm",
        "mmhmm",
        "mm hmm",
        "uh-huh",
        "uh huh",
        "uhhuh",
        "okay",
        "ok",
        "yeah",
        "yep",
        "right",
        "sure",
        "i see",
        "got it",
        "alright",
        "all right",
        "hmm",
    }
)
SAMPLE_RATE = 16000
_BYTES_PER_MS = SAMPLE_RATE * 2 // 1000


def is_backchannel(text: str) -> bool:
    """A short acknowledgement that does not ask to take the turn."""
    cleaned = " ".join(text.lower().replace(",", " ").replace(".", " ").replace("!", " ").split())
    return cleaned in BACKCHANNELS


@dataclass(slots=True)
class Utterance:
    audio: bytearray = field(default_factory=bytearray)
    candidate: bool = False
    """Began while the agent was answering: a possible barge-in, not yet a turn."""
    judged: bool = False
    backchannel_suspected: bool = False
    partial_running: bool = False
    next_partial_ms: float = 600.0
    interrupted: bool = False
    """This utterance stopped the agent (so a backchannel final means a false barge-in)."""

    voiced_ms: float = 0.0
    """Speech heard in this utterance so far (trailing silence excluded)."""

    @property
    def duration_ms(self) -> float:
        return len(self.audio) / _BYTES_PER_MS


@dataclass(slots=True)
class Segment:
    """What one pushed audio frame meant."""

    started: Utterance | None = None
    ended: Utterance | None = None


class Listener:
    """Feeds caller audio through VAD (server_vad) or buffers it (push_to_talk)."""

    def __init__(self, vad: VadStream | None, *, preroll_ms: int = 300) -> None:
        self._vad = vad
        self._preroll: deque[bytes] = deque()
        self._preroll_bytes = 0
        self._preroll_cap = preroll_ms * _BYTES_PER_MS
        self.current: Utterance | None = None

    def push(self, pcm16: bytes) -> Segment:
        if self._vad is None:
            return self._push_to_talk(pcm16)
        segment = Segment()
        events: list[VadEvent] = self._vad.push(pcm16)
        if self.current is not None:
            self.current.audio.extend(pcm16)
        else:
            self._remember(pcm16)
        for event in events:
            if event.kind == "speech_started" and self.current is None:
                self.current = Utterance(audio=bytearray(b"".join(self._preroll)))
                self._preroll.clear()
                self._preroll_bytes = 0
                segment.started = self.current
            elif event.kind == "speech_stopped" and self.current is not None:
                segment.ended, self.current = self.current, None
        if self.current is not None:
            self.current.voiced_ms = self._vad.voiced_ms
        return segment

    def _push_to_talk(self, pcm16: bytes) -> Segment:
        segment = Segment()
        if self.current is None:
            self.current = Utterance()
            segment.started = self.current
        self.current.audio.extend(pcm16)
        self.current.voiced_ms = self.current.duration_ms
        return segment

    def commit(self) -> Utterance | None:
        """End the utterance in progress (push-to-talk release, or an explicit commit)."""
        utterance, self.current = self.current, None
        if self._vad is not None:
            self._vad.reset()
        return utterance

    def _remember(self, pcm16: bytes) -> None:
        self._preroll.append(pcm16)
        self._preroll_bytes += len(pcm16)
        while self._preroll_bytes > self._preroll_cap and len(self._preroll) > 1:
            self._preroll_bytes -= len(self._preroll.popleft())
