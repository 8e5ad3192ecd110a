"""What a language's lexicon holds (:mod:`vocero.contracts.lexicon`): open words, and the
calendar, number and clock words every plane reads dates, times and quantities with."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar

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

PartOfDay = Literal["morning", "noon", "afternoon", "evening", "night", "midnight"]
"""A part of the day a caller names instead of a clock time ("tomorrow evening")."""
Meridiem = Literal["am", "pm"]
DurationUnit = Literal["minute", "hour", "day"]
"""The unit of a delay said in words ("in ten minutes", "do ghante mein", "rendu rojullo")."""

PART_CLOCK: Mapping[str, tuple[int, int]] = {
    "morning": (9, 0), "noon": (12, 0), "afternoon": (15, 0), "evening": (18, 0),
    "night": (20, 0), "midnight": (0, 0),
}  # fmt: skip
"""The clock time (hour, minute) a part of day (a :data:`PartOfDay`) stands for when no clock
time was said."""

WEEKDAY_CODES: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
"""Language-free names of the weekdays, Monday (0) first: what a weekday word is read as."""

_K = TypeVar("_K")

_LETTER = r"[^\W_]|[\u0900-\u097f\u0c00-\u0c7f]"
_WORD = re.compile(rf"(?:{_LETTER})+(?:['\u2019](?:{_LETTER})+)*")
"""A word: letters and digits of any script, with the vowel signs and viramas of Devanagari and
Telugu (combining marks, which ``\\w`` leaves out), and inner apostrophes ("i'd")."""


@dataclass(frozen=True, slots=True)
class CalendarWords:
    """Words that name a day: months, weekdays, days counted from today."""

    months: Mapping[str, int] = field(default_factory=dict)
    """Month names, every spelling → 1 (January) … 12."""
    month_abbreviations: Mapping[str, int] = field(default_factory=dict)
    """Written short forms of month names ("sept") → 1 … 12."""
    weekdays: Mapping[str, int] = field(default_factory=dict)
    """Weekday names, every spelling → 0 (Monday) … 6 (Sunday)."""
    weekday_abbreviations: Mapping[str, int] = field(default_factory=dict)
    """Short forms of weekday names ("tues", "thurs", "sat") → 0 … 6."""
    capitalised_only: frozenset[str] = field(default_factory=frozenset)
    """Short forms that are also ordinary words or too short to trust ("sat", "sun", "wed"): a
    weekday only when written with a capital."""
    relative_days: Mapping[str, int] = field(default_factory=dict)
    """Days named from today → how many days ahead ("yesterday" -1, "tonight" 0, "parso" 2);
    a phrase key ("day after tomorrow") holds spaces."""


@dataclass(frozen=True, slots=True)
class NumberWords:
    """Words a quantity is said with."""

    cardinals: Mapping[str, int] = field(default_factory=dict)
    """Number words → value: units, teens and tens (compounds are read by the planes)."""
    ordinals: Mapping[str, int] = field(default_factory=dict)
    """Ordinal words → value ("fourteenth" 14); "twenty-first" is a tens word and an ordinal."""
    scales: Mapping[str, int] = field(default_factory=dict)
    """Words that multiply the number before them ("hundred", "thousand")."""
    repeats: Mapping[str, int] = field(default_factory=dict)
    """Words that repeat the digit after them ("double five" is 55)."""
    articles: frozenset[str] = field(default_factory=frozenset)
    """Articles that count as one before a unit ("in an hour", "in a day")."""


@dataclass(frozen=True, slots=True)
class ClockWords:
    """Words that name a time of day or a delay."""

    named_times: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Words that are a clock time by themselves ("noon" → (12, 0))."""
    parts_of_day: Mapping[str, PartOfDay] = field(default_factory=dict)
    """Words that name a part of the day ("tonight" is the night)."""
    meridiem: Mapping[str, Meridiem] = field(default_factory=dict)
    """Written a.m./p.m. forms, as tokens ("p.m."); spaced forms ("p m") are the planes' regexes."""
    oclock: frozenset[str] = field(default_factory=frozenset)
    """Words after a number that make it a clock hour ("four o'clock", "4 baje")."""
    fractions: Mapping[str, int] = field(default_factory=dict)
    """Fractions of an hour → minutes ("half" 30, "quarter" 15), as in "half past three"."""
    half_past: frozenset[str] = field(default_factory=frozenset)
    """One word for "half past" before an hour (Hindi "saade chaar" is 4:30)."""
    half_hour: frozenset[str] = field(default_factory=frozenset)
    """One word for "in half an hour"."""
    durations: Mapping[str, DurationUnit] = field(default_factory=dict)
    """Units of a delay ("minutes", "ghante", "rojullo")."""


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
    calendar: CalendarWords = field(default_factory=CalendarWords)
    """Month, weekday and relative-day words."""
    numbers: NumberWords = field(default_factory=NumberWords)
    """Cardinal, ordinal, scale and repeat words."""
    clock: ClockWords = field(default_factory=ClockWords)
    """Named times, parts of day, a.m./p.m., o'clock, fractions of an hour, delay units."""

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


def inverted(groups: Mapping[_K, str]) -> dict[str, _K]:
    """``{value: "word word ..."}`` → ``{word: value}``; a word listed under two values is an
    error (a lexicon's word lists are written as lines of text, grouped by what they mean)."""
    table: dict[str, _K] = {}
    for value, words in groups.items():
        for word in words.split():
            if word in table:
                raise ValueError(f"lexicon: {word!r} is both {table[word]!r} and {value!r}")
            table[word] = value
    return table


def ordered(words: str, *, start: int = 0) -> dict[str, int]:
    """``"monday tuesday ..."`` → ``{"monday": start, "tuesday": start + 1, ...}``."""
    return {word: index for index, word in enumerate(words.split(), start=start)}


def alternation(words: Iterable[str]) -> str:
    """Words as a regular-expression alternation, longest first (so "tues" wins over "tue");
    a space inside a phrase ("day after tomorrow") matches any run of spaces."""
    ordered_words = sorted(words, key=len, reverse=True)
    return "|".join(re.escape(word).replace(r"\ ", r"\s+") for word in ordered_words)
