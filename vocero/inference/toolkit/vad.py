"""Voice activity detection: Silero VAD (ONNX) with hysteresis, fed any number of samples.

Audio is pushed as 16 kHz PCM16 in frames of any length (the client sends 20 ms); the model scores
windows of 512 samples (32 ms), each with the 64 samples before it as context and the recurrent
state of the previous window. Speech starts after ``min_speech_ms`` of windows scoring at least
``onset`` and stops after ``min_silence_ms`` of windows scoring below ``offset``; between the two
thresholds the state holds, so a breath or a plosive never flips it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vocero.contracts.ports import VadEvent
from vocero.inference import threads
from vocero.inference.toolkit.audio import Float32, pcm16_to_float
from vocero.inference.toolkit.settings import ModelNotFoundError, existing

SAMPLE_RATE = 16_000
WINDOW = 512
CONTEXT = 64
_WINDOW_MS = WINDOW * 1000 // SAMPLE_RATE


def silero_model_path(configured: str = "") -> str:
    """The Silero VAD model: ``configured`` (``VOCERO_VAD_MODEL``) when set, else the ONNX file
    bundled with ``faster-whisper``; every runner set that listens on the CPU loads this one."""
    if configured:
        return existing(configured, "VOCERO_VAD_MODEL")
    spec = importlib.util.find_spec("faster_whisper")
    if spec is None or spec.origin is None:
        raise ModelNotFoundError("install faster-whisper or set VOCERO_VAD_MODEL")
    assets = Path(spec.origin).parent / "assets"
    found = sorted(assets.glob("silero*.onnx"))
    if not found:
        raise ModelNotFoundError(f"no Silero VAD model under {assets}; set VOCERO_VAD_MODEL")
    return str(found[-1])


@dataclass(frozen=True, slots=True)
class VadSettings:
    onset: float = 0.5
    offset: float = 0.35
    min_speech_ms: int = 96
    min_silence_ms: int = 480


class SileroVad:
    """The :class:`~vocero.contracts.ports.Vad` port; one ONNX session shared by all streams."""

    name = "vad.silero"

    def __init__(self, model_path: str, settings: VadSettings | None = None) -> None:
        self._model_path = model_path
        self._settings = settings or VadSettings()

    def load(self) -> Any:
        return threads.load_once(("silero", self._model_path), self._create)

    def _create(self) -> Any:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = 1
        options.log_severity_level = 4
        return onnxruntime.InferenceSession(
            self._model_path, providers=["CPUExecutionProvider"], sess_options=options
        )

    def open(self) -> SileroVadStream:
        return SileroVadStream(self.load(), self._settings)


class SileroVadStream:
    """One audio stream's detector; not shared between sessions."""

    def __init__(self, session: Any, settings: VadSettings) -> None:
        self._session = session
        self._settings = settings
        self._samples_seen = 0
        self.reset()

    def reset(self) -> None:
        """Forget the speech state and pending audio; ``at_ms`` keeps counting from ``open()``."""
        self._pending: Float32 = np.zeros(0, dtype=np.float32)
        self._context: Float32 = np.zeros(CONTEXT, dtype=np.float32)
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._speaking = False
        self._run_start_ms = -1
        self._run_ms = 0
        self.voiced_ms = 0
        """Milliseconds of windows judged speech (at or above ``onset``) since speech started."""

    def push(self, pcm16: bytes) -> list[VadEvent]:
        self._pending = np.concatenate([self._pending, pcm16_to_float(pcm16)])
        events: list[VadEvent] = []
        while self._pending.size >= WINDOW:
            window, self._pending = self._pending[:WINDOW], self._pending[WINDOW:]
            start_ms = self._samples_seen * 1000 // SAMPLE_RATE
            self._samples_seen += WINDOW
            event = self._step(self._score(window), start_ms)
            if event is not None:
                events.append(event)
        return events

    def probability(self, window: Float32) -> float:
        """The model's speech probability for one 512-sample window (advances the state)."""
        return self._score(window)

    def _score(self, window: Float32) -> float:
        framed = np.concatenate([self._context, window])[None, :]
        self._context = window[-CONTEXT:]
        prob, self._h, self._c = self._session.run(
            None, {"input": framed, "h": self._h, "c": self._c}
        )
        return float(np.asarray(prob).reshape(-1)[0])

    def _step(self, prob: float, start_ms: int) -> VadEvent | None:
        s = self._settings
        if prob >= s.onset:
            self.voiced_ms += _WINDOW_MS
        contrary = prob < s.offset if self._speaking else prob >= s.onset
        if not contrary:
            self._run_start_ms, self._run_ms = -1, 0
            return None
        if self._run_start_ms < 0:
            self._run_start_ms = start_ms
        self._run_ms += _WINDOW_MS
        needed = s.min_silence_ms if self._speaking else s.min_speech_ms
        if self._run_ms < needed:
            return None
        self._speaking = not self._speaking
        if self._speaking:
            self.voiced_ms = self._run_ms
        at_ms, self._run_start_ms, self._run_ms = self._run_start_ms, -1, 0
        return VadEvent(kind="speech_started" if self._speaking else "speech_stopped", at_ms=at_ms)
