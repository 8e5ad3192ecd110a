"""Caller audio: VAD segmentation into utterances, pre-roll, pauses, and barge-in candidacy."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

import anyio

from vocero.contracts.lexicon.backchannels import BACKCHANNELS
from vocero.contracts.ports import Transcription, VadEvent, VadStream
from vocero.orchestrator.ids import new_id

SAMPLE_RATE = 16000
_BYTES_PER_MS = SAMPLE_RATE * 2 // 1000
MAX_UTTERANCE_MS = 30_000
"""An utterance is never longer than 30 s of audio (what a recogniser takes in one pass): one
that reaches it ends there and is taken as a turn; the caller's next words start the next one."""


_WORD = re.compile(r"[a-z0-9']+")


def echoes(text: str, said: str) -> bool:
    """``text`` (a transcription of caller audio) is mostly words of ``said`` (what the agent
    said): the agent's own voice coming back, as a recogniser hears it. Empty text is none."""
    words = _WORD.findall(text.lower())
    own = set(_WORD.findall(said.lower()))
    return bool(words) and 2 * sum(word in own for word in words) >= len(words)


def is_backchannel(text: str) -> bool:
    """A short acknowledgement that does not ask to take the turn."""
    cleaned = " ".join(text.lower().replace(",", " ").replace(".", " ").replace("!", " ").split())
    return cleaned in BACKCHANNELS


@dataclass(slots=True)
class Speculation:
    """A final transcription started at a pause, before the VAD has declared the turn over.

    It stands for the utterance only while no speech has been heard since it started
    (``voiced_ms`` unchanged): then the audio after it is the trailing silence the VAD waited
    through, and transcribing it again would only add that wait to the caller's latency.
    """

    voiced_ms: float
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Transcription | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """Cancelled when the speculation goes stale: if it is still queued for the recogniser, it
    leaves the queue at once instead of delaying the next one."""


@dataclass(slots=True)
class Utterance:
    audio: bytearray = field(default_factory=bytearray)
    utterance_id: str = field(default_factory=lambda: new_id("utt"))
    candidate: bool = False
    """Began while the agent was answering: a possible barge-in, not yet a turn."""
    judged: bool = False
    backchannel_suspected: bool = False
    partial_running: bool = False
    next_partial_ms: float = 0.0
    interrupted: bool = False
    """This utterance stopped the agent (so a backchannel final means a false barge-in)."""
    echo_check: bool = False
    """It went on under the echo gate and never counted as a barge-in, but it may be a caller
    cut off going on: its words decide (:func:`echoes`), not its level."""
    onset_no_echo: bool = False
    """The speech that began it cannot be the agent's own voice coming back: it was louder than
    that could be (:class:`~.echo.EchoGate`; always, while the agent had been quiet), or it began
    before the agent's audio could be back in the caller's."""

    voiced_ms: float = 0.0
    """Speech heard in this utterance so far (trailing silence excluded)."""
    loud_ms: float = 0.0
    """Of that speech, what was louder than the agent's own voice coming back (all of it while
    the agent is quiet): what counts toward a barge-in."""
    last_voiced_at_ms: float = 0.0
    """Where in :attr:`audio` the speech heard so far last grew: the start of a pause."""
    clock_ms: float = 0.0
    """Where :attr:`audio` (pre-roll included) begins on the session's clock of caller audio (ms
    of it heard since the session began): a pause between two utterances is measured on it."""
    speech_from_ms: float = 0.0
    """Where in :attr:`audio` its speech began: where the VAD says its first voiced frame began
    (the frame in which a pause inside an utterance ends, :class:`~.turn_policy.TurnPolicy`)."""

    @property
    def spoken_to_ms(self) -> float:
        """Where its speech last grew, on the session's clock (its last word so far)."""
        return self.clock_ms + self.last_voiced_at_ms
    speculation: Speculation | None = None

    @property
    def pause_ms(self) -> float:
        """How long the caller has been silent at the end of the audio so far."""
        return self.duration_ms - self.last_voiced_at_ms

    def speculation_holds(self) -> bool:
        """A speculative transcription exists and no speech came after it started."""
        spec = self.speculation
        return spec is not None and spec.voiced_ms == self.voiced_ms

    @property
    def duration_ms(self) -> float:
        return len(self.audio) / _BYTES_PER_MS


@dataclass(slots=True)
class Segment:
    """What one pushed audio frame meant."""

    started: Utterance | None = None
    ended: Utterance | None = None
    grown_ms: float = 0.0
    """Speech heard in this frame: how much the utterance's voiced time grew."""

    @property
    def voiced(self) -> bool:
        return self.grown_ms > 0


