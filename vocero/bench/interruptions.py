"""``vocero bench false-interruptions``: how well the false-interruption signal tells a sound
that should let the agent resume from a caller who takes the turn (ADR-0038, issue 45 item 3).

The signal (:mod:`vocero.orchestrator.false_interruptions`) is the recogniser's final on the
sound that stopped the agent (no words: :func:`~vocero.contracts.lexicon.backchannels.has_no_words`)
and the sound's length (it ended within ``window_ms`` of the stop). Each clip is heard on a line
with noise, as the turn corpus is, and transcribed whole by the CPU set's Whisper:

* **noise** (should resume): coughs, throat clears, breaths, knocks, a thud, a hum, synthesized
  with numpy from fixed seeds (no fixture of such sounds exists);
* **backchannel** (should resume): "mm-hmm", "uh-huh", "yeah", "okay", "right", "hmm", "um"
  ... said by Piper and by espeak-ng in three voices;
* **speech** (should not): the tuning half's complete requests (``fixtures/turns``), whole (a
  caller who barged in and said their request) and cut to their first 700 ms of speech (a
  caller who barged in with a word or two: the hardest case for the words).

The sound's length after the stop is the clip's speech less the ``min_interruption_ms`` heard
before the stop (the session measures it on the utterance's own audio). Precision
and recall are of "resume" against the clips that should resume, per signal: the words alone,
and the words with the window. The held-out half is not used.
"""

from __future__ import annotations

import subprocess
import tempfile
import wave
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from vocero.bench.turn_corpus import CORPUS, SAMPLE_RATE, active_rms, coloured_noise, load_corpus
from vocero.contracts.lexicon.backchannels import has_no_words

Float32 = npt.NDArray[np.float32]
STOP_MS = 200
"""Speech heard before the barge-in stops the agent (the profiles' ``min_interruption_ms``)."""
WINDOW_MS = 1500
SHORT_START_MS = 700
BACKCHANNELS = ("Mm-hmm.", "Uh-huh.", "Yeah.", "Okay.", "Right.", "Hmm.", "Um.", "Uh.",
                "Sure.", "I see.")
ESPEAK_VOICES = ("en-us", "en-gb", "en-us+f3")


@dataclass
class Heard:
    clip: str
    kind: str
    """``noise``, ``backchannel``, ``speech`` or ``speech_start``."""
    sound_ms: float
    text: str

    @property
    def should_resume(self) -> bool:
        return self.kind in ("noise", "backchannel")

    @property
    def no_words(self) -> bool:
        return has_no_words(self.text)

    def resumes(self, window_ms: float | None) -> bool:
        lasted = self.sound_ms - STOP_MS
        return self.no_words and (window_ms is None or lasted <= window_ms)


# ------------------------------------------------------------------------------ sounds


def _envelope(n: int, attack: int, decay_s: float) -> Float32:
    t = np.arange(n) / SAMPLE_RATE
    env = np.exp(-t / decay_s)
    env[:attack] *= np.linspace(0.0, 1.0, attack)
    return env.astype(np.float32)


def _band(noise: Float32, low: float, high: float) -> Float32:
    spectrum = np.fft.rfft(noise)
    freqs = np.fft.rfftfreq(noise.size, 1 / SAMPLE_RATE)
    spectrum[(freqs < low) | (freqs > high)] = 0
    return np.fft.irfft(spectrum, n=noise.size).astype(np.float32)


def _cough(rng: np.random.Generator) -> Float32:
    parts = []
    for _ in range(int(rng.integers(1, 4))):
        n = int(SAMPLE_RATE * rng.uniform(0.12, 0.3))
        burst = _band(rng.standard_normal(n).astype(np.float32), 250, rng.uniform(2500, 5000))
        t = np.arange(n) / SAMPLE_RATE
        voiced = np.sin(2 * np.pi * rng.uniform(110, 260) * t) * rng.uniform(0.0, 0.6)
        parts.append((burst / (np.abs(burst).max() or 1) + voiced) * _envelope(n, 80, 0.08))
        parts.append(np.zeros(int(SAMPLE_RATE * rng.uniform(0.05, 0.2)), dtype=np.float32))
    return np.concatenate(parts).astype(np.float32)


