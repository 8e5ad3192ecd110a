"""Text to speech: a runner shell (admission, health, chunking, cancellation) around an engine.

The shell splits a spoken unit into sentences, has the engine render one sentence at a time on a
worker thread and streams the audio in chunks of about 100 ms, so a cancelled generation stops
within one chunk and never starts its next sentence. Between the chunks it says where each
sentence ends in the audio (:class:`~vocero.contracts.ports.SpokenThrough`), so what the caller
heard of a unit still being synthesized is never overstated: an engine that renders a sentence
whole (Piper) gives that point before the sentence's first chunk, a streaming one (Qwen3-TTS)
after its last. The voice always comes from the caller's :class:`VoiceRef`, which the
orchestrator resolved from the voice vault. The engines: Piper in :mod:`vocero.inference.cpu.tts`,
Qwen3-TTS in :mod:`vocero.inference.gb10.tts`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing
from typing import Protocol

import structlog

from vocero.contracts.domain import VoiceRef
from vocero.contracts.errors import ErrorCode
from vocero.contracts.ports import SpokenThrough
from vocero.inference import threads
from vocero.inference.toolkit.audio import chunks
from vocero.inference.toolkit.settings import QueueSettings
from vocero.inference.toolkit.shell import RunnerShell

log = structlog.get_logger(__name__)
CHUNK_MS = 100
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_MAX_SENTENCE = 220


class TtsEngine(Protocol):
    """One blocking synthesiser; ``render`` yields PCM16 mono at ``sample_rate``."""

    name: str
    sample_rate: int

    @property
    def renders_whole_sentences(self) -> bool:
        """Whether ``render`` yields a sentence's audio only once all of it exists (Piper), so
        its end is known before its first chunk is sent (an engine without it: ``False``)."""
        ...

    def load(self) -> None: ...

    def render(self, sentence: str, voice: VoiceRef) -> Iterator[bytes]: ...

    def forget_voice(self, voice_profile_id: str) -> None: ...


class TextToSpeech(RunnerShell):
    """The :class:`~vocero.contracts.ports.Tts` port over any :class:`TtsEngine`."""

    def __init__(self, engine: TtsEngine, queue: QueueSettings) -> None:
        super().__init__(engine.name, queue)
        self.sample_rate = engine.sample_rate
        self._engine = engine

    async def warm_up(self) -> None:
        await self._warm(
            ErrorCode.TTS_UNAVAILABLE,
            lambda: threads.run(self._engine.load),
            lambda: threads.run(lambda: list(self._engine.render("Ready.", _WARM_UP_VOICE))),
        )

    def forget_voice(self, voice_profile_id: str) -> None:
        """Drop every cached rendering state of a revoked voice."""
        self._engine.forget_voice(voice_profile_id)

    def speaks(self, voice: VoiceRef) -> bool:
        """Whether the engine speaks ``voice`` as approved (an engine that does not say: all)."""
        check = getattr(self._engine, "speaks", None)
        return bool(check(voice)) if check is not None else True

    async def synthesize(self, text: str, voice: VoiceRef) -> AsyncGenerator[bytes, None]:
        async with aclosing(self.synthesize_aligned(text, voice)) as pieces:  # frees the slot
            async for piece in pieces:
                if isinstance(piece, bytes):
                    yield piece

    async def synthesize_aligned(
        self, text: str, voice: VoiceRef
    ) -> AsyncGenerator[bytes | SpokenThrough, None]:
        async with self._admission.slot(self._queue.deadline_s):
            spoken_ms = 0.0
            whole = bool(getattr(self._engine, "renders_whole_sentences", False))
            for sentence, end in sentence_spans(text, lead=whole):
                through = end / len(text)
                rendered = threads.iterate(lambda s=sentence: self._engine.render(s, voice))  # type: ignore[misc]
                if whole:
                    pcm = b"".join([pcm async for pcm in rendered])
                    yield SpokenThrough(audio_ms=spoken_ms + self._ms(pcm), fraction=through)
                    for piece in chunks(pcm, self.sample_rate, CHUNK_MS):
                        yield piece
                    spoken_ms += self._ms(pcm)
                    continue
                async for pcm in rendered:
                    for piece in chunks(pcm, self.sample_rate, CHUNK_MS):
                        yield piece
                    spoken_ms += self._ms(pcm)
                yield SpokenThrough(audio_ms=spoken_ms, fraction=through)

    def _ms(self, pcm16: bytes) -> float:
        return len(pcm16) / 2 / self.sample_rate * 1000.0


_WARM_UP_VOICE = VoiceRef(voice_profile_id="builtin", voice_version="default")


def sentence_spans(text: str, *, lead: bool = False) -> list[tuple[str, int]]:
    """:func:`sentences` of ``text``, each with the offset in ``text`` where it ends; with
    ``lead``, a long first sentence is said as a short lead phrase and the rest (:func:`lead`)."""
    spans: list[tuple[str, int]] = []
    cursor = 0
    pieces = sentences(text)
    if lead and pieces:
        pieces = [*lead_phrase(pieces[0]), *pieces[1:]]
    for sentence in pieces:
        start = text.find(sentence, cursor)
        cursor = (start if start >= 0 else cursor) + len(sentence)
        spans.append((sentence, min(cursor, len(text))))
    return spans


LEAD_WORDS = 7
"""A first sentence longer than this is split for an engine that renders sentences whole: its
first audio waits for the whole sentence (Piper: ~25 ms a word on two cores), so a short lead
phrase comes first and the rest is rendered while it plays."""
_CLAUSE = re.compile(r"[,;:]\s+")
_CONNECTIVES = frozenset(
    ["after", "before", "within", "for", "from", "on", "unless", "until", "and", "or", "but",
     "so", "because", "if", "when", "to", "with", "at", "by", "of"]
)  # fmt: skip


def lead_phrase(sentence: str) -> list[str]:
    """A long sentence as a lead phrase of three to eight words and its rest, cut where a
    speaker pauses: after a comma, else before a connective ("Standard delivery takes 3 to 5
    business days | after your order ships."); a sentence with no such place is kept whole."""
    words = sentence.split()
    if len(words) <= LEAD_WORDS:
        return [sentence]
    for match in _CLAUSE.finditer(sentence):
        count = len(sentence[: match.start()].split())
        if 3 <= count <= 8:
            return [sentence[: match.start() + 1].strip(), sentence[match.end() :].strip()]
    for index in range(min(8, len(words) - 3), 3, -1):
        if words[index].lower() in _CONNECTIVES:
            return [" ".join(words[:index]), " ".join(words[index:])]
    return [sentence]


def sentences(text: str) -> list[str]:
    """Speakable sentences of ``text``; long ones split at commas."""
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text.strip()):
        while len(sentence) > _MAX_SENTENCE:
            cut = sentence.rfind(",", 0, _MAX_SENTENCE)
            cut = cut if cut > 0 else sentence.rfind(" ", 0, _MAX_SENTENCE)
            cut = cut if cut > 0 else _MAX_SENTENCE
            out.append(sentence[: cut + 1].strip())
            sentence = sentence[cut + 1 :]
        out.append(sentence.strip())
    return [s for s in out if any(c.isalnum() for c in s)]
