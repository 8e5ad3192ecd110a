"""The paused-speech corpus of ``fixtures/turns`` (made by ``scripts/make_turn_corpus.py``), heard
the way a caller's line carries it: a lead-in of noise, the speech at its level, the same noise
under it, and the line staying open after it.

The committed files hold the clean speech only (small, lossless FLAC); the noise is added here
from each clip's seed, so a clip sounds the same on every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec
import numpy as np
import numpy.typing as npt
import yaml

from vocero.app.settings import REPO_ROOT

CORPUS = REPO_ROOT / "fixtures" / "turns"
SAMPLE_RATE = 16_000
TAIL_MS = 2500
"""The line stays open this long after the last word: past any policy's maximum silence."""

Float32 = npt.NDArray[np.float32]


class ClipLabel(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str
    file: str
    kind: Literal["complete", "paused"]
    text: str
    speaker: str
    speed: str
    speech_end_ms: int
    lead_ms: int
    level_db: float
    noise: Literal["white", "pink", "brown"]
    snr_db: float
    seed: int
    pause_ms: tuple[int, int] | None = None


class CorpusFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    sample_rate: int
    clips: list[ClipLabel]


@dataclass(frozen=True, slots=True)
class Clip:
    """One clip as heard; every time is in ms from the start of :attr:`audio`."""

    label: ClipLabel
    audio: Float32
    speech_start_ms: int
    speech_end_ms: int
    """Where the caller's last word ends: a commit before it cuts the caller off."""
    pause: tuple[int, int] | None

    @property
    def id(self) -> str:
        return self.label.id

    @property
    def paused(self) -> bool:
        return self.pause is not None

    def pcm16(self) -> bytes:
        return (np.clip(self.audio, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def load_labels(directory: Path = CORPUS) -> CorpusFile:
    raw = yaml.safe_load((directory / "corpus.yaml").read_text(encoding="utf-8"))
    corpus = msgspec.convert(raw, CorpusFile)
    if corpus.sample_rate != SAMPLE_RATE:
        raise ValueError(f"corpus sample rate {corpus.sample_rate}, expected {SAMPLE_RATE}")
    return corpus


def load_corpus(
    directory: Path = CORPUS, *, kind: str = "", limit: int | None = None, tail_ms: int = TAIL_MS
) -> list[Clip]:
    """Every clip (or those of one ``kind``), heard with its lead-in, noise and tail."""
    labels = [c for c in load_labels(directory).clips if not kind or c.kind == kind]
    return [hear(label, read_flac(directory / label.file), tail_ms) for label in labels[:limit]]


def read_flac(path: Path) -> Float32:
    import av

    with av.open(str(path)) as container:
        frames = [frame.to_ndarray().reshape(-1) for frame in container.decode(audio=0)]
    pcm = np.concatenate(frames) if frames else np.zeros(0, dtype=np.int16)
    return (pcm.astype(np.float32) / 32768.0).astype(np.float32)


def hear(label: ClipLabel, clean: Float32, tail_ms: int = TAIL_MS) -> Clip:
    lead = label.lead_ms * SAMPLE_RATE // 1000
    tail = tail_ms * SAMPLE_RATE // 1000
    peak = float(np.max(np.abs(clean))) or 1.0
    speech = clean * np.float32(10 ** (label.level_db / 20) / peak)
    line = np.zeros(lead + speech.size + tail, dtype=np.float32)
    line[lead : lead + speech.size] = speech
    rng = np.random.default_rng(label.seed)
    noise = coloured_noise(label.noise, line.size, rng)
    line += noise * np.float32(active_rms(speech) * 10 ** (-label.snr_db / 20))
    pause = None
    if label.pause_ms is not None:
        pause = (label.lead_ms + label.pause_ms[0], label.lead_ms + label.pause_ms[1])
    return Clip(
        label=label,
        audio=line.astype(np.float32),
        speech_start_ms=label.lead_ms,
        speech_end_ms=label.lead_ms + label.speech_end_ms,
        pause=pause,
    )


def active_rms(speech: Float32, frame: int = 160, floor_db: float = -40.0) -> float:
    """RMS of the 10 ms frames within 40 dB of the loudest: the level of the speech itself."""
    frames = speech[: speech.size // frame * frame].reshape(-1, frame).astype(np.float64)
    rms = np.sqrt(np.mean(np.square(frames), axis=1))
    if rms.size == 0 or rms.max() == 0:
        return 0.0
    active = rms[rms >= rms.max() * 10 ** (floor_db / 20)]
    return float(np.sqrt(np.mean(np.square(active))))


def coloured_noise(colour: str, size: int, rng: np.random.Generator) -> Float32:
    """Unit-RMS white, pink (1/f power) or brown (1/f²) noise."""
    white = rng.standard_normal(size)
    if colour != "white":
        spectrum = np.fft.rfft(white)
        freqs = np.fft.rfftfreq(size, 1 / SAMPLE_RATE)
        freqs[0] = freqs[1] if size > 1 else 1.0
        spectrum /= freqs ** (0.5 if colour == "pink" else 1.0)
        spectrum[0] = 0.0
        white = np.fft.irfft(spectrum, n=size)
    rms = float(np.sqrt(np.mean(np.square(white)))) or 1.0
    return (white / rms).astype(np.float32)