def _clear(rng: np.random.Generator) -> Float32:
    n = int(SAMPLE_RATE * rng.uniform(0.25, 0.45))
    t = np.arange(n) / SAMPLE_RATE
    rough = _band(rng.standard_normal(n).astype(np.float32), 100, 1500)
    buzz = np.sign(np.sin(2 * np.pi * rng.uniform(80, 140) * t)) * 0.3
    return ((rough / (np.abs(rough).max() or 1) + buzz) * np.hanning(n)).astype(np.float32)


def _breath(rng: np.random.Generator) -> Float32:
    n = int(SAMPLE_RATE * rng.uniform(0.4, 0.8))
    return (_band(rng.standard_normal(n).astype(np.float32), 500, 6000) * np.hanning(n)).astype(
        np.float32)


def _knocks(rng: np.random.Generator) -> Float32:
    out = np.zeros(int(SAMPLE_RATE * rng.uniform(0.3, 0.6)), dtype=np.float32)
    for at in np.sort(rng.uniform(0, out.size - 1600, int(rng.integers(2, 5)))).astype(int):
        n = 1600
        knock = _band(rng.standard_normal(n).astype(np.float32), 80, 1200) * _envelope(n, 8, 0.01)
        out[at : at + n] += knock
    return out


def _thud(rng: np.random.Generator) -> Float32:
    n = int(SAMPLE_RATE * 0.35)
    return (coloured_noise("brown", n, rng) * _envelope(n, 30, 0.06)).astype(np.float32)


def _hum(rng: np.random.Generator) -> Float32:
    n = int(SAMPLE_RATE * rng.uniform(0.3, 0.7))
    t = np.arange(n) / SAMPLE_RATE
    pitch = rng.uniform(100, 220) * (1 + 0.1 * np.sin(2 * np.pi * 2 * t))
    phase = 2 * np.pi * np.cumsum(pitch) / SAMPLE_RATE
    tone = np.zeros(n, dtype=np.float64)
    for k in range(1, 8):
        tone += np.sin(k * phase) / k**1.5
    return (tone * np.hanning(n)).astype(np.float32)


NOISES: dict[str, Callable[[np.random.Generator], Float32]] = {
    "cough": _cough, "throat_clear": _clear, "breath": _breath, "knocks": _knocks,
    "thud": _thud, "hum": _hum,
}


def on_a_line(sound: Float32, seed: int, snr_db: float = 20.0) -> Float32:
    """``sound`` at -20 dBFS peak, 200 ms in, with line noise under it and 300 ms after."""
    rng = np.random.default_rng(seed)
    sound = sound / (np.abs(sound).max() or 1) * np.float32(0.3)
    line = np.zeros(int(SAMPLE_RATE * 0.2) + sound.size + int(SAMPLE_RATE * 0.3), np.float32)
    line[int(SAMPLE_RATE * 0.2) : int(SAMPLE_RATE * 0.2) + sound.size] = sound
    colour = ("white", "pink", "brown")[seed % 3]
    level = active_rms(sound) * 10 ** (-snr_db / 20)
    return (line + coloured_noise(colour, line.size, rng) * np.float32(level)).astype(np.float32)


def noise_clips(per_kind: int) -> list[tuple[str, str, Float32, float]]:
    clips = []
    for index, (name, make) in enumerate(NOISES.items()):
        for seed in range(per_kind):
            sound = make(np.random.default_rng(1000 * index + seed))
            clips.append((f"{name}-{seed}", "noise", sound, sound.size * 1000 / SAMPLE_RATE))
    return clips


def _espeak(text: str, voice: str) -> Float32 | None:
    from vocero.inference.toolkit.audio import pcm16_to_float, resample

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.wav"
        try:
            subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True,
                           capture_output=True)
        except (OSError, subprocess.CalledProcessError):
            return None
        with wave.open(str(path)) as wav:
            rate, pcm = wav.getframerate(), wav.readframes(wav.getnframes())
    return np.asarray(resample(pcm16_to_float(pcm), rate, SAMPLE_RATE), dtype=np.float32)


