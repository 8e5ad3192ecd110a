"""The caller's voice in ``--mode audio``: Piper, deterministic, at 16 kHz; and WAV files."""

from __future__ import annotations

import wave
from pathlib import Path
from typing import Any

SAMPLE_RATE = 16_000
FRAME_BYTES = SAMPLE_RATE * 2 // 50
"""20 ms of PCM16 mono at 16 kHz."""


class Voice:
    """Renders the caller's lines; the same text always gives the same audio."""

    def __init__(self) -> None:
        self._piper: Any = None

    def _engine(self) -> Any:
        if self._piper is None:
            from vocero.inference.cpu.settings import CpuSettings, tts_model_paths
            from vocero.inference.cpu.tts import PiperEngine

            model, config = tts_model_paths(CpuSettings.from_env())
            self._piper = PiperEngine(model, config, allow_voice_fallback=False,
                                      deterministic=True)
            self._piper.load()
        return self._piper

    def speak(self, text: str, *, pause_after_words: int = 0, pause_ms: int = 0,
              noise_db: float | None = None) -> bytes:
        """``text`` as 16 kHz PCM16; a pause of ``pause_ms`` after the first words, and noise
        ``noise_db`` dB below the speech's level when asked."""
        import numpy as np

        words = text.split()
        if pause_after_words and pause_ms and 0 < pause_after_words < len(words):
            parts = [" ".join(words[:pause_after_words]), " ".join(words[pause_after_words:])]
            silence = np.zeros(SAMPLE_RATE * pause_ms // 1000, dtype=np.float32)
            audio = np.concatenate([self._render(parts[0]), silence, self._render(parts[1])])
        else:
            audio = self._render(text)
        if noise_db is not None and len(audio):
            level = float(np.sqrt(np.mean(np.square(audio)))) or 1e-4
            noise = np.random.default_rng(len(text)).normal(
                0.0, level * 10 ** (-abs(noise_db) / 20), len(audio))
            audio = np.clip(audio + noise.astype(np.float32), -1.0, 1.0)
        from vocero.inference.toolkit.audio import float_to_pcm16

        pcm: bytes = float_to_pcm16(audio)
        return pcm

    def _render(self, text: str) -> Any:
        from vocero.contracts.domain import DEFAULT_VOICE
        from vocero.inference.toolkit.audio import pcm16_to_float, resample

        piper = self._engine()
        pcm = b"".join(piper.render(text, DEFAULT_VOICE))
        return resample(pcm16_to_float(pcm), piper.sample_rate, SAMPLE_RATE)


def write_wav(path: Path, pcm: bytes, sample_rate: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(pcm)
