"""Clock times in an utterance: digits ("4:30 pm", "16:00", "at 4"), words ("half past three",
"two thirty pm", "at eleven"), named times ("noon") and parts of day ("tomorrow evening").

Times said in words are first rewritten in digits (:func:`spoken_times`), then the clock rules
read the digits. The named times and parts of day are the English lexicon's
(:mod:`vocero.contracts.lexicon`).
"""

from __future__ import annotations

import re

from vocero.contracts.lexicon.base import PART_CLOCK, alternation
from vocero.contracts.lexicon.en import LEXICON
from vocero.contracts.values.numbers import DIGIT_WORDS, TEEN_WORDS, TENS_WORDS, word_value

NAMED_TIMES = LEXICON.clock.named_times
PARTS_OF_DAY = {
    word: "evening" if part == "night" else part
    for word, part in LEXICON.clock.parts_of_day.items()
    if part in ("morning", "afternoon", "evening", "night")
}
"""The three parts of day a clock hour is read in ("tonight" and "night" are the evening)."""
PART_DEFAULT_HOURS = {
    part: f"{PART_CLOCK[part][0]:02d}:{PART_CLOCK[part][1]:02d}"
    for part in ("morning", "afternoon", "evening")
}
"""The clock time a moment gets when only a part of day was said ("Friday morning")."""
_FRACTIONS = LEXICON.clock.fractions
"""Minutes of "half" and "quarter" past or to an hour."""

MERIDIEM = r"(a\.?\s?m\.?|p\.?\s?m\.?)"
CLOCK = re.compile(rf"\b(\d{{1,2}})(?:[:.](\d{{2}}))?\s*{MERIDIEM}(?=\W|$)", re.IGNORECASE)
CLOCK_24 = re.compile(r"\b(\d{1,2}):(\d{2})\b")
CLOCK_PART = re.compile(
    r"\b(?:at\s+)?(\d{1,2})(?:[:.](\d{2}))?\s+in\s+the\s+(morning|afternoon|evening)\b",
    re.IGNORECASE,
)
_AT_HOUR = re.compile(
    r"\b(?:at|around)\s+(\d{1,2})(?:[:.](\d{2}))?\b(?!\s*(?:st|nd|rd|th|days?))", re.IGNORECASE
)
_TIME_AFTER = (
    r"\s*(?:a\.?\s?m|p\.?\s?m)\b|\s+in\s+the\s+(?:morning|afternoon|evening)\b|\s+tonight\b"
)
_TIME_LEAD = r"(?:at|around|about|by|from|until|till)"

# Spoken times, rewritten to digits before the clock rules read them.
HOUR_WORD = alternation([*(w for w, v in DIGIT_WORDS.items() if v), "ten", "eleven", "twelve"])
_UNIT_WORD = alternation(w for w, v in DIGIT_WORDS.items() if v)
_MINUTE_TENS = alternation(w for w, v in TENS_WORDS.items() if v < 60)
MINUTE_WORDS = (
    rf"(?:oh\s+(?:{_UNIT_WORD})|(?:{_MINUTE_TENS})(?:[\s-](?:{_UNIT_WORD}))?"
    rf"|{alternation(TEEN_WORDS)})"
)
RELATIVE_TIME = re.compile(
    rf"\b({alternation(_FRACTIONS)}|twenty[\s-]five|twenty|ten|five|\d{{1,2}})\s+"
    rf"(?:minutes?\s+)?(past|after|to|before|till|til)\s+({HOUR_WORD}|\d{{1,2}})\b",
    re.IGNORECASE,
)
OCLOCK = re.compile(rf"\b({HOUR_WORD}|\d{{1,2}})\s*o['\u2019]?\s?clock\b", re.IGNORECASE)
HALF_HOUR = re.compile(
    rf"\bhalf\s+({HOUR_WORD}|\d{{1,2}})\b(?!\s*(?:[:.]\d|hours?|days?|weeks?|months?|"
    rf"minutes?|years?|percent|%|of|dozen|price|an?\b))",
    re.IGNORECASE,
)
"""British "half seven": half past seven (never half an hour or half of something)."""
_HOUR_MINUTES = re.compile(
    rf"\b({_TIME_LEAD}\s+)?({HOUR_WORD})[\s-]+({MINUTE_WORDS})\b(?=({_TIME_AFTER})?)",
    re.IGNORECASE,
)
_HOUR_ALONE = re.compile(
    rf"\b(?:({_TIME_LEAD})\s+({HOUR_WORD})\b(?!\s+of\b)|({HOUR_WORD})(?={_TIME_AFTER}))",
    re.IGNORECASE,
)


def time_in(text: str) -> str | None:
    """The first clock time the utterance names, as ``HH:MM``; ``None`` also when the time said
    is not a time ("27 pm", "13 pm", "at 25:00").

    Digits or words ("at eleven", "two thirty pm", "half past three", "quarter to four",
    "three o'clock"). Without a.m./p.m. a small hour (1 to 7) is an afternoon hour in office talk
    ("at 4" is 16:00), unless a part of day says otherwise ("at 7 in the morning", "at 9
    tonight"). A part of day alone ("Friday afternoon") is not a clock time: see
    :func:`moment_in`.
    """
    return clock(text) or None


def part_of_day(text: str) -> str | None:
    """``"morning"``, ``"afternoon"`` or ``"evening"`` when the utterance names one ("tonight" is
    the evening)."""
    match = re.search(rf"\b({alternation(PARTS_OF_DAY)})\b", text, re.IGNORECASE)
    return PARTS_OF_DAY[match.group(1).lower()] if match else None


