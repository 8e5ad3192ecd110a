"""PCM16 conversions shared by the speech runners."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Float32 = npt.NDArray[np.float32]


def pcm16_to_float(pcm16: bytes) -> Float32:
    samples = np.frombuffer(pcm16[: len(pcm16) - len(pcm16) % 2], dtype="<i2")
    return (samples.astype(np.float32) / 32768.0).astype(np.float32)


def float_to_pcm16(audio: npt.NDArray[np.floating]) -> bytes:
    clipped = np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0)
    return (clipped * 32767.0).astype("<i2").tobytes()


def resample(audio: Float32, from_rate: int, to_rate: int) -> Float32:
    """Linear-interpolation resampling: enough for speech recognition input."""
    if from_rate == to_rate or audio.size == 0:
        return audio
    duration = audio.size / from_rate
    target = np.arange(round(duration * to_rate)) / to_rate
    source = np.arange(audio.size) / from_rate
    return np.interp(target, source, audio).astype(np.float32)


def chunks(pcm16: bytes, sample_rate: int, chunk_ms: int) -> list[bytes]:
    """Split PCM16 mono into pieces of ``chunk_ms`` (the last one may be shorter)."""
    size = max(2, sample_rate * chunk_ms // 1000 * 2)
    return [pcm16[i : i + size] for i in range(0, len(pcm16), size)]
