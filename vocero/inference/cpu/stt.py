"""Speech to text on the CPU: faster-whisper on Whisper tiny.en (CTranslate2, int8), the engine
the runner shell (:class:`vocero.inference.toolkit.stt.SpeechToText`) drives in the CPU set.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec
import numpy as np
import structlog

from vocero.contracts.ports import Transcription, Word
from vocero.inference import threads
from vocero.inference.toolkit.audio import Float32
from vocero.inference.toolkit.stt import SAMPLE_RATE

log = structlog.get_logger(__name__)


SHORT_WINDOW_S = 10
"""Audio up to this long, less :data:`_SHORT_MARGIN_S`, is encoded in a window of this length
instead of Whisper's 30 s (see :class:`WhisperEngine`)."""
_SHORT_MARGIN_S = 1.0
_MAX_COMPRESSION = 2.4
"""Above this gzip ratio a transcript is a repetition loop (faster-whisper's own threshold)."""
_MIN_AVG_LOGPROB = -1.0
_NO_SPEECH = 0.6
PROMPT_TOKENS = 64
"""At most this many tokens of a session's vocabulary prime Whisper (its own limit is 223):
they are decoded with every recognition (the demo profile's 24 cost p50 +30-50 ms a
recognition for tiny.en on two cores, measured with other work running)."""
_PROMPTS_CACHED = 64
_FULL_TEMPERATURE = 0.0
"""The standard way decodes once, greedily. faster-whisper's default is to decode again at five
higher temperatures while the result fails its loop and log-probability checks: on speech
Whisper cannot make out (letters spelled in a voice it does not know) that is six passes and
1.5-3 s before the caller's turn can be answered, and the sampled text is no better."""
_TOKENS_PER_S = 8
_LOOP_MARGIN = 10
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")


class WhisperEngine:
    """faster-whisper on a local CTranslate2 Whisper model directory.

    Whisper's encoder always hears 30 s, padded, and on a CPU that encoder is most of the cost:
    ~300 ms on two cores for tiny.en, whatever the caller said. A caller's turn is a few
    seconds, so an utterance shorter than :data:`SHORT_WINDOW_S` (less a second of margin) is
    encoded in a 10 s window, as whisper.cpp's ``audio_ctx`` does, and decoded greedily without
    timestamps: ~80 ms. A result that looks wrong there (a repetition loop, a low average log
    probability) is recognised again the standard way, and so is longer audio and any request
    for word timings, which need the full window's alignment.
    """

    def __init__(
        self,
        model_dir: str,
        *,
        threads: int,
        language: str = "en",
        short_window_s: int = SHORT_WINDOW_S,
    ) -> None:
        self.name = "stt.whisper"
        self._model_dir = model_dir
        self._threads = threads
        self._language = language
        self._short_window_s = short_window_s
        self._model: Any = None
        self._short: _ShortWindow | None = None
        self._prompts: dict[tuple[str, ...], tuple[int, ...]] = {}
        self.windowed = 0
        """Recognitions answered in the short window."""
        self.fallbacks = 0
        """Short-window recognitions that were done again the standard way."""

    def load(self) -> None:
        self._model = _whisper_model(self._model_dir, self._threads)
        self._short = _ShortWindow(self._model, self._language, self._short_window_s)

    def recognise(
        self, audio: Float32, *, words: bool, vocabulary: tuple[str, ...] = ()
    ) -> Transcription:
        if self._model is None:
            self.load()
        short = self._short
        prompt = self.prompt(vocabulary)
        fits = audio.size <= (self._short_window_s - _SHORT_MARGIN_S) * SAMPLE_RATE
        if short is not None and not words and fits:
            heard = short.recognise(audio, prompt)
            if heard is None and prompt:
                # The hint can lead the decoder astray (the identifiers a session heard made
                # "What can you help me with today?" fail its checks): the plain short window
                # next, at a tenth of the standard window's cost.
                heard = short.recognise(audio)
            if heard is not None:
                self.windowed += 1
                return _once(heard)
            self.fallbacks += 1
        return _once(self._full(audio, words=words, prompt=prompt))

    def prompt(self, vocabulary: tuple[str, ...]) -> tuple[int, ...]:
        """The tokens that prime the decoder with ``vocabulary`` (most likely first), as the
        text said before the caller's words: as many terms as :data:`PROMPT_TOKENS` holds, the
        most likely nearest the caller's words. (Keeping only the words Whisper splits into
        several tokens would be cheaper, but " Saturdays" is one token and Whisper tiny.en
        still hears Piper's "Saturdays" as "setter days" without it.)"""
        if not vocabulary or self._short is None:
            return ()
        cached = self._prompts.get(vocabulary)
        if cached is not None:
            return cached
        tokenizer = self._short.tokenizer
        kept: list[str] = []
        used = 0
        for term in dict.fromkeys(t.strip() for t in vocabulary if t.strip()):
            tokens = len(tokenizer.encode(" " + term + ","))
            if used + tokens > PROMPT_TOKENS:
                break
            kept.append(term)
            used += tokens
        prompt = tuple(tokenizer.encode(" " + ", ".join(reversed(kept)) + ".")) if kept else ()
        if len(self._prompts) >= _PROMPTS_CACHED:
            self._prompts.clear()
        self._prompts[vocabulary] = prompt
        return prompt

    def _full(self, audio: Float32, *, words: bool, prompt: tuple[int, ...] = ()) -> Transcription:
        segments, _info = self._model.transcribe(
            audio,
            language=self._language,
            beam_size=1,
            word_timestamps=words,
            condition_on_previous_text=False,
            vad_filter=False,
            initial_prompt=list(prompt) or None,
            temperature=_FULL_TEMPERATURE,
        )
        parts: list[str] = []
        found: list[Word] = []
        logprobs: list[float] = []
        for segment in segments:
            parts.append(segment.text.strip())
            logprobs.append(segment.avg_logprob)
            for w in segment.words or []:
                found.append(
                    Word(
                        text=w.word.strip(),
                        start_ms=round(w.start * 1000),
                        end_ms=round(w.end * 1000),
                    )
                )
        confidence = math.exp(sum(logprobs) / len(logprobs)) if logprobs else None
        return Transcription(
            text=" ".join(p for p in parts if p), words=found, confidence=confidence
        )


