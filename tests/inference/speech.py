"""Helpers for the speech tests: Piper renders fixture sentences, WER scores transcripts."""

from __future__ import annotations

import re

from vocero.contracts.domain import DEFAULT_VOICE
from vocero.inference.cpu.tts import PiperEngine
from vocero.inference.toolkit.audio import float_to_pcm16, pcm16_to_float, resample


def speak_16k(piper: PiperEngine, text: str) -> bytes:
    """What a caller would send: ``text`` spoken by Piper without its random noise (so the same
    text always gives the same audio and the same transcript), as 16 kHz PCM16."""
    steady = PiperEngine(
        piper.model_path, piper.config_path, allow_voice_fallback=False, deterministic=True
    )
    pcm = b"".join(steady.render(text, DEFAULT_VOICE))
    return float_to_pcm16(resample(pcm16_to_float(pcm), piper.sample_rate, 16_000))


def normalise(text: str) -> list[str]:
    """Lower case, no punctuation, "p.m." as "pm", "A-123" as "a123", "5,582" as "5582"."""
    text = text.lower().replace("\u2019", "'")
    text = re.sub(r"\b([ap])\.\s?m\.", r"\1m", text)
    text = re.sub(r"(\d),(\d{3})", r"\1\2", text)
    text = re.sub(r"\b([a-z]{1,3})[-\s](\d)", r"\1\2", text)
    text = re.sub(r"(\d)\s?([ap]m)\b", r"\1 \2", text)
    text = re.sub(r"[^\w\s']", " ", text)
    return text.split()


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(edit distance in words, reference length) after :func:`normalise`."""
    ref, hyp = normalise(reference), normalise(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        previous, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (r != h))
    return row[len(hyp)], len(ref)
