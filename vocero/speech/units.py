"""Spoken units: the model's streamed text cut into pieces a caller can follow and a TTS can
start on early. A unit ends at a sentence boundary, or at a clause boundary once it is long
enough, so the first audio starts after the first clause rather than the whole answer."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*\s+")
_CLAUSE_END = re.compile(r"[,;:]\s+")


@dataclass(frozen=True, slots=True)
class SpokenUnit:
    index: int
    text: str

    @property
    def unit_id(self) -> str:
        return f"u{self.index}"


class UnitChunker:
    """Feed streamed text with :meth:`feed`; collect finished units; :meth:`flush` at the end.

    ``word_budget`` caps what one answer may say: once reached, the unit in progress is the last.
    """

    def __init__(self, *, word_budget: int = 60, clause_min_words: int = 8) -> None:
        self._buffer = ""
        self._index = 0
        self._words = 0
        self._budget = word_budget
        self._clause_min = clause_min_words
        self.exhausted = False

    def feed(self, text: str) -> list[SpokenUnit]:
        if self.exhausted:
            return []
        self._buffer += text
        units: list[SpokenUnit] = []
        while (cut := self._next_cut()) is not None:
            units.append(self._emit(self._buffer[:cut]))
            self._buffer = self._buffer[cut:]
            if self.exhausted:
                self._buffer = ""
                break
        return units

    def flush(self) -> list[SpokenUnit]:
        if self.exhausted or not self._buffer.strip():
            self._buffer = ""
            return []
        unit = self._emit(self._buffer)
        self._buffer = ""
        return [unit]

    def _next_cut(self) -> int | None:
        sentence = _SENTENCE_END.search(self._buffer)
        if sentence is not None:
            return sentence.end()
        for clause in _CLAUSE_END.finditer(self._buffer):
            if len(self._buffer[: clause.end()].split()) >= self._clause_min:
                return clause.end()
        return None

    def _emit(self, text: str) -> SpokenUnit:
        self._words += len(text.split())
        if self._words >= self._budget:
            self.exhausted = True
        unit = SpokenUnit(index=self._index, text=text.strip())
        self._index += 1
        return unit
