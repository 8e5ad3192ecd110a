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
import threading

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from vocero.inference.toolkit.audio import Float32

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


class _Workspace(threading.local):
    """One set of scratch arrays per worker thread, grown to the longest input seen.

    An 8 s window is ~7 MB of float64 temporaries; allocated afresh for every judgement, its
    pages are faulted in again each time (~3 ms of the ~4.5 ms the features took); reused, the
    same spectrum costs ~1.5 ms.
    """

    def __init__(self) -> None:
        self.padded = np.empty(0, dtype=np.float64)
        self.log_spec = np.empty((N_MELS, 0), dtype=np.float64)
        self.frames = np.empty((0, N_FFT), dtype=np.float64)
        self.spectrum = np.empty((0, N_FFT // 2 + 1), dtype=np.complex128)
        self.power = np.empty((0, N_FFT // 2 + 1), dtype=np.float64)
        self.square = np.empty((0, N_FFT // 2 + 1), dtype=np.float64)

    def pad(self, audio: Float32) -> Float64:
        """``audio`` as float64, reflect-padded by half a frame at both ends (``np.pad``'s
        ``"reflect"``: the edge sample itself is not repeated)."""
        half, size = N_FFT // 2, audio.size
        if size <= half:  # shorter than half a frame: reflected more than once
            return np.pad(audio.astype(np.float64), half, mode="reflect")
        if self.padded.size < size + 2 * half:
            self.padded = np.empty(size + 2 * half, dtype=np.float64)
        padded = self.padded[: size + 2 * half]
        padded[half : half + size] = audio
        padded[:half] = audio[half:0:-1]
        padded[half + size :] = audio[size - 1 - half : size - 1][::-1]
        return padded

    def mels(self, frames: int) -> Float64:
        """An ``(N_MELS, frames)`` array to fill."""
        if self.log_spec.shape[1] != frames:
            self.log_spec = np.empty((N_MELS, frames), dtype=np.float64)
        return self.log_spec

    def take(self, frames: int) -> tuple[Float64, npt.NDArray[np.complex128], Float64, Float64]:
        if self.frames.shape[0] < frames:
            bins = N_FFT // 2 + 1
            self.frames = np.empty((frames, N_FFT), dtype=np.float64)
            self.spectrum = np.empty((frames, bins), dtype=np.complex128)
            self.power = np.empty((frames, bins), dtype=np.float64)
            self.square = np.empty((frames, bins), dtype=np.float64)
        return (
            self.frames[:frames],
            self.spectrum[:frames],
            self.power[:frames],
            self.square[:frames],
        )


_workspace = _Workspace()


def repeated_leading_frames(audio: Float32) -> int:
    """How many frames at the start hear nothing but ``audio[0]`` (the padding in front of a
    short utterance): their spectra are one and the same."""
    if audio.size == 0:
        return 0
    constant = int(np.argmax(audio != audio[0]))  # 0: no sample differs from the first
    if constant == 0:
        return audio.size // HOP  # the mirrored end is audio[0] too
    # Frame i covers samples [i*HOP - N_FFT/2, i*HOP + N_FFT/2), the ones before 0 mirrored
    # from 1 .. N_FFT/2: it is all audio[0] when i*HOP + N_FFT/2 + 1 <= constant.
    reach = N_FFT // 2 + 1
    if constant < reach:
        return 0
    return min((constant - reach) // HOP + 1, audio.size // HOP)


def power_frames(audio: Float32, first: int = 0) -> Float64:
    """``(n_fft // 2 + 1, len(audio) // HOP - first)`` power spectrum, one column per 10 ms
    frame from frame ``first`` on. The array is scratch space of this thread, valid until its
    next call."""
    count = audio.size // HOP - first
    padded = _workspace.pad(audio)
    frames, spectrum, power, square = _workspace.take(count)
    np.multiply(sliding_window_view(padded, N_FFT)[first * HOP :: HOP][:count], _hann(), out=frames)
    np.fft.rfft(frames, axis=1, out=spectrum)
    np.square(spectrum.real, out=power)
    np.square(spectrum.imag, out=square)
    np.add(power, square, out=power)
    return power.T


@functools.cache
def _bands() -> tuple[tuple[int, int, Float64], ...]:
    """Each filter's non-zero bins (a few to a dozen of the 201)."""
    out = []
    for row in mel_filters():
        nonzero = np.flatnonzero(row)
        first, last = int(nonzero[0]), int(nonzero[-1]) + 1
        out.append((first, last, row[first:last].copy()))
    return tuple(out)


def mel_power(power: Float64, out: Float64 | None = None) -> Float64:
    """``mel_filters() @ power`` (into ``out`` when given), one small product per band. The same
    numbers; but one large matrix product wakes the BLAS thread pool, whose spinning threads
    then take the cores from the turn model's own threads (on two cores: a judgement ~40 ms
    becomes ~80 ms)."""
    if out is None:
        out = np.empty((N_MELS, power.shape[1]), dtype=np.float64)
    for band, (first, last, weights) in enumerate(_bands()):
        out[band] = weights @ power[first:last]
    return out


def log_mel(audio: Float32) -> Float32:
    """Whisper's normalised log-mel spectrogram: ``(N_MELS, len(audio) // HOP)``. The frames
    of a short utterance's padding are computed once."""
    first = max(repeated_leading_frames(audio) - 1, 0)
    log_spec = _workspace.mels(audio.size // HOP)
    mel_power(power_frames(audio, first), out=log_spec[:, first:])
    log_spec[:, :first] = log_spec[:, first : first + 1]
    np.maximum(log_spec, _LOG_FLOOR, out=log_spec)
    np.log10(log_spec, out=log_spec)
    np.maximum(log_spec, log_spec.max() - _DYNAMIC_RANGE, out=log_spec)
    np.add(log_spec, 4.0, out=log_spec)
    features = np.empty(log_spec.shape, dtype=np.float32)
    np.divide(log_spec, 4.0, out=features, casting="same_kind")
    return features


def turn_features(audio: Float32) -> Float32:
    """The Smart Turn input for the audio so far: ``(1, N_MELS, FRAMES)`` float32."""
    return log_mel(standardise(last_window(audio)))[None, :, :]