class Listener:
    """Feeds caller audio through VAD (server_vad) or buffers it (push_to_talk)."""

    def __init__(
        self, vad: VadStream | None, *, preroll_ms: int = 300, vad_ends: bool = True
    ) -> None:
        """``vad_ends=False``: the VAD's own end of speech (its fixed hangover) is ignored; the
        utterance goes on until :meth:`commit` (the turn policy decides) or its maximum."""
        self._vad = vad
        self._vad_ends = vad_ends
        self._vad_voiced = 0
        self._vad_heard_ms = 0.0
        """Audio pushed to the VAD since it last started afresh: the sim VAD's events' clock."""
        self._vad_open_ms = 0.0
        """Audio pushed to the VAD since it was opened: Silero's events' clock (its ``reset``
        keeps counting from ``open``)."""
        self._preroll: deque[bytes] = deque()
        self._preroll_bytes = 0
        self._preroll_cap = preroll_ms * _BYTES_PER_MS
        self.current: Utterance | None = None

    def push(self, pcm16: bytes) -> Segment:
        if self._vad is None:
            return self._push_to_talk(pcm16)
        segment = Segment()
        events: list[VadEvent] = self._vad.push(pcm16)
        self._vad_heard_ms += len(pcm16) / _BYTES_PER_MS
        self._vad_open_ms += len(pcm16) / _BYTES_PER_MS
        if self.current is not None:
            self.current.audio.extend(pcm16)
        else:
            self._remember(pcm16)
        for event in events:
            if event.kind == "speech_started" and self.current is None:
                self.current = Utterance(audio=bytearray(b"".join(self._preroll)))
                behind_ms = self._vad_heard_ms - event.at_ms
                if behind_ms < 0:  # a clock that kept counting through a reset (Silero's)
                    behind_ms = self._vad_open_ms - event.at_ms
                self.current.speech_from_ms = max(0.0, self.current.duration_ms - behind_ms)
                self._preroll.clear()
                self._preroll_bytes = 0
                self._vad_voiced = 0
                segment.started = self.current
            elif event.kind == "speech_stopped" and self.current is not None and self._vad_ends:
                segment.ended, self.current = self.current, None
        if self.current is not None:
            segment.grown_ms = self._grow(self.current, self._vad.voiced_ms)
            if self.current.duration_ms >= MAX_UTTERANCE_MS:
                segment.ended, self.current = self.current, None
                self._vad.reset()
                self._vad_heard_ms = 0.0
        return segment

    def _grow(self, utterance: Utterance, vad_voiced_ms: int) -> float:
        """Add the speech the VAD heard since the last frame. Its own count restarts when it
        hears speech start again (after its hangover, within an utterance the policy keeps
        open): the utterance's count only grows, so a pause's transcription can never look
        current again after speech came."""
        grown = vad_voiced_ms - self._vad_voiced
        if grown < 0:
            grown = vad_voiced_ms
        self._vad_voiced = vad_voiced_ms
        if grown <= 0:
            return 0.0
        self._voiced(utterance, utterance.voiced_ms + grown)
        return float(grown)

    @staticmethod
    def _voiced(utterance: Utterance, voiced_ms: float) -> None:
        if voiced_ms != utterance.voiced_ms:
            utterance.voiced_ms = voiced_ms
            utterance.last_voiced_at_ms = utterance.duration_ms

    def _push_to_talk(self, pcm16: bytes) -> Segment:
        segment = Segment()
        if self.current is None:
            self.current = Utterance()
            segment.started = self.current
        self.current.audio.extend(pcm16)
        self._voiced(self.current, self.current.duration_ms)
        if self.current.duration_ms >= MAX_UTTERANCE_MS:
            segment.ended, self.current = self.current, None
        return segment

    def commit(self) -> Utterance | None:
        """End the utterance in progress (push-to-talk release, or an explicit commit)."""
        utterance, self.current = self.current, None
        if self._vad is not None:
            self._vad.reset()
            self._vad_voiced = 0
            self._vad_heard_ms = 0.0
        return utterance

    def _remember(self, pcm16: bytes) -> None:
        self._preroll.append(pcm16)
        self._preroll_bytes += len(pcm16)
        while self._preroll_bytes > self._preroll_cap and len(self._preroll) > 1:
            self._preroll_bytes -= len(self._preroll.popleft())
