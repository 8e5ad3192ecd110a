"""Reference-recording checks: a mono 16-bit PCM WAV of 1 to 30 s at a common sample rate.

Only the stdlib ``wave`` parser and numpy touch the bytes; nothing here logs or keeps them.
"""

from __future__ import annotations

import io
import wave

import msgspec
import numpy as np

from vocero.voice_vault.errors import VaultError

SAMPLE_RATES = frozenset({8_000, 11_025, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000})
MIN_SECONDS = 1.0
MAX_SECONDS = 30.0
MAX_BYTES = 44 + int(MAX_SECONDS * 48_000 * 2) + 4_096
"""The largest acceptable file: 30 s at 48 kHz plus a generous header allowance."""


class WavInfo(msgspec.Struct, frozen=True, kw_only=True):
    sample_rate: int
    frames: int

    @property
    def duration_ms(self) -> int:
        return round(self.frames * 1000 / self.sample_rate)


def validate_wav(data: bytes) -> WavInfo:
    """The recording's format, or :class:`VaultError` ``invalid_wav`` naming what is wrong."""
    if len(data) > MAX_BYTES:
        raise VaultError("invalid_wav", "too large")
    try:
        with wave.open(io.BytesIO(data), "rb") as reader:
            params = reader.getparams()
            pcm = reader.readframes(params.nframes)
    except (wave.Error, EOFError, ValueError) as exc:
        raise VaultError("invalid_wav", f"not a PCM WAV file ({exc})") from None
    _check_format(params)
    info = WavInfo(sample_rate=params.framerate, frames=len(pcm) // 2)
    if not MIN_SECONDS * 1000 <= info.duration_ms <= MAX_SECONDS * 1000:
        raise VaultError("invalid_wav", f"duration must be {MIN_SECONDS:g}-{MAX_SECONDS:g} s")
    if not np.any(np.frombuffer(pcm[: info.frames * 2], dtype="<i2")):
        raise VaultError("invalid_wav", "silent")
    return info


def _check_format(params: wave._wave_params) -> None:
    if params.comptype != "NONE":
        raise VaultError("invalid_wav", "compressed audio")
    if params.nchannels != 1:
        raise VaultError("invalid_wav", "must be mono")
    if params.sampwidth != 2:
        raise VaultError("invalid_wav", "must be 16-bit PCM")
    if params.framerate not in SAMPLE_RATES:
        raise VaultError("invalid_wav", f"unsupported sample rate {params.framerate}")
