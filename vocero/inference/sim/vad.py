"""Energy-based voice activity detection for the simulators and tests.

Deterministic: decisions depend only on the samples pushed, never on wall time. Speech starts
after ``start_ms`` of frames above the threshold and stops after ``stop_ms`` below it.
"""

from __future__ import annotations

import numpy as np

from vocero.contracts.ports import VadEvent

FRAME_MS = 20
SAMPLE_RATE = 16000
_FRAME_SAMPLES = SAMPLE_RATE * FRAME_MS // 1000
_FRAME_BYTES = _FRAME_SAMPLES * 2


class EnergyVadStream:
    def __init__(self, threshold: float, start_ms: int, stop_ms: int) -> None:
        self._threshold = threshold
        # RMS >= threshold (full scale 1.0), compared as a sum of squared int16 samples: no
        # scaling, mean or square root per frame.
        self._energy_floor = (threshold * 32768.0) ** 2 * _FRAME_SAMPLES
        self._start_frames = max(1, start_ms // FRAME_MS)
        self._stop_frames = max(1, stop_ms // FRAME_MS)
        self.reset()

    def reset(self) -> None:
        self._pending = b""
        self._elapsed_ms = 0
        self._speaking = False
        self._run = 0
        self.voiced_ms = 0

    def push(self, pcm16: bytes) -> list[VadEvent]:
        data = self._pending + pcm16 if self._pending else pcm16
        whole = len(data) - len(data) % _FRAME_BYTES
        self._pending = data[whole:] if whole < len(data) else b""
        events: list[VadEvent] = []
        for offset in range(0, whole, _FRAME_BYTES):
            samples = np.frombuffer(data, "<i2", _FRAME_SAMPLES, offset).astype(np.float64)
            event = self._frame(float(np.dot(samples, samples)) >= self._energy_floor)
            if event is not None:
                events.append(event)
        return events

    def _frame(self, loud: bool) -> VadEvent | None:
        self._elapsed_ms += FRAME_MS
        if loud:
            self.voiced_ms += FRAME_MS
        self._run = self._run + 1 if loud != self._speaking else 0
        if not self._speaking and self._run >= self._start_frames:
            self._speaking, self._run = True, 0
            self.voiced_ms = self._start_frames * FRAME_MS
            return VadEvent(
                kind="speech_started", at_ms=self._elapsed_ms - self._start_frames * FRAME_MS
            )
        if self._speaking and self._run >= self._stop_frames:
            self._speaking, self._run = False, 0
            return VadEvent(
                kind="speech_stopped", at_ms=self._elapsed_ms - self._stop_frames * FRAME_MS
            )
        return None


class EnergyVad:
    def __init__(self, threshold: float = 0.02, start_ms: int = 60, stop_ms: int = 400) -> None:
        self.threshold = threshold
        self.start_ms = start_ms
        self.stop_ms = stop_ms

    def open(self) -> EnergyVadStream:
        return EnergyVadStream(self.threshold, self.start_ms, self.stop_ms)
