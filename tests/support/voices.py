"""Voice-vault test material: synthetic reference WAVs of any format, a fixed key and the
fields of a voice."""

from __future__ import annotations

import io
import wave
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from vocero.contracts.ports import Clock

KEY = bytes(range(32))


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


def voice_fields(clock: Clock, **overrides: Any) -> dict[str, Any]:
    """Keyword arguments of ``VoiceVault.create_voice``: usable for 30 days from ``clock``."""
    start = datetime.fromtimestamp(clock.now(), UTC)
    fields: dict[str, Any] = {
        "voice_id": "corp-es", "tenant": "acme", "owner": "Brand team",
        "purpose": "Customer service agent voice", "languages": ["es", "en"],
        "usage_until": start + timedelta(days=30), "consent_ref": "consent-2026-001",
        "created_by": "olga",
    }
    return {**fields, **overrides}
