"""What the client has been sent and has played of each generation's audio.

A client that reports playout (``playout.v1``) says how much it has played; for one that cannot,
the audio's own real-time duration since its first frame stands in for it. The output channel
(:mod:`.output`) paces audio against this (at most ``max_lead_ms`` ahead of what was played),
and the session completes a stopped generation as heard up to :meth:`Playouts.acknowledged_ms`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

PLAYOUT_TOLERANCE_MS = 1.0
"""Clients report whole milliseconds; audio lengths are fractional."""


@dataclass(slots=True)
class Playout:
    """What the client has been sent and has played of one generation."""

    sent_ms: float = 0.0
    queued_ms: float = 0.0
    """Audio of the generation in the data lane, not sent yet."""
    played_ms: float = 0.0
    reported: bool = False
    first_sent_at: float | None = None
    last_progress: float = 0.0
    progress: anyio.Event = field(default_factory=anyio.Event)

    def moved(self, now: float) -> None:
        self.last_progress = now
        self.progress.set()


class Playouts:
    """The playout of every generation the channel still keeps, by generation id: what was sent,
    what the client reported (or, without reports, the real-time estimate), how far ahead the
    next frame would be."""

    def __init__(self, monotonic: Callable[[], float], *, max_lead_ms: int, acks: bool) -> None:
        self._monotonic = monotonic
        self.max_lead_ms = max_lead_ms
        self.acks = acks
        """The client reports playout (said at the handshake, or seen in a report)."""
        self._tracks: dict[str, Playout] = {}

    def of(self, generation_id: str) -> Playout:
        track = self._tracks.get(generation_id)
        if track is None:  # no throwaway Playout (and its Event) per lookup: this is per frame
            track = self._tracks[generation_id] = Playout()
        return track

    def get(self, generation_id: str) -> Playout | None:
        return self._tracks.get(generation_id)

    def forget(self, generation_id: str) -> None:
        self._tracks.pop(generation_id, None)

    def report(self, generation_id: str, played_ms: float) -> bool:
        """The client played ``played_ms`` of the generation (clamped to what was sent).
        False: a generation the channel does not keep."""
        track = self._tracks.get(generation_id)
        if track is None:
            return False
        self.acks = True
        track.reported = True
        track.played_ms = max(track.played_ms, min(float(played_ms), track.sent_ms))
        track.moved(self._monotonic())
        return True

    def acknowledged_ms(self, generation_id: str) -> float:
        """Audio of the generation the caller has certainly heard, clamped to what was sent."""
        track = self._tracks.get(generation_id)
        if track is None:
            return 0.0
        if track.reported or self.acks:
            return min(track.played_ms, track.sent_ms)
        return max(0.0, min(self.estimate(track) - self.max_lead_ms, track.sent_ms))

    def played(self, track: Playout) -> float:
        """How much of the generation the client has played: its reports, or (for a client
        that cannot report) the audio's real-time duration since its first frame."""
        if self.acks:
            return track.played_ms
        return max(track.played_ms, self.estimate(track))

    def estimate(self, track: Playout) -> float:
        if track.first_sent_at is None:
            return 0.0
        return min(track.sent_ms, (self._monotonic() - track.first_sent_at) * 1000.0)

    def pacing_wait(self, generation_id: str, audio_ms: float) -> float:
        """Seconds until ``audio_ms`` more of the generation may leave (0: now)."""
        track = self.of(generation_id)
        if track.sent_ms == 0:
            return 0.0
        excess = track.sent_ms + audio_ms - self.played(track) - self.max_lead_ms
        return 0.0 if excess <= 0 else excess / 1000.0

    def sent(self, generation_id: str, audio_ms: float) -> None:
        """``audio_ms`` of the generation left the data lane for the client."""
        track = self.of(generation_id)
        track.queued_ms = max(0.0, track.queued_ms - audio_ms)
        if track.first_sent_at is None:
            track.first_sent_at = self._monotonic()
        track.sent_ms += audio_ms
        track.moved(self._monotonic())

    def caught_up(self, track: Playout) -> bool:
        """Everything sent of the generation was played (nothing of it is left in the lane)."""
        if self.acks:
            return track.played_ms >= track.sent_ms - PLAYOUT_TOLERANCE_MS
        return self.estimate(track) >= track.sent_ms
