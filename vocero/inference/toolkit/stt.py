"""Speech to text: a runner shell (admission, health, partial policy) around an engine.

The shell is shared by every runner set; an engine is one blocking model (Whisper in
:mod:`vocero.inference.cpu.stt`, Parakeet in :mod:`vocero.inference.gb10.stt`). Finals queue
behind each other with a deadline; partials never queue: while the model is busy a partial is
dropped with ``CapacityError`` (stale partials may be coalesced, docs/architecture.md "Admission
and back-pressure"), so a final never waits for a partial that has not started. One that has
started delays it by a whole recognition, so where recognition is as slow as Whisper's on a CPU
the runner set asks for no partials of growing utterances (``partial_interval_ms=0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from vocero.contracts.errors import ErrorCode
from vocero.contracts.ports import Transcription
from vocero.inference import threads
from vocero.inference.toolkit.audio import Float32, pcm16_to_float, resample
from vocero.inference.toolkit.settings import QueueSettings
from vocero.inference.toolkit.shell import RunnerShell

SAMPLE_RATE = 16_000
LONG_WARM_S = 12.0
"""Warm-up audio longer than any short window, so the standard path is warm too."""


class SttEngine(Protocol):
    """One blocking recogniser of 16 kHz float32 mono audio."""

    name: str

    def load(self) -> None: ...

    def recognise(
        self, audio: Float32, *, words: bool, vocabulary: tuple[str, ...] = ()
    ) -> Transcription: ...


class SpeechToText(RunnerShell):
    """The :class:`~vocero.contracts.ports.Stt` port over any :class:`SttEngine`."""

    def __init__(
        self,
        engine: SttEngine,
        queue: QueueSettings,
        *,
        partial_interval_ms: int = 600,
        final_words: bool = True,
    ) -> None:
        super().__init__(engine.name, queue)
        self.partial_interval_ms = partial_interval_ms
        self._engine = engine
        self._final_words = final_words
        """Ask the engine for word timings in finals. Nothing in Vocero reads them yet; an
        engine that has them for free (Parakeet) keeps them, Whisper does not: on it they
        cost the full 30 s window and an alignment pass, most of a final's time on a CPU."""

    async def warm_up(self) -> None:
        # Every path a final may take (a caller's turn, audio too long for a short window,
        # word timings, whose alignment's first run is slow), on audio long enough to decode.
        def warm() -> None:
            self._engine.recognise(_murmur(2.0), words=self._final_words)
            self._engine.recognise(_murmur(LONG_WARM_S), words=self._final_words)

        await self._warm(
            ErrorCode.STT_UNAVAILABLE,
            lambda: threads.run(self._engine.load),
            lambda: threads.run(warm),
        )

    async def transcribe(
        self, pcm16: bytes, *, sample_rate: int, locale: str, utterance_id: str = "",
        vocabulary: Sequence[str] = (),
    ) -> Transcription:
        audio = _prepare(pcm16, sample_rate)
        hint = tuple(vocabulary)
        async with self._admission.slot(self._queue.deadline_s):
            words = self._final_words
            result = await threads.run(
                lambda: self._engine.recognise(audio, words=words, vocabulary=hint)
            )
        return Transcription(
            text=result.text, final=True, words=result.words, confidence=result.confidence
        )

    async def partial(self, pcm16: bytes, *, sample_rate: int, locale: str) -> Transcription:
        audio = _prepare(pcm16, sample_rate)
        async with self._admission.slot(wait=False):
            result = await threads.run(lambda: self._engine.recognise(audio, words=False))
        return Transcription(text=result.text, final=False)


def _prepare(pcm16: bytes, sample_rate: int) -> Float32:
    return resample(pcm16_to_float(pcm16), sample_rate, SAMPLE_RATE)


def _murmur(seconds: float) -> Float32:
    """Quiet noise, amplitude-modulated like syllables: something for the decoder to decode."""
    t = np.arange(int(SAMPLE_RATE * seconds), dtype=np.float32) / SAMPLE_RATE
    noise = np.random.default_rng(0).normal(0.0, 0.05, t.size).astype(np.float32)
    return noise * (0.5 + 0.5 * np.sin(2 * np.pi * 4.0 * t)).astype(np.float32)
