"""Parakeet TDT 0.6B through NeMo: one utterance per call, word timestamps from the TDT decoder.

The runner shell (:class:`~vocero.inference.toolkit.stt.SpeechToText`) is the CPU one: finals after
the VAD's end of turn, partials by re-transcribing the buffered audio when the model is free.
NeMo and torch are imported on load, so this module imports without the ``gb10`` extra.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import structlog

from vocero.contracts.ports import Transcription, Word
from vocero.inference import threads
from vocero.inference.toolkit.audio import Float32

log = structlog.get_logger(__name__)
SAMPLE_RATE = 16_000


class ParakeetEngine:
    """``ASRModel.restore_from(<local .nemo>)``; never a hub download."""

    def __init__(self, nemo_path: str, *, device: str = "cuda") -> None:
        self.name = "stt.parakeet"
        self._path = nemo_path
        self._device = device
        self._model: Any = None

    def load(self) -> None:
        self._model = threads.load_once(("parakeet", self._path, self._device), self._restore)

    def _restore(self) -> Any:
        from nemo.collections.asr.models import ASRModel

        log.info("stt.model_loading", model=self._path, device=self._device)
        model = ASRModel.restore_from(self._path, map_location=self._device)
        model.eval()
        return model

    def recognise(
        self, audio: Float32, *, words: bool, vocabulary: tuple[str, ...] = ()
    ) -> Transcription:
        """``vocabulary`` is not used: NeMo's TDT decoding here takes no prompt (word boosting
        would need a context graph built per session)."""
        if self._model is None:
            self.load()
        with _inference_mode():
            hypotheses = self._model.transcribe(
                [audio], batch_size=1, timestamps=words, verbose=False
            )
        if isinstance(hypotheses, tuple):  # older RNNT decoders return (best, all)
            hypotheses = hypotheses[0]
        best = hypotheses[0]
        text = best.text if hasattr(best, "text") else str(best)
        stamps = (getattr(best, "timestamp", None) or {}).get("word", []) if words else []
        # TDT durations may run a few frames past the audio; a word never ends after it.
        length_ms = round(len(audio) * 1000 / SAMPLE_RATE)
        found = [
            Word(
                text=str(s["word"]),
                start_ms=min(round(float(s["start"]) * 1000), length_ms),
                end_ms=min(round(float(s["end"]) * 1000), length_ms),
            )
            for s in stamps
        ]
        return Transcription(text=text.strip(), words=found)


def _inference_mode() -> AbstractContextManager[object]:
    try:
        import torch
    except ImportError:  # a scripted fake model in tests without the gb10 extra
        return nullcontext()
    context: AbstractContextManager[object] = torch.inference_mode()
    return context
