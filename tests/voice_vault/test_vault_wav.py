"""Reference WAV validation: mono 16-bit PCM, 1 to 30 s, a common sample rate, not silent."""

from __future__ import annotations

import pytest

from tests.support.voices import make_wav
from vocero.voice_vault import VaultError
from vocero.voice_vault.wav import validate_wav


@pytest.mark.parametrize("rate", [16_000, 24_000, 44_100, 48_000])
def test_accepts_mono_pcm16(rate: int) -> None:
    info = validate_wav(make_wav(2.0, rate=rate))
    assert (info.sample_rate, info.duration_ms) == (rate, 2000)


@pytest.mark.parametrize(
    ("wav", "detail"),
    [
        (make_wav(channels=2), "mono"),
        (make_wav(width=1), "16-bit"),
        (make_wav(0.5), "duration"),
        (make_wav(31.0, rate=8_000), "duration"),
        (make_wav(rate=12_345), "sample rate"),
        (make_wav(silent=True), "silent"),
        (b"RIFF\x00\x00\x00\x00WAVEjunk", "not a PCM WAV"),
        (b"ID3 this is an mp3", "not a PCM WAV"),
        (b"", "not a PCM WAV"),
    ],
)
def test_refuses_anything_else(wav: bytes, detail: str) -> None:
    with pytest.raises(VaultError) as caught:
        validate_wav(wav)
    assert caught.value.code == "invalid_wav"
    assert detail in caught.value.detail


def test_refuses_an_oversized_upload_before_parsing() -> None:
    with pytest.raises(VaultError) as caught:
        validate_wav(make_wav(2.0) + b"\x00" * 4_000_000)
    assert caught.value.detail == "too large"