def clock(text: str) -> str | None:
    """Like :func:`time_in`, but ``""`` when a time was said that is not one: a wrong time must not
    fall back to a part of day's default hour."""
    lowered = spoken_times(text.lower().replace("\u2019", "'"))
    for found in (
        _meridiem_clock(lowered),
        _part_clock(lowered),
        _named_time(lowered),
        _plain_clock(lowered),
    ):
        if found is not None:
            return found
    return None


def _meridiem_clock(lowered: str) -> str | None:
    match = CLOCK.search(lowered)
    if not match:
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return ""
    return _hhmm(hour_of(hour, meridiem=match.group(3)[0] + "m"), minute)


def _part_clock(lowered: str) -> str | None:
    match = CLOCK_PART.search(lowered)
    if not match:
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return ""
    return _hhmm(hour_of(hour, part=match.group(3).lower()), minute)


def _named_time(lowered: str) -> str | None:
    for word, (hour, minute) in NAMED_TIMES.items():
        if re.search(rf"\b{word}\b", lowered):
            return _hhmm(hour, minute)
    return None


def _plain_clock(lowered: str) -> str | None:
    """A clock time without a.m./p.m. ("16:00", "3:30", "at 4"): a part of day said next to it
    decides ("Friday morning at 7", "at 9 tonight"), else office hours."""
    match = CLOCK_24.search(lowered) or _AT_HOUR.search(lowered)
    if not match:
        return None
    before = " ".join(lowered[: match.start()].split()[-3:])
    after = " ".join(lowered[match.end() :].split()[:3])
    hint = part_of_day(f"{before} {after}")
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if hour > 23 or minute > 59:
        return ""
    written = match.group(1)
    if written.startswith("0"):  # "09:30" is already on a 24-hour clock
        return _hhmm(hour, minute)
    if hint in ("afternoon", "evening") or (hint is None and len(written) == 1):
        hour = hour_of(hour, part=hint or "")
    return _hhmm(hour, minute)


def hour_of(hour: int, *, meridiem: str = "", part: str = "") -> int:
    """The 24-hour hour of an hour as said: with ``am``/``pm``; with a part of the day
    ("morning", "afternoon", "evening", "night", "noon", "midnight"); else 1-7 are afternoon
    hours and 8-12 as said (office and call-back hours). ``meridiem="24h"``: already on a
    24-hour clock. The one clock rule of every reader of spoken times (ADR-0039)."""
    if meridiem == "24h":
        return hour
    if meridiem:
        return hour % 12 + (12 if meridiem == "pm" else 0)
    if hour == 0 or hour > 12:
        return hour
    if part == "morning":
        return hour % 12
    if part in ("afternoon", "evening"):
        return hour % 12 + 12
    if part == "night":
        return hour % 12 if hour in (12, 1, 2, 3, 4) else hour + 12
    if part in ("noon", "midnight"):
        return 12 if part == "noon" else 0
    return hour + 12 if 1 <= hour <= 7 else hour


def _hhmm(hour: int, minute: int) -> str:
    return f"{hour:02d}:{minute:02d}"


def spoken_times(text: str) -> str:
    """Times said in words rewritten in digits, the rest of the text as it was.

    "half past three" -> "3:30", "half seven" (British) -> "7:30", "quarter to four" -> "3:45",
    "three o'clock" -> "3:00",
    "two thirty pm" -> "2:30 pm", "at eleven" -> "at 11", "eleven am" -> "11 am". An hour word
    is a time only with a.m./p.m., a part of day, or a word such as "at" before it.
    """
    text = misheard_times(text)
    text = RELATIVE_TIME.sub(_relative_time, text)
    text = HALF_HOUR.sub(_half_hour, text)
    text = OCLOCK.sub(lambda m: f"{word_value(m.group(1))}:00", text)
    text = _HOUR_MINUTES.sub(_hour_minutes, text)
    return _HOUR_ALONE.sub(_hour_alone, text)


_MISHEARD = (
    (
        re.compile(r"\b(half|quarter|ten|five|twenty(?:[\s-]five)?)\s+pass(?:ed)?\b", re.I),
        r"\1 past",
    ),
    (re.compile(r"\b(past|half|at)\s+then\b", re.I), r"\1 ten"),
)
"""How a small recogniser writes a time it heard ("half pass then" for "half past ten"):
rewritten before the time is read; only where the words around make it a time."""


def misheard_times(text: str) -> str:
    """``text`` with the recogniser's usual spellings of time words mended (:data:`_MISHEARD`)."""
    for pattern, repl in _MISHEARD:
        text = pattern.sub(repl, text)
    return text


def _relative_time(match: re.Match[str]) -> str:
    said, direction = match.group(1).lower(), match.group(2).lower()
    minutes = _FRACTIONS.get(said)
    if minutes is None:
        minutes = word_value(said)
    hour = word_value(match.group(3))
    forward = direction in ("past", "after")
    if minutes % 5 or not 0 < minutes < 60 or (minutes == 30 and not forward) or not hour:
        return match.group(0)
    if forward:
        return f"{hour}:{minutes:02d}"
    return f"{(hour - 2) % 12 + 1}:{60 - minutes:02d}"


def _half_hour(match: re.Match[str]) -> str:
    hour = word_value(match.group(1))
    return f"{hour}:30" if 1 <= hour <= 12 else match.group(0)


def _hour_minutes(match: re.Match[str]) -> str:
    lead, hour, minutes, after = match.group(1), match.group(2), match.group(3), match.group(4)
    if not lead and not after:
        return match.group(0)
    return f"{lead or ''}{word_value(hour)}:{word_value(minutes):02d}"


def _hour_alone(match: re.Match[str]) -> str:
    if match.group(1):
        return f"{match.group(1)} {word_value(match.group(2))}"
    return str(word_value(match.group(3)))
