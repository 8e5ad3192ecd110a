"""The words of each language the project speaks, as data: one lexicon per language.

Pure data and pure functions, shared by every plane that reads a caller's words (the floor of
the layers in ``.importlinter``). A :class:`Lexicon` holds, for one language, the words after
which a sentence cannot be over (:attr:`Lexicon.open_words`, by kind: a filler, an article, a
preposition or postposition, a conjunction, a relative word, a possessive, an auxiliary), the
words a number is spelled out with (:attr:`Lexicon.digit_words`), and the words of a greeting.
The turn policy reads it (docs/protocol.md "Turn-taking": a transcript that ends on an open word
holds the turn whatever the audio judge says).

It is also the one home of the words dates, times and quantities are said with:
:attr:`Lexicon.calendar` (months, weekdays, days counted from today), :attr:`Lexicon.numbers`
(cardinals, ordinals, scales, "double"), :attr:`Lexicon.clock` (named times, parts of day,
a.m./p.m., "o'clock", "half", delay units). Every reader takes them from here: critical values
(``speech/values.py``), canonical arguments (``policy/canonical.py``), the CPU dialogue's slots
(``contracts/values/``), a server question's spoken answers
(``orchestrator/spoken_answers.py``) and the call-back rule (``followups/lexicon.py``, all three
languages merged). English has every set; Hindi and Telugu have weekdays, relative days, numbers
to thirty and the clock words callers use, and say in their modules which sets they lack.

Languages: English (``en``), Hindi (``hi``) and Telugu (``te``), each in the spellings callers
and recognisers produce (Hindi and Telugu in their native scripts and romanised).
"""

from __future__ import annotations

from collections.abc import Sequence

from vocero.contracts.lexicon import en, hi, te
from vocero.contracts.lexicon.base import (
    CalendarWords,
    ClockWords,
    Lexicon,
    NumberWords,
    OpenKind,
    word_set,
    words_of,
)

LEXICONS: dict[str, Lexicon] = {lx.language: lx for lx in (en.LEXICON, hi.LEXICON, te.LEXICON)}
"""Every supported language's lexicon, by its ISO 639-1 code."""


def for_locale(locale: str) -> Lexicon | None:
    """The lexicon of a BCP 47 locale's language (``en-GB`` → English), or ``None`` when the
    language is not one the project speaks."""
    return LEXICONS.get(locale.split("-")[0].split("_")[0].lower())


def open_ending(words: Sequence[str], lexicon: Lexicon) -> OpenKind | None:
    """The kind of open word the words end on (the sentence cannot be over there), or ``None``."""
    return lexicon.open_words.get(words[-1]) if words else None


__all__ = [
    "LEXICONS",
    "CalendarWords",
    "ClockWords",
    "Lexicon",
    "NumberWords",
    "OpenKind",
    "for_locale",
    "open_ending",
    "word_set",
    "words_of",
]
