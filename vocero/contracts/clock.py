"""The real clock and a virtual one for tests."""

from __future__ import annotations

import time


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> float:
        return time.time()


class VirtualClock:
    """A clock that only moves when told to."""

    def __init__(self, start: float = 1_780_000_000.0) -> None:
        self._mono = 0.0
        self._wall = start

    def monotonic(self) -> float:
        return self._mono

    def now(self) -> float:
        return self._wall

    def advance(self, seconds: float) -> None:
        self._mono += seconds
        self._wall += seconds
