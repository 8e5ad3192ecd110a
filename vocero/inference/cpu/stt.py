"""Speech to text: a runner shell (admission, health, partial policy) around an engine.

The shell is shared by every runner set; an engine is one blocking model. Here the engine is
faster-whisper on Whisper tiny.en (CTranslate2, int8). Finals queue behind each other with a
deadline; partials never queue: while the model is busy a partial is dropped with
``CapacityError`` (stale partials may be coalesced, seed 004 §13.2), so a final never waits
for a partial that has not started. One that has started delays it by a whole recognition, so
where recognition is as slow as Whisper's on a CPU the runner set asks for no partials of growing
utterances (``partial_interval_ms=0``).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import structlog

from vocero.contracts.errors import ErrorCode
from vocero.contracts.ports import Transcription, Word
from vocero.inference.cpu import threads
from vocero.inference.cpu.audio import Float32, pcm16_to_float, resample
from vocero.inference.cpu.settings import QueueSettings
from vocero.inference.cpu.shell import RunnerShell

log = structlog.get_logger(__name__)
SAMPLE_RATE = 16_000


class SttEngine(Protocol):
    """One blocking recogniser of 16 kHz float32 mono audio."""

    name: str

    def load(self) -> None: ...

    def recognise(self, audio: Float32, *, words: bool) -> Transcription: ...


class SpeechToText(RunnerShell):
    """The :class:`~vocero.contracts.ports.Stt` port over any :class:`SttEngine`."""

    def __init__(
        self, engine: SttEngine, queue: QueueSettings, *, partial_interval_ms: int = 600
    ) -> None:
        super().__init__(engine.name, queue)
        self.partial_interval_ms = partial_interval_ms
        self._engine = engine

    async def warm_up(self) -> None:
        # The path a final takes, words included (their alignment is a second model pass whose
        # first run is slow), on audio long enough to decode a few tokens.
        await self._warm(
            ErrorCode.STT_UNAVAILABLE,
            lambda: threads.run(self._engine.load),
            lambda: threads.run(lambda: self._engine.recognise(_murmur(2.0), words=True)),
        )

    async def transcribe(
        self, pcm16: bytes, *, sample_rate: int, locale: str, utterance_id: str = ""
    ) -> Transcription:
        audio = _prepare(pcm16, sample_rate)
        async with self._admission.slot(self._queue.deadline_s):
            result = await threads.run(lambda: self._engine.recognise(audio, words=True))
        return Transcription(text=result.text, final=True, words=result.words)

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


class WhisperEngine:
    """faster-whisper on a local CTranslate2 Whisper model directory."""

    def __init__(self, model_dir: str, *, threads: int, language: str = "en") -> None:
        self.name = "stt.whisper"
        self._model_dir = model_dir
        self._threads = threads
        self._language = language
        self._model: Any = None

    def load(self) -> None:
        self._model = _whisper_model(self._model_dir, self._threads)

    def recognise(self, audio: Float32, *, words: bool) -> Transcription:
        if self._model is None:
            self.load()
        segments, _info = self._model.transcribe(
            audio,
            language=self._language,
            beam_size=1,
            word_timestamps=words,
            condition_on_previous_text=False,
            vad_filter=False,
        )
        parts: list[str] = []
        found: list[Word] = []
        for segment in segments:
            parts.append(segment.text.strip())
            for w in segment.words or []:
                found.append(
                    Word(
                        text=w.word.strip(),
                        start_ms=round(w.start * 1000),
                        end_ms=round(w.end * 1000),
                    )
                )
        return Transcription(text=" ".join(p for p in parts if p), words=found)


def _whisper_model(model_dir: str, cpu_threads: int) -> Any:
    def load() -> Any:
        from faster_whisper import WhisperModel

        log.info("stt.model_loading", model=model_dir)
        return WhisperModel(model_dir, device="cpu", compute_type="int8", cpu_threads=cpu_threads)

    return threads.load_once(("whisper", model_dir, cpu_threads), load)
