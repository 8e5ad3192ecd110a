"""Carrier audio: G.711 μ-law at 8 kHz in 20 ms frames, converted to and from the session's
PCM16 (``docs/telephony.md``, "Audio").

μ-law is the ITU G.711 codec of the ``g711`` package (a C implementation; the standard
library's ``audioop`` is deprecated since 3.11 and gone in 3.13, and ``audioop-lts`` installs
on 3.13+ only). Rates are changed with ``soxr`` (the SoX resampler, high quality), block by
block with the neighbouring blocks as context (:class:`Resampler`), so that a stream cut into
frames converts as one signal, with no clicks at frame edges and 20 ms of delay.
"""

from __future__ import annotations

import g711
import numpy as np
import soxr

CARRIER_RATE = 8000
"""The carrier's sample rate (μ-law, mono)."""
FRAME_MS = 20
FRAME_BYTES = CARRIER_RATE * FRAME_MS // 1000
"""One 20 ms frame of 8 kHz μ-law: 160 bytes (one byte a sample)."""
ULAW_SILENCE = b"\xff"
"""μ-law's code for zero (G.711 stores the complement of sign, segment and step)."""
_FULL_SCALE = 32768.0


def ulaw_to_pcm16(ulaw: bytes) -> np.ndarray:
    """Decode μ-law bytes to PCM16 samples (int16)."""
    if not ulaw:
        return np.zeros(0, dtype=np.int16)
    decoded = np.asarray(g711.decode_ulaw(ulaw), dtype=np.float32)
    return np.clip(np.round(decoded * _FULL_SCALE), -32768, 32767).astype(np.int16)


def pcm16_to_ulaw(samples: np.ndarray) -> bytes:
    """Encode PCM16 samples (int16) to μ-law bytes, one byte a sample."""
    if samples.size == 0:
        return b""
    encoded: bytes = g711.encode_ulaw(samples.astype(np.float32) / _FULL_SCALE)
    return encoded


class Resampler:
    """One stream's rate conversion, PCM16 in and out, kept across calls.

    ``soxr``'s own streaming mode holds about 100 ms before it gives anything out (its block),
    too much in front of a turn detector. Here the stream is cut into 20 ms blocks and each
    block is converted one-shot (HQ) between the block before it and the block after it, and
    only its own part of the result is kept: the filter (a few ms long) always has real
    neighbours, so the joins are as if the stream were converted whole (the test compares),
    for one block of delay. :meth:`flush` converts what is left, the stream's end, and starts a
    new stream."""

    BLOCK_MS = 20

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._block = max(1, in_rate * self.BLOCK_MS // 1000)
        self._reset()

    def _reset(self) -> None:
        self._before = _EMPTY
        self._current: np.ndarray | None = None
        self._buffer = _EMPTY
        self._taken = 0
        """Input samples of this stream converted so far."""

    def convert(self, samples: np.ndarray) -> np.ndarray:
        if self.in_rate == self.out_rate:
            return samples
        self._buffer = np.concatenate([self._buffer, samples.astype(np.int16)])
        out: list[np.ndarray] = []
        while len(self._buffer) >= self._block:
            after, self._buffer = self._buffer[: self._block], self._buffer[self._block :]
            if self._current is not None:
                out.append(self._between(self._current, after))
            self._current = after
        return np.concatenate(out) if out else _EMPTY

    def flush(self) -> np.ndarray:
        """What is left of the stream, converted; the next sample starts a new stream."""
        if self.in_rate == self.out_rate:
            return _EMPTY
        out: list[np.ndarray] = []
        if self._current is not None:
            out.append(self._between(self._current, self._buffer))
        if len(self._buffer):
            out.append(self._between(self._buffer, _EMPTY))
        self._reset()
        return np.concatenate(out) if out else _EMPTY

    def _between(self, block: np.ndarray, after: np.ndarray) -> np.ndarray:
        """``block`` converted with its neighbours; the one before is remembered."""
        before = self._before
        converted = soxr.resample(
            np.concatenate([before, block, after]), self.in_rate, self.out_rate, quality="HQ"
        )
        start, self._taken = self._taken, self._taken + len(block)
        count = self._taken * self.out_rate // self.in_rate - start * self.out_rate // self.in_rate
        offset = len(before) * self.out_rate // self.in_rate
        part = np.asarray(converted[offset : offset + count], dtype=np.int16)
        self._before = block
        if len(part) < count:
            part = np.concatenate([part, np.zeros(count - len(part), dtype=np.int16)])
        return part


_EMPTY = np.zeros(0, dtype=np.int16)


class CarrierDecoder:
    """The caller's μ-law at 8 kHz to PCM16 little-endian bytes at the session's input rate."""

    def __init__(self, session_rate: int = 16000) -> None:
        self._resampler = Resampler(CARRIER_RATE, session_rate)

    def decode(self, ulaw: bytes) -> bytes:
        return self._resampler.convert(ulaw_to_pcm16(ulaw)).astype("<i2").tobytes()


class CarrierEncoder:
    """The agent's PCM16 at the runner's rate to whole 20 ms frames of 8 kHz μ-law.

    Audio that does not fill a frame waits for the next call; :meth:`flush` pads the last frame
    with silence (the end of a unit). :attr:`source_ms` counts the audio taken in, in the
    session's own timeline; :attr:`sent_ms` the part of it that left in frames (the filter's
    delay and a partial frame lag behind until the flush)."""

    def __init__(self, source_rate: int) -> None:
        self.source_rate = source_rate
        self._resampler = Resampler(source_rate, CARRIER_RATE)
        self._pending = b""
        self._source_samples = 0
        self._sent_samples = 0
        """8 kHz samples of real audio sent in frames (padding excluded)."""

    @property
    def source_ms(self) -> float:
        return self._source_samples * 1000.0 / self.source_rate

    @property
    def sent_ms(self) -> float:
        return min(self.source_ms, self._sent_samples * 1000.0 / CARRIER_RATE)

    @property
    def holding(self) -> bool:
        """Audio taken in and not yet sent in a frame."""
        return bool(self._pending) or self._sent_samples * self.source_rate < (
            self._source_samples * CARRIER_RATE
        )

    def encode(self, pcm16: bytes) -> list[bytes]:
        """The whole frames the audio completes (160 bytes each)."""
        samples = np.frombuffer(pcm16[: len(pcm16) - len(pcm16) % 2], dtype="<i2")
        self._source_samples += samples.size
        return self._frames(pcm16_to_ulaw(self._resampler.convert(samples)), pad=False)

    def flush(self) -> list[bytes]:
        """Every frame still held, the last one padded with silence."""
        return self._frames(pcm16_to_ulaw(self._resampler.flush()), pad=True)

    def _frames(self, ulaw: bytes, *, pad: bool) -> list[bytes]:
        data = self._pending + ulaw
        whole = len(data) - len(data) % FRAME_BYTES
        frames = [data[i : i + FRAME_BYTES] for i in range(0, whole, FRAME_BYTES)]
        self._pending = data[whole:]
        self._sent_samples += whole
        if pad and self._pending:
            self._sent_samples += len(self._pending)
            frames.append(self._pending.ljust(FRAME_BYTES, ULAW_SILENCE))
            self._pending = b""
        if pad:  # the stream ended: everything taken in has left
            whole_stream = -(-self._source_samples * CARRIER_RATE // self.source_rate)
            self._sent_samples = max(self._sent_samples, whole_stream)
        return frames
