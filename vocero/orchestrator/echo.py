"""The agent's own voice coming back: an adaptive barge-in threshold while it speaks.

A caller on a speakerphone without a headset (or a browser without echo cancellation) sends the
agent's own audio back, attenuated and a little late. The VAD hears speech in it; left alone
that speech would interrupt the agent (docs/architecture.md "Barge-in": adaptive thresholds against
self-interruption). :class:`EchoGate` remembers how loud the agent's output was over the last
``echo_window_ms`` (its audio is sent up to ``max_lead_ms`` before it plays, and the echo comes
back later still), and a caller frame heard meanwhile counts toward a barge-in only when it is
louder than that level by ``barge_in_echo_db`` (negative: the echo a speakerphone returns is
well below the output, a caller talking over it is not). When the agent has been quiet for the
window, every voiced frame counts, as before. Sans-IO: times are given, in seconds.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

MAX_CHUNKS = 256
"""Output chunks remembered (a chunk is tens of ms: far more than any window needs)."""


def rms(pcm16: bytes) -> float:
    """Root mean square of PCM16 audio, full scale 1.0."""
    if len(pcm16) < 2:
        return 0.0
    samples = np.frombuffer(pcm16, "<i2", len(pcm16) // 2).astype(np.float64)
    return math.sqrt(float(np.dot(samples, samples)) / samples.size) / 32768.0


class EchoGate:
    def __init__(self, *, margin_db: float = -14.0, window_ms: int = 1000) -> None:
        """``window_ms`` 0: no gate (every voiced frame counts)."""
        self._ratio = 10.0 ** (margin_db / 20.0) if window_ms > 0 else 0.0
        self._window_s = window_ms / 1000.0
        self._played: deque[tuple[float, float]] = deque(maxlen=MAX_CHUNKS)
        """The level of each chunk of the window already asked for."""
        self._unmeasured: deque[tuple[float, bytes]] = deque(maxlen=MAX_CHUNKS)
        """Chunks handed over since the level was last asked for, not measured yet: a level is
        needed only while the caller speaks over the agent, so a chunk's is computed then, not
        for every chunk sent (issue 46 item 4: it was a twentieth of a streaming session's
        CPU time). Chunks that left the window are dropped as chunks are added."""

    def played(self, pcm16: bytes, now_s: float) -> None:
        """The agent's audio ``pcm16`` was handed to the client at ``now_s``."""
        if self._ratio > 0.0:
            unmeasured = self._unmeasured
            since = now_s - self._window_s
            while unmeasured and unmeasured[0][0] < since:
                unmeasured.popleft()
            unmeasured.append((now_s, pcm16))

    def output_level(self, now_s: float) -> float:
        """The loudest agent output of the window before ``now_s`` (0.0: it was quiet)."""
        since = now_s - self._window_s
        played, unmeasured = self._played, self._unmeasured
        while unmeasured:
            at, pcm16 = unmeasured.popleft()
            if at >= since:
                played.append((at, rms(pcm16)))
        while played and played[0][0] < since:
            played.popleft()
        return max((level for _, level in played), default=0.0)

    def sounding(self, now_s: float) -> bool:
        """Agent audio was handed over within the window before ``now_s``: its voice could be
        coming back (no level is measured to say so)."""
        if self._ratio <= 0.0:
            return False
        since = now_s - self._window_s
        return any(chunks and chunks[-1][0] >= since
                   for chunks in (self._played, self._unmeasured))

    def threshold(self, now_s: float) -> float:
        """The level a caller frame must exceed to count toward a barge-in now."""
        return self.output_level(now_s) * self._ratio

    def over_echo(self, pcm16: bytes, now_s: float) -> bool:
        """This caller frame is louder than the agent's own voice could come back."""
        floor = self.threshold(now_s)
        return floor <= 0.0 or rms(pcm16) > floor
