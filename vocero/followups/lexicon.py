"""The words of the call-back rule (docs/followups.md), in English, Hindi and Telugu.

The weekday, number and clock words come from the shared lexicon
(:mod:`vocero.contracts.lexicon`), all three languages merged into one table each (month days
are read by the one reader of dates, :mod:`vocero.contracts.values`); what is the
call-back rule's own (answers that confirm or negate, the words that rule a time out, "next week"
phrases) is written here. Each table maps a word as it is written (lower case; Hindi and Telugu in
their native script and romanised, with the spellings callers and speech recognisers commonly
produce) to the concept it names. Two texts *share a time word* when they name a common concept:
"kal shaam" and "tomorrow evening" share both ``tomorrow`` and ``evening``. Native-script entries
also match as word stems (Telugu and Hindi attach case endings: "సాయంత్రానికి", "शाम को"); romanised
ones match whole words only, because short romanised words collide with English ("do", "kal").
"""

from __future__ import annotations

from typing import Final

from vocero.contracts.lexicon import LEXICONS
from vocero.contracts.lexicon.base import PART_CLOCK as BASE_PART_CLOCK
from vocero.contracts.lexicon.base import WEEKDAY_CODES, DurationUnit
from vocero.contracts.lexicon.en import LEXICON as EN

_ALL: Final = tuple(LEXICONS.values())
_DAY_NAMES: Final = {0: "today", 1: "tomorrow", 2: "day_after"}

DAYS: Final[dict[str, str]] = {
    word: _DAY_NAMES[ahead]
    for lexicon in _ALL
    for word, ahead in lexicon.calendar.relative_days.items()
    if ahead in _DAY_NAMES
}
"""Relative days (``tonight`` is today, at night); a call-back is never asked for yesterday."""

WEEKDAY_ORDER: Final = WEEKDAY_CODES
WEEKDAYS: Final[dict[str, str]] = {
    word: WEEKDAY_ORDER[index]
    for lexicon in _ALL
    for table in (lexicon.calendar.weekdays, lexicon.calendar.weekday_abbreviations)
    for word, index in table.items()
    if word not in lexicon.calendar.capitalised_only
}
"""Weekday names and the short forms that are no other word ("tues", "thurs")."""

PARTS: Final[dict[str, str]] = {
    word: part for lexicon in _ALL for word, part in lexicon.clock.parts_of_day.items()
}
"""Parts of the day; each has a default clock time (:data:`PART_CLOCK`)."""

PART_CLOCK: Final = BASE_PART_CLOCK

OCLOCK: Final = frozenset(word for lexicon in _ALL for word in lexicon.clock.oclock)
"""Words after a number that make it a clock hour ("4 baje", "నాలుగు గంటలకు")."""

MERIDIEM: Final[dict[str, str]] = {
    word: meridiem for lexicon in _ALL for word, meridiem in lexicon.clock.meridiem.items()
}

AT: Final = frozenset({"at", "around", "by", "about", "after", "before", "till", "until",
                       "say", "approximately"})
"""Words before a number that make it a clock hour ("at 4", "around four")."""

HALF: Final = frozenset(word for lexicon in _ALL for word in lexicon.clock.half_past)
"""Hindi "half past" before an hour ("saade chaar" = 4:30)."""

HALVES: Final = frozenset(
    word for lexicon in _ALL for word, minutes in lexicon.clock.fractions.items() if minutes == 30
)
""""half" before an hour unit: "in half an hour", "aadhe ghante mein", "ara gantalo"."""

HALF_HOUR: Final = frozenset(word for lexicon in _ALL for word in lexicon.clock.half_hour)
"""One word for "in half an hour" (Telugu)."""


def _units(unit: DurationUnit) -> frozenset[str]:
    return frozenset(
        word for lexicon in _ALL for word, u in lexicon.clock.durations.items() if u == unit
    )


DAY_UNITS: Final = _units("day")
MINUTE_UNITS: Final = _units("minute")
HOUR_UNITS: Final = _units("hour")
"""Units of "in 10 minutes" / "ek ghante mein" / "oka gantalo"."""

RELATIVE_AFTER: Final = frozenset({"mein", "me", "mai", "में", "baad", "बाद", "lo", "లో",
                                  "tarvata", "taruvata", "తర్వాత"})
"""Hindi/Telugu postpositions of a duration ("10 minute mein", "padi nimishalu taruvata")."""

NUMBERS: Final[dict[str, int]] = {
    **{word: 1 for lexicon in _ALL for word in lexicon.numbers.articles},
    **{word: value for lexicon in _ALL for word, value in lexicon.numbers.cardinals.items()},
}
"""Number words. Hindi and Telugu ones (and ``a``/``an``) count only next to a clock or
duration word, never on their own."""

ENGLISH_NUMBER_WORDS: Final = frozenset(
    word for word, value in EN.numbers.cardinals.items() if 1 <= value <= 12
)

NEXT_WEEK: Final = (("next", "week"), ("agle", "hafte"), ("agle", "week"), ("अगले", "हफ्ते"),
                    ("vachhe", "vaaram"), ("vache", "varam"), ("వచ్చే", "వారం"))
NEXT: Final = frozenset(first for first, _ in NEXT_WEEK)
""""next" before a weekday ("next Friday", "agle shukravar", "vachhe shukravaram"): the weekday of
the week after when this week's is still ahead, as everywhere in the product (ADR-0040)."""

CONFIRMING: Final = frozenset({
    "yes", "yeah", "yep", "yup", "ya", "sure", "ok", "okay", "fine", "perfect", "great",
    "correct", "right", "absolutely", "definitely", "please", "alright", "works", "good",
    # Hindi
    "haan", "han", "haa", "ha", "ji", "jee", "theek", "thik", "bilkul", "sahi", "हाँ", "हां",
    "जी", "ठीक", "बिल्कुल", "सही",
    # Telugu
    "avunu", "avnu", "sare", "saree", "alage", "alaage", "సరే", "అవును", "అలాగే",
})
"""Words of a confirming answer ("yes", "haan ji", "sare")."""

NEGATING: Final = frozenset({
    "no", "nope", "not", "don't", "dont", "never", "wait", "nah", "cancel", "wrong",
    "nahi", "nahin", "nai", "mat", "नहीं", "नही", "मत",
    "kaadu", "kadu", "vaddu", "ledu", "కాదు", "వద్దు", "లేదు",
})
"""Any of these turns an answer into something other than a plain yes."""

NO_FOLLOWUP: Final = (
    "no follow-up", "no follow up", "no followup", "no call back", "no callback",
    "no call-back", "not needed", "no need", "none needed", "nothing needed",
    "zaroorat nahi", "zarurat nahi", "ज़रूरत नहीं", "जरूरत नहीं", "avasaram ledu",
    "అవసరం లేదు",
)
"""Phrases of "no follow-up needed": nothing is recorded."""

NEGATE_NEXT: Final = frozenset({"not", "no", "never", "don't", "dont", "except"})
"""A time word right after these (or after these and "at"/"on") is ruled out: "not tomorrow",
"not at 4", "never on Sundays"."""
NEGATE_PREVIOUS: Final = frozenset({
    "doesn't", "isn't", "won't", "nahi", "nahin", "नहीं", "नही", "mat", "मत", "kaadu", "kadu",
    "ledu", "vaddu", "కాదు", "లేదు", "వద్దు",
})
"""A time word right before these is ruled out: "tomorrow doesn't work", "kal nahi",
"4 baje nahi", "repu kaadu"."""
LEADS: Final = frozenset({"at", "on", "in", "this", "next", "by", "around"})
