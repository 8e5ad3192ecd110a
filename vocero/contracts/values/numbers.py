"""Spoken numbers as digits: the number words of the English lexicon
(:mod:`vocero.contracts.lexicon`) and how a run of them is read ("one two three" is 123,
"twenty one" 21, "one thousand and one" 1001, "double five" 55, "fourteenth" the 14th)."""

from __future__ import annotations

import re

from vocero.contracts.lexicon.base import alternation
from vocero.contracts.lexicon.en import LEXICON

_CARDINALS = LEXICON.numbers.cardinals
DIGIT_WORDS = {w: v for w, v in _CARDINALS.items() if v < 10}
TEEN_WORDS = {w: v for w, v in _CARDINALS.items() if 10 <= v < 20}
TENS_WORDS = {w: v for w, v in _CARDINALS.items() if v >= 20}
ORDINAL_WORDS = LEXICON.numbers.ordinals
NUMBER_VALUES = {**DIGIT_WORDS, **TEEN_WORDS, **TENS_WORDS}
SMALL_NUMBERS = {
    **{w: v for w, v in _CARDINALS.items() if 1 <= v <= 12},
    **dict.fromkeys(LEXICON.numbers.articles, 1),
}
"""A count of days ("in three days", "in a day")."""
_SCALES = LEXICON.numbers.scales
_REPEATS = LEXICON.numbers.repeats
_OH = "oh"
"""Zero said as a letter, inside a number only ("one oh one")."""

_RUN_START = alternation([*NUMBER_VALUES, *ORDINAL_WORDS, *_REPEATS, _OH])
_RUN_WORD = alternation([*NUMBER_VALUES, *ORDINAL_WORDS, *_SCALES, *_REPEATS, _OH, "and"])
NUMBER_RUN = re.compile(rf"\b(?:{_RUN_START})(?:[\s-]+(?:{_RUN_WORD}))*\b", re.IGNORECASE)
_NOT_PLURAL_NOUNS = {"thanks", "is", "was", "its", "yes", "has", "does", "as", "us", "this"}
"""Words ending in "s" that are not a plural noun counted by the number before them."""


def word_value(words: str) -> int:
    """A number of at most two words or digits ("twenty five", "oh five", "11")."""
    parts = [p for p in re.split(r"[\s-]+", words.lower()) if p != _OH]
    if len(parts) == 1 and parts[0].isdigit():
        return int(parts[0])
    return sum(NUMBER_VALUES.get(p, 0) for p in parts)


def small_number(word: str) -> int | None:
    """Digits, or a number word up to twelve ("three", "a")."""
    if word.isdigit():
        return int(word)
    return SMALL_NUMBERS.get(word.lower())


def number_run(match: re.Match[str]) -> str:
    """A run of number words as digits: digit by digit ("one two three" -> "123", "one oh one" ->
    "101", "double five" -> "55"), in groups ("twenty one" -> "21", "five fifty" -> "550"), or
    with scales ("one thousand and one" -> "1001"); an ordinal as a day ("fourteenth" -> "14th").

    A lone "one" stays a word ("the one on Friday"), and so does a lone number before a plural
    noun ("two orders"): neither is an identifier."""
    said = match.group(0)
    words = [w.lower() for w in re.split(r"[\s-]+", said) if w]
    if words == ["one"] or not any(w in NUMBER_VALUES or w in ORDINAL_WORDS for w in words):
        return said
    plural = re.match(r"\s+([a-z]{2,}s)\b", match.string[match.end() :], re.IGNORECASE)
    if len(words) == 1 and plural and plural.group(1).lower() not in _NOT_PLURAL_NOUNS:
        return said
    return _spoken_digits(words)


def _spoken_digits(words: list[str]) -> str:
    """Number words as digits; words that end a number ("and" not after a scale) stay words."""
    words = _repeats_expanded(words)
    words = ["zero" if w == _OH and len(words) > 1 else w for w in words]
    out: list[str] = []
    group = _NumberGroup()
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else ""
        if word == "and" and group.room >= 100 and following in NUMBER_VALUES:
            continue
        if not group.add(word):
            out.append(group.flush())
            if not group.add(word):
                out.append(f" {word} ")
    out.append(group.flush())
    return re.sub(r"\s+", " ", "".join(out)).strip()


def _repeats_expanded(words: list[str]) -> list[str]:
    """ "double five" -> "five five"."""
    out: list[str] = []
    for word in words:
        if out and out[-1] in _REPEATS and word in DIGIT_WORDS:
            out[-1:] = [word] * _REPEATS[out[-1]]
        else:
            out.append(word)
    return out


class _NumberGroup:
    """One spoken number being read ("twenty" then "one"; "two" "hundred" "and" "four").

    ``room`` is how much a following word may still add: 10 after "twenty", 100 after "hundred",
    1000 after "thousand", nothing after a unit, a teen or a zero. A word that does not fit
    starts the next group, which is how digit-by-digit readings ("one two three") concatenate."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.value = self.thousands = self.room = 0
        self.started = self.hundred = self.ordinal = False

    def add(self, word: str) -> bool:
        if word in _SCALES:
            return self._scale(_SCALES[word])
        value = NUMBER_VALUES.get(word, ORDINAL_WORDS.get(word))
        if value is None or self.ordinal:
            return False
        if self.started and (value == 0 or value >= self.room):
            return False
        self.value += value
        self.room = 10 if word in TENS_WORDS else 0
        self.started, self.ordinal = True, word in ORDINAL_WORDS
        return True

    def _scale(self, scale: int) -> bool:
        if scale == 100 and 0 < self.value < 100 and not self.hundred:
            self.value, self.room, self.hundred = self.value * 100, 100, True
            return True
        if scale == 1000 and 0 < self.value < 1000 and not self.thousands:
            self.thousands, self.value, self.room = self.value * 1000, 0, 1000
            self.hundred = False
            return True
        return False

    def flush(self) -> str:
        """The number read so far as digits ("" when none), and a fresh group."""
        text = f"{self.thousands + self.value}th" if self.ordinal else ""
        if self.started and not self.ordinal:
            text = str(self.thousands + self.value)
        self.reset()
        return text

