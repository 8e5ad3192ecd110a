"""What a language's lexicon holds (:mod:`vocero.contracts.lexicon`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

OpenKind = Literal[
    "filler",
    "article",
    "preposition",
    "conjunction",
    "relative",
    "possessive",
    "auxiliary",
]
"""Why a sentence cannot end on a word: what the word still waits for."""

_LETTER = r"[^\W_]|[\u0900-\u097f\u0c00-\u0c7f]"
_WORD = re.compile(rf"(?:{_LETTER})+(?:['\u2019](?:{_LETTER})+)*")
"""A word: letters and digits of any script, with the vowel signs and viramas of Devanagari and
Telugu (combining marks, which ``\\w`` leaves out), and inner apostrophes ("i'd")."""


@dataclass(frozen=True, slots=True)
class Lexicon:
    """One language's words (lower case; every spelling callers and recognisers produce)."""

    language: str
    """ISO 639-1 code: ``en``, ``hi``, ``te``."""
    open_words: Mapping[str, OpenKind]
    """Words a sentence cannot end on: the caller is not done after them."""
    digit_words: frozenset[str] = field(default_factory=frozenset)
    """Words a number is spelled out with, one digit at a time ("four seven two")."""
    greetings: frozenset[str] = field(default_factory=frozenset)
    """Words of a greeting: a caller who only greeted is about to say why they called."""

    def words_of(self, kind: OpenKind) -> frozenset[str]:
        """The open words of one kind."""
        return frozenset(word for word, k in self.open_words.items() if k == kind)


def words_of(text: str) -> list[str]:
    """The words of a text, lower case, curly apostrophes made straight."""
    return [w.replace("\u2019", "'") for w in _WORD.findall(text.lower()) if w]


def open_table(**kinds: str) -> dict[str, OpenKind]:
    """``kind="word word ..."`` → ``{word: kind}``; a word listed under two kinds is an error."""
    table: dict[str, OpenKind] = {}
    for kind, words in kinds.items():
        for word in words.split():
            if word in table:
                raise ValueError(f"lexicon: {word!r} is both {table[word]} and {kind}")
            table[word] = kind  # type: ignore[assignment]
    return table


def word_set(words: str) -> frozenset[str]:
    """``"a b c"`` → ``{"a", "b", "c"}``: a lexicon's word lists are written as lines of text."""
    return frozenset(words.split())