class _ShortWindow:
    """Greedy, timestamp-free Whisper over a short encoder window (CTranslate2 directly)."""

    def __init__(self, model: Any, language: str, window_s: int) -> None:
        import ctranslate2
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_compression_ratio, get_suppressed_tokens

        self._storage = ctranslate2.StorageView.from_array
        self._compression = get_compression_ratio

        self._model = model
        self._frames = window_s * SAMPLE_RATE // model.feature_extractor.hop_length
        self.tokenizer = Tokenizer(
            model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=language
        )
        self._prompt = [*self.tokenizer.sot_sequence, self.tokenizer.no_timestamps]
        self._suppress = get_suppressed_tokens(self.tokenizer, (-1,))
        self._window_s = window_s

    def recognise(self, audio: Float32, primer: tuple[int, ...] = ()) -> Transcription | None:
        """The transcript, or ``None`` when it must be done again the standard way. ``primer``:
        tokens of text said before (Whisper's previous-text prompt)."""
        prompt = [self.tokenizer.sot_prev, *primer, *self._prompt] if primer else self._prompt
        # Speech runs at about 3 tokens a second (a spelled identifier at up to 6): more than
        # _TOKENS_PER_S is a repetition loop, cut short instead of running to the window's end.
        seconds = audio.size / SAMPLE_RATE
        budget = min(16 * self._window_s, _LOOP_MARGIN + math.ceil(_TOKENS_PER_S * seconds))
        max_length = min(self._model.max_length, len(prompt) + budget)
        features = self._model.feature_extractor(audio)
        window = np.zeros((1, features.shape[0], self._frames), dtype=np.float32)
        heard = min(self._frames, features.shape[-1])
        window[0, :, :heard] = features[:, :heard]
        encoded = self._model.model.encode(self._storage(window))
        result = self._model.model.generate(
            encoded,
            [prompt],
            beam_size=1,
            max_length=max_length,
            return_scores=True,
            return_no_speech_prob=True,
            suppress_blank=True,
            suppress_tokens=self._suppress,
        )[0]
        tokens = result.sequences_ids[0]
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
        confidence = math.exp(avg_logprob)
        if result.no_speech_prob > _NO_SPEECH and avg_logprob < _MIN_AVG_LOGPROB:
            # Whisper's rule for "no speech"; in a 10 s window it also drops a lone short word
            # ("Goodbye") that the standard 30 s window hears, so the standard way decides
            return None
        text = str(self.tokenizer.decode(tokens)).strip()
        if len(tokens) + len(prompt) >= max_length:
            return None  # ran to the end of the window's budget: a loop
        if self._compression(text) > _MAX_COMPRESSION or avg_logprob < _MIN_AVG_LOGPROB:
            return None
        return Transcription(text=text, confidence=confidence)


def _whisper_model(model_dir: str, cpu_threads: int) -> Any:
    def load() -> Any:
        from faster_whisper import WhisperModel

        log.info("stt.model_loading", model=model_dir)
        return WhisperModel(model_dir, device="cpu", compute_type="int8", cpu_threads=cpu_threads)

    return threads.load_once(("whisper", model_dir, cpu_threads), load)


def _once(heard: Transcription) -> Transcription:
    """The transcript with a sentence repeated right after itself said once: greedy Whisper
    decoding past the end of short speech loops on it ("I want to talk to a person. I want to
    talk to a person."), and nobody means a sentence twice in one breath."""
    sentences = [s.strip() for s in _SENTENCE.findall(heard.text) if s.strip()]
    kept = [s for i, s in enumerate(sentences)
            if i == 0 or _plain(s) != _plain(sentences[i - 1])]
    if len(kept) == len(sentences):
        return heard
    return msgspec.structs.replace(heard, text=" ".join(kept))


def _plain(sentence: str) -> str:
    return re.sub(r"[^\w]+", " ", sentence.lower()).strip()
