"""Per-connection envelope limits: frame size, audio length, frame rate, garbage tolerance."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    max_frame_bytes: int = 64 * 1024
    max_audio_ms: int = 200
    max_frames_per_s: int = 100
    strikes_to_close: int = 10
    """Consecutive rejected frames (garbage, oversize, flood) after which the connection closes."""
    connect_timeout_s: float = 10.0


class RateWindow:
    """Sliding one-second window of frame arrival times."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._arrivals: deque[float] = deque()

    def admit(self, now: float) -> bool:
        while self._arrivals and now - self._arrivals[0] >= 1.0:
            self._arrivals.popleft()
        if len(self._arrivals) >= self._limit:
            return False
        self._arrivals.append(now)
        return True


class Strikes:
    """Counts consecutive rejected frames; any accepted frame clears the count."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self.count = 0

    def hit(self) -> bool:
        """Record a rejected frame; True when the client should be disconnected."""
        self.count += 1
        return self.count >= self._limit

    def clear(self) -> None:
        self.count = 0