def _trim(audio: Float32) -> Float32:
    frames = audio[: audio.size // 320 * 320].reshape(-1, 320)
    loud = np.flatnonzero(np.sqrt(np.mean(np.square(frames), axis=1)) >= 0.01)
    return audio[loud[0] * 320 : (loud[-1] + 1) * 320] if loud.size else audio


def backchannel_clips() -> list[tuple[str, str, Float32, float]]:
    from vocero.bench.ttfs import caller_audio

    clips = []
    for text, pcm in zip(BACKCHANNELS, caller_audio(list(BACKCHANNELS)), strict=True):
        audio = (np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0)
        clips.append((f"piper:{text}", "backchannel", audio, audio.size * 1000 / SAMPLE_RATE))
    for voice in ESPEAK_VOICES:
        for text in BACKCHANNELS:
            spoken = _espeak(text, voice)
            if spoken is not None:
                audio = _trim(spoken)
                clips.append((f"{voice}:{text}", "backchannel", audio,
                              audio.size * 1000 / SAMPLE_RATE))
    return clips


def speech_clips(limit: int | None) -> list[tuple[str, str, Float32, float]]:
    clips = []
    for clip in load_corpus(CORPUS, kind="complete", limit=limit, tail_ms=300):
        start, end = clip.speech_start_ms * 16, clip.speech_end_ms * 16
        whole = clip.audio[max(0, start - 3200) : end + 4800]
        short = clip.audio[max(0, start - 3200) : start + SHORT_START_MS * 16 + 4800]
        speech_ms = float(clip.speech_end_ms - clip.speech_start_ms)
        clips.append((clip.id, "speech", whole, speech_ms))
        clips.append((f"{clip.id}:start", "speech_start", short, float(SHORT_START_MS)))
    return clips


# ------------------------------------------------------------------------------- figures


def scores(heard: list[Heard], window_ms: float | None) -> dict[str, Any]:
    resumed = [h for h in heard if h.resumes(window_ms)]
    right = [h for h in resumed if h.should_resume]
    should = [h for h in heard if h.should_resume]
    by_kind = {
        kind: f"{sum(h.resumes(window_ms) for h in heard if h.kind == kind)}/"
        f"{sum(h.kind == kind for h in heard)} resumed"
        for kind in ("noise", "backchannel", "speech", "speech_start")
    }
    return {
        "precision": round(len(right) / len(resumed), 4) if resumed else None,
        "recall": round(len(right) / len(should), 4) if should else None,
        "by_kind": by_kind,
        "wrongly_resumed": sorted(f"{h.clip}: {h.text!r}" for h in resumed if not h.should_resume),
        "not_resumed": sorted(f"{h.clip}: {h.text!r}" for h in should if not h.resumes(window_ms)),
    }


def run_interruptions(limit: int | None = None) -> dict[str, Any]:
    from vocero.bench.turns import Recogniser

    recogniser = Recogniser()
    clips = [
        *noise_clips(per_kind=4 if limit is None else max(1, limit // 6)),
        *backchannel_clips(),
        *speech_clips(limit),
    ]
    heard: list[Heard] = []
    for seed, (name, kind, sound, sound_ms) in enumerate(clips):
        audio = on_a_line(sound, seed) if kind in ("noise", "backchannel") else sound
        pcm = (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()
        heard.append(Heard(name, kind, sound_ms, recogniser.heard(pcm).text.strip()))
    return {
        "benchmark": "false-interruptions",
        "signal": "final transcript has no words (contracts/lexicon/backchannels.has_no_words) "
        f"and the sound's speech ended within {WINDOW_MS} ms of the stop ({STOP_MS} ms of it "
        "heard first)",
        "clips": {kind: sum(h.kind == kind for h in heard)
                  for kind in ("noise", "backchannel", "speech", "speech_start")},
        "words_alone": scores(heard, None),
        "words_and_window": scores(heard, WINDOW_MS),
        "transcripts": {h.clip: h.text for h in heard if h.kind != "speech"},
    }


async def false_interruptions(args: Any) -> dict[str, Any]:
    """``vocero bench false-interruptions [--limit N]`` (the CPU set's Whisper and Piper)."""
    import anyio

    limit = getattr(args, "limit", None)
    return await anyio.to_thread.run_sync(lambda: run_interruptions(limit))
