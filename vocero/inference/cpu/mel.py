"""Whisper's log-mel spectrogram in numpy: the input of the Smart Turn end-of-turn model.

The model's contract (Smart Turn v3, a Whisper-tiny encoder with a classifier head): the last
8 s of 16 kHz mono audio, zero-padded at the front when shorter; that window scaled to zero mean
and unit variance; then Whisper's features of it: 25 ms Hann frames every 10 ms (the signal
reflect-padded by half a frame at both ends, the frame past the end dropped), power spectrum,
80 Slaney-normalised mel bands over 0-8 kHz, ``log10`` floored at 1e-10, clamped to 8 decades
below the loudest value and mapped by ``(x + 4) / 4``: an ``(80, 800)`` array of roughly
[-1, 1.5].
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from vocero.inference.cpu.audio import Float32

SAMPLE_RATE = 16_000
N_FFT = 400
HOP = 160
N_MELS = 80
WINDOW_S = 8
WINDOW_SAMPLES = SAMPLE_RATE * WINDOW_S
FRAMES = WINDOW_SAMPLES // HOP
_LOG_FLOOR = 1e-10
_DYNAMIC_RANGE = 8.0
_VARIANCE_EPS = 1e-7

Float64 = npt.NDArray[np.float64]


def last_window(audio: Float32, samples: int = WINDOW_SAMPLES) -> Float32:
    """The last ``samples`` of ``audio``, zero-padded in front when it is shorter."""
    if audio.size >= samples:
        return audio[audio.size - samples :]
    return np.concatenate([np.zeros(samples - audio.size, dtype=np.float32), audio])


def standardise(audio: Float32) -> Float32:
    """Zero mean, unit variance (the model saw every window scaled so)."""
    centred: Float32 = audio - audio.mean(dtype=np.float32)
    scale = np.float32(1.0) / np.sqrt(np.square(centred).mean(dtype=np.float32) + _VARIANCE_EPS)
    return np.asarray(centred * scale, dtype=np.float32)


def _hz_to_mel(hz: Float64) -> Float64:
    """Slaney's mel scale: linear (3 mels per 200 Hz) below 1 kHz, logarithmic above."""
    linear = hz * 3.0 / 200.0
    above = 15.0 + np.log(np.maximum(hz, 1e-9) / 1000.0) * (27.0 / np.log(6.4))
    return np.where(hz < 1000.0, linear, above)


def _mel_to_hz(mel: Float64) -> Float64:
    linear = mel * 200.0 / 3.0
    above = 1000.0 * np.exp((mel - 15.0) * (np.log(6.4) / 27.0))
    return np.where(mel < 15.0, linear, above)


@functools.cache
def mel_filters(n_mels: int = N_MELS, n_fft: int = N_FFT, rate: int = SAMPLE_RATE) -> Float64:
    """``(n_mels, n_fft // 2 + 1)`` triangular filters, each scaled to unit area (Slaney)."""
    edges_hz = _mel_to_hz(
        np.linspace(0.0, float(_hz_to_mel(np.array(rate / 2.0))), n_mels + 2, dtype=np.float64)
    )
    bins_hz = np.linspace(0.0, rate / 2.0, n_fft // 2 + 1)
    lower, centre, upper = edges_hz[:-2, None], edges_hz[1:-1, None], edges_hz[2:, None]
    rising = (bins_hz[None, :] - lower) / (centre - lower)
    falling = (upper - bins_hz[None, :]) / (upper - centre)
    triangles = np.clip(np.minimum(rising, falling), 0.0, None)
    return triangles * (2.0 / (upper - lower))


@functools.cache
def _hann(n: int = N_FFT) -> Float64:
    """The periodic Hann window (the one ``torch.stft`` and Whisper use)."""
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / n)


def power_frames(audio: Float32) -> Float64:
    """``(n_fft // 2 + 1, len(audio) // HOP)`` power spectrum, one column per 10 ms frame."""
    padded = np.pad(audio.astype(np.float64), N_FFT // 2, mode="reflect")
    frames = sliding_window_view(padded, N_FFT)[::HOP][: audio.size // HOP]
    spectrum = np.fft.rfft(frames * _hann(), axis=1)
    return (spectrum.real**2 + spectrum.imag**2).T


@functools.cache
def _bands() -> tuple[tuple[int, int, Float64], ...]:
    """Each filter's non-zero bins (a few to a dozen of the 201)."""
    out = []
    for row in mel_filters():
        nonzero = np.flatnonzero(row)
        first, last = int(nonzero[0]), int(nonzero[-1]) + 1
        out.append((first, last, row[first:last].copy()))
    return tuple(out)


def mel_power(power: Float64) -> Float64:
    """``mel_filters() @ power``, one small product per band. The same numbers; but one large
    matrix product wakes the BLAS thread pool, whose spinning threads then take the cores from
    the turn model's own threads (on two cores: a judgement ~40 ms becomes ~80 ms)."""
    out = np.empty((N_MELS, power.shape[1]), dtype=np.float64)
    for band, (first, last, weights) in enumerate(_bands()):
        out[band] = weights @ power[first:last]
    return out


def log_mel(audio: Float32) -> Float32:
    """Whisper's normalised log-mel spectrogram: ``(N_MELS, len(audio) // HOP)``."""
    log_spec = np.log10(np.maximum(mel_power(power_frames(audio)), _LOG_FLOOR))
    log_spec = np.maximum(log_spec, log_spec.max() - _DYNAMIC_RANGE)
    return np.asarray((log_spec + 4.0) / 4.0, dtype=np.float32)


def turn_features(audio: Float32) -> Float32:
    """The Smart Turn input for the audio so far: ``(1, N_MELS, FRAMES)`` float32."""
    return log_mel(standardise(last_window(audio)))[None, :, :]
