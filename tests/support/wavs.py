"""Reference recordings for voice-vault tests: small synthetic WAVs of any format."""

from __future__ import annotations

import io
import wave

import numpy as np


def make_wav(
    seconds: float = 1.5,
    *,
    rate: int = 16_000,
    channels: int = 1,
    width: int = 2,
    silent: bool = False,
) -> bytes:
    frames = int(seconds * rate)
    t = np.arange(frames) / rate
    tone = np.zeros(frames) if silent else 0.3 * np.sin(2 * np.pi * 220.0 * t)
    if width == 2:
        samples = (tone * 32767).astype("<i2")
    else:
        samples = ((tone + 1.0) * 127.5).astype("u1")
    data = np.repeat(samples, channels).tobytes()
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(width)
        writer.setframerate(rate)
        writer.writeframes(data)
    return buffer.getvalue()
