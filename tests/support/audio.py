"""Synthetic caller audio: 20 ms PCM16 frames of tone (speech) or silence at 16 kHz."""

from __future__ import annotations

import math

import numpy as np

FRAME_SAMPLES = 320


def tone_frames(ms: int, amplitude: float = 0.3) -> list[bytes]:
    frames = []
    for index in range(ms // 20):
        t = np.arange(index * FRAME_SAMPLES, (index + 1) * FRAME_SAMPLES) / 16000.0
        wave = amplitude * np.sin(2 * math.pi * 300.0 * t)
        frames.append((wave * 32767).astype("<i2").tobytes())
    return frames


def silence_frames(ms: int) -> list[bytes]:
    return [b"\x00\x00" * FRAME_SAMPLES for _ in range(ms // 20)]


def utterance(speech_ms: int = 400, trailing_silence_ms: int = 500) -> list[bytes]:
    return tone_frames(speech_ms) + silence_frames(trailing_silence_ms)
