"""Deterministic extraction of typed argument values from one transcribed utterance.

A small model copies identifiers and does date arithmetic badly; these rules do both exactly.
Each extractor takes the utterance (as a speech recogniser prints it, or as typed) and returns a
canonical value or ``None``: identifiers upper-cased, dates as ``YYYY-MM-DD`` resolved against
``today``, times as ``HH:MM`` on a 24-hour clock, moments as ISO 8601 with the caller's offset,
free-text phrases as said.

Callers say numbers as words and the recogniser often prints them so ("C nineteen", "at eleven",
"half past three"); the rules first rewrite spoken numbers into digits, then read the digits.
What was said but cannot be a value ("27 pm", "at 25:00") gives ``None``, never a wrapped value:
a missing value is asked for, a wrong one would be executed. Nothing here knows a profile's tool
or field names: :mod:`.router` picks the extractor from the field's JSON Schema.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_SMALL_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a": 1, "an": 1,
}  # fmt: skip

# ---------------------------------------------------------------- spoken numbers
_DIGIT_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9,
}  # fmt: skip
_TEEN_WORDS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS_WORDS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_ORDINAL_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20, "thirtieth": 30,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1000}
_REPEATS = {"double": 2, "triple": 3}
_NUMBER_VALUES = {**_DIGIT_WORDS, **_TEEN_WORDS, **_TENS_WORDS}


def _alternation(words: Iterable[str]) -> str:
    return "|".join(sorted(words, key=len, reverse=True))


_RUN_START = _alternation([*_NUMBER_VALUES, *_ORDINAL_WORDS, *_REPEATS, "oh"])
_RUN_WORD = _alternation([*_NUMBER_VALUES, *_ORDINAL_WORDS, *_SCALES, *_REPEATS, "oh", "and"])
_NUMBER_RUN = re.compile(rf"\b(?:{_RUN_START})(?:[\s-]+(?:{_RUN_WORD}))*\b", re.IGNORECASE)
_NOT_PLURAL_NOUNS = {"thanks", "is", "was", "its", "yes", "has", "does", "as", "us", "this"}
"""Words ending in "s" that are not a plural noun counted by the number before them."""
_HOUR_WORD = _alternation([*list(_DIGIT_WORDS)[1:], "ten", "eleven", "twelve"])
_UNIT_WORD = _alternation(list(_DIGIT_WORDS)[1:])
_MINUTE_WORDS = (
    rf"(?:oh\s+(?:{_UNIT_WORD})|(?:twenty|thirty|forty|fifty)(?:[\s-](?:{_UNIT_WORD}))?"
    rf"|{_alternation(_TEEN_WORDS)})"
)

# ---------------------------------------------------------------- dates and times
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_RE = r"(\d{1,2})(?:st|nd|rd|th)?"
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?=T\d|\b)")
_MONTH_DAY = re.compile(rf"\b({_MONTH_RE})\.?\s+(?:the\s+)?{_DAY_RE}\b", re.IGNORECASE)
_DAY_OF_MONTH = re.compile(rf"\b(?:the\s+)?{_DAY_RE}\s+(?:of\s+)?({_MONTH_RE})\b", re.IGNORECASE)
_ORDINAL_DAY = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)\b", re.IGNORECASE)
_BARE_DAY = re.compile(
    r"\bthe\s+(\d{1,2})(?:st|nd|rd|th)\b(?=\s*(?:$|[,.?!;]|(?:at|in|around|by|from|please"
    r"|instead|then|would|works|is|if|or|and|for|of\s+(?:this|next|the)\s+month)\b))",
    re.IGNORECASE,
)
_WEEKDAY = re.compile(rf"\b(next\s+|this\s+|on\s+)?({'|'.join(_WEEKDAYS)})\b", re.IGNORECASE)
_IN_DAYS = re.compile(r"\bin\s+(\d+|[a-z]+)\s+days?\b", re.IGNORECASE)

_MERIDIEM = r"(a\.?\s?m\.?|p\.?\s?m\.?)"
_CLOCK = re.compile(rf"\b(\d{{1,2}})(?:[:.](\d{{2}}))?\s*{_MERIDIEM}(?=\W|$)", re.IGNORECASE)
_CLOCK_24 = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_CLOCK_PART = re.compile(
    r"\b(?:at\s+)?(\d{1,2})(?:[:.](\d{2}))?\s+in\s+the\s+(morning|afternoon|evening)\b",
    re.IGNORECASE,
)
_AT_HOUR = re.compile(
    r"\b(?:at|around)\s+(\d{1,2})(?:[:.](\d{2}))?\b(?!\s*(?:st|nd|rd|th|days?))", re.IGNORECASE
)
_NAMED_TIMES = {"noon": "12:00", "midday": "12:00", "midnight": "00:00"}
_PARTS_OF_DAY = {"morning": "morning", "afternoon": "afternoon", "evening": "evening",
                 "tonight": "evening", "night": "evening"}  # fmt: skip
_PART_DEFAULT_HOURS = {"morning": "09:00", "afternoon": "15:00", "evening": "18:00"}
"""The clock time a moment gets when only a part of day was said ("Friday morning")."""
_MERIDIEM_AHEAD = r"(?=\s*(?:a\.?\s?m|p\.?\s?m)\b)"
_TIME_AFTER = (
    r"\s*(?:a\.?\s?m|p\.?\s?m)\b|\s+in\s+the\s+(?:morning|afternoon|evening)\b|\s+tonight\b"
)
_TIME_LEAD = r"(?:at|around|about|by|from|until|till)"

# Spoken times, rewritten to digits before the clock rules read them.
_RELATIVE_TIME = re.compile(
    rf"\b(half|quarter|twenty[\s-]five|twenty|ten|five|\d{{1,2}})\s+(?:minutes?\s+)?"
    rf"(past|after|to|before|till|til)\s+({_HOUR_WORD}|\d{{1,2}})\b",
    re.IGNORECASE,
)
_OCLOCK = re.compile(rf"\b({_HOUR_WORD}|\d{{1,2}})\s*o['\u2019]?\s?clock\b", re.IGNORECASE)
_HOUR_MINUTES = re.compile(
    rf"\b({_TIME_LEAD}\s+)?({_HOUR_WORD})[\s-]+({_MINUTE_WORDS})\b(?=({_TIME_AFTER})?)",
    re.IGNORECASE,
)
_HOUR_ALONE = re.compile(
    rf"\b(?:({_TIME_LEAD})\s+({_HOUR_WORD})\b(?!\s+of\b)|({_HOUR_WORD})(?={_TIME_AFTER}))",
    re.IGNORECASE,
)

# ---------------------------------------------------------------- identifiers
# An optional letter prefix ("A123", "ap-7", "A 123" when capitals are spaced off by the
# recogniser, "c 19" when it prints a spelled letter in lower case, never "my 41"), digits with
# dashes or thousands commas, an optional letter suffix.
_ID_TOKEN = (
    r"(?:(?-i:[A-Z]{1,3})[-\s]|(?-i:[a-z])\s|[A-Za-z]{1,3}-?)?\d(?:[\d-]|,(?=\d{3}))*[A-Za-z]?"
)
_ID_START = r"(?<![\w'\u2019-])"
_ID_END = r"(?![\w-])"
_ARTICLE_LETTERS = ("a", "i")
"""Lower-case letters that are also English words: a prefix only where the pattern wants one."""
_COUNT_WORDS = (
    r"items?|pieces?|units?|people|persons?|guests?|adults?|kids?|children|days?|nights?"
    r"|weeks?|months?|years?|hours?|minutes?|times?|box(?:es)?|bags?|tickets?|seats?|rooms?"
    r"|dollars?|euros?|pounds?|percent"
)
_COUNT = re.compile(rf"\b\d+\s+(?:more\s+|extra\s+)?(?:{_COUNT_WORDS})\b", re.IGNORECASE)
_MONEY = re.compile(r"[$\u20ac\u00a3]\s?\d[\d,.]*")
_AT_SMALL_NUMBER = re.compile(r"\b(?:at|around|by|until)\s+\d{1,2}\b", re.IGNORECASE)
_SPELLED_LETTER = re.compile(r"\b([A-Za-z]),?\s+(?:as\s+in|for|like)\s+([A-Za-z]+)\b")
_SPACED_DIGITS = re.compile(r"(?<=\d) (?=\d)")
_SPACED_LETTERS = re.compile(r"(?<![\w'])([A-Za-z])\s([A-Za-z])(?:\s([A-Za-z]))?\s(?=\d)")
_LETTER_NAMES = {
    "ay": "A", "bee": "B", "be": "B", "see": "C", "sea": "C", "cee": "C", "dee": "D",
    "ef": "F", "eff": "F", "gee": "G", "aitch": "H", "eye": "I", "jay": "J", "kay": "K",
    "el": "L", "ell": "L", "em": "M", "en": "N", "and": "N", "oh": "O", "pee": "P",
    "pea": "P", "cue": "Q", "queue": "Q", "are": "R", "or": "R", "ar": "R", "ess": "S",
    "es": "S", "tee": "T", "tea": "T", "you": "U", "vee": "V", "ex": "X", "why": "Y",
    "zed": "Z", "zee": "Z",
}  # fmt: skip
"""How a recogniser writes a letter said on its own ("I N J 1" as "i and j1", "R X 78" as
"or X78"): read as letters only in a run of letters right before an identifier's characters."""
_LETTER_WORD = rf"(?:[A-Za-z]|{'|'.join(sorted(_LETTER_NAMES, key=len, reverse=True))})"
_LETTER_RUN = re.compile(
    rf"(?<![\w'\u2019-])((?:{_LETTER_WORD}\s+){{1,3}})({_ID_TOKEN}){_ID_END}", re.IGNORECASE
)

# ---------------------------------------------------------------- free text
_WHEN_WORDS = re.compile(
    r"\b(?:today|tonight|tomorrow|day after tomorrow|this (?:morning|afternoon|evening|week)"
    r"|next (?:week|month|\w+day)|(?:on |this )?(?:monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday)(?: (?:morning|afternoon|evening))?|morning|afternoon|evening"
    r"|in (?:\d+|[a-z]+) (?:minutes?|hours?|days?|weeks?)|later today"
    r"|end of (?:the )?(?:day|week))\b",
    re.IGNORECASE,
)
_SPOKEN_CLOCK_SPAN = re.compile(
    rf"{_RELATIVE_TIME.pattern}|{_OCLOCK.pattern}"
    rf"|\b(?:{_HOUR_WORD})(?:[\s-]+{_MINUTE_WORDS})?\s*{_MERIDIEM}(?=\W|$)",
    re.IGNORECASE,
)
_REASON = re.compile(
    r"\b(?:about|regarding|concerning|re|to discuss|to talk about|on the subject of|because|"
    r"since|due to)\s+(.+)",
    re.IGNORECASE,
)


# ================================================================ dates


def date_in(text: str, today: dt.date) -> str | None:
    """The first calendar date the utterance names, as ``YYYY-MM-DD``.

    Month names with a day in digits or ordinal words ("March 10", "the fourteenth of March"),
    "the 14th" alone (the next such day of a month), relative days, weekdays ("next Tuesday",
    "Friday morning" is Friday) and "in 3 days".
    """
    found = _ISO_DATE.search(text)
    if found:
        return found.group(0)
    lowered = _ordinal_days(text.lower())
    for pattern, month_group, day_group in ((_MONTH_DAY, 1, 2), (_DAY_OF_MONTH, 2, 1)):
        match = pattern.search(lowered)
        if match:
            return _next_date(today, _MONTHS[match.group(month_group)], int(match.group(day_group)))
    bare = _BARE_DAY.search(lowered)
    if bare:
        return _next_day_of_month(today, int(bare.group(1)))
    if "day after tomorrow" in lowered:
        return (today + dt.timedelta(days=2)).isoformat()
    if re.search(r"\btomorrow\b", lowered):
        return (today + dt.timedelta(days=1)).isoformat()
    if re.search(r"\btoday\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b", lowered):
        return today.isoformat()
    weekday = _WEEKDAY.search(lowered)
    if weekday:
        return _weekday_date(today, _WEEKDAYS.index(weekday.group(2)), weekday.group(1) or "")
    days = _IN_DAYS.search(lowered)
    if days:
        count = _number(days.group(1))
        return (today + dt.timedelta(days=count)).isoformat() if count is not None else None
    return None


def _ordinal_days(lowered: str) -> str:
    """Ordinal words next to a month, or after "on the", as digits ("fourteenth" -> "14th").

    Elsewhere an ordinal word is not a day ("the second one", "wait a second")."""
    ordinal = rf"((?:(?:twenty|thirty)[\s-])?(?:{_alternation(_ORDINAL_WORDS)}))"

    def digits(words: str) -> str:
        parts = re.split(r"[\s-]+", words)
        return f"{sum(_TENS_WORDS.get(p, 0) + _ORDINAL_WORDS.get(p, 0) for p in parts)}th"

    lowered = re.sub(
        rf"\b({_MONTH_RE})\s+(?:the\s+)?{ordinal}\b",
        lambda m: f"{m.group(1)} {digits(m.group(2))}",
        lowered,
    )
    lowered = re.sub(
        rf"\b{ordinal}\s+of\s+({_MONTH_RE})\b",
        lambda m: f"{digits(m.group(1))} of {m.group(2)}",
        lowered,
    )
    return re.sub(rf"\bon\s+the\s+{ordinal}\b", lambda m: f"on the {digits(m.group(1))}", lowered)


# ================================================================ times


def time_in(text: str) -> str | None:
    """The first clock time the utterance names, as ``HH:MM``; ``None`` also when the time said
    is not a time ("27 pm", "13 pm", "at 25:00").

    Digits or words ("at eleven", "two thirty pm", "half past three", "quarter to four",
    "three o'clock"). Without a.m./p.m. a small hour (1 to 7) is an afternoon hour in office talk
    ("at 4" is 16:00), unless a part of day says otherwise ("at 7 in the morning", "at 9
    tonight"). A part of day alone ("Friday afternoon") is not a clock time: see
    :func:`moment_in`.
    """
    return _clock(text) or None


def part_of_day(text: str) -> str | None:
    """``"morning"``, ``"afternoon"`` or ``"evening"`` when the utterance names one ("tonight" is
    the evening)."""
    match = re.search(rf"\b({_alternation(_PARTS_OF_DAY)})\b", text, re.IGNORECASE)
    return _PARTS_OF_DAY[match.group(1).lower()] if match else None


def _clock(text: str) -> str | None:
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
    match = _CLOCK.search(lowered)
    if not match:
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return ""
    return _hhmm(hour % 12 + (12 if match.group(3).startswith("p") else 0), minute)


def _part_clock(lowered: str) -> str | None:
    match = _CLOCK_PART.search(lowered)
    if not match:
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return ""
    return _hhmm(hour % 12 + (0 if match.group(3) == "morning" else 12), minute)


def _named_time(lowered: str) -> str | None:
    for word, value in _NAMED_TIMES.items():
        if re.search(rf"\b{word}\b", lowered):
            return value
    return None


def _plain_clock(lowered: str) -> str | None:
    """A clock time without a.m./p.m. ("16:00", "3:30", "at 4"): a part of day said next to it
    decides ("Friday morning at 7", "at 9 tonight"), else office hours."""
    match = _CLOCK_24.search(lowered) or _AT_HOUR.search(lowered)
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
    later = hint in ("afternoon", "evening") and 1 <= hour < 12
    office = hint is None and len(written) == 1 and 1 <= hour <= 7
    hour += 12 if later or office else 0
    return _hhmm(hour, minute)


def _hhmm(hour: int, minute: int) -> str:
    return f"{hour:02d}:{minute:02d}"


def spoken_times(text: str) -> str:
    """Times said in words rewritten in digits, the rest of the text as it was.

    "half past three" -> "3:30", "quarter to four" -> "3:45", "three o'clock" -> "3:00",
    "two thirty pm" -> "2:30 pm", "at eleven" -> "at 11", "eleven am" -> "11 am". An hour word
    is a time only with a.m./p.m., a part of day, or a word such as "at" before it.
    """
    text = _RELATIVE_TIME.sub(_relative_time, text)
    text = _OCLOCK.sub(lambda m: f"{_word_value(m.group(1))}:00", text)
    text = _HOUR_MINUTES.sub(_hour_minutes, text)
    return _HOUR_ALONE.sub(_hour_alone, text)


def _relative_time(match: re.Match[str]) -> str:
    said, direction = match.group(1).lower(), match.group(2).lower()
    minutes = {"half": 30, "quarter": 15}.get(said)
    if minutes is None:
        minutes = _word_value(said)
    hour = _word_value(match.group(3))
    forward = direction in ("past", "after")
    if minutes % 5 or not 0 < minutes < 60 or (minutes == 30 and not forward) or not hour:
        return match.group(0)
    if forward:
        return f"{hour}:{minutes:02d}"
    return f"{(hour - 2) % 12 + 1}:{60 - minutes:02d}"


def _hour_minutes(match: re.Match[str]) -> str:
    lead, hour, minutes, after = match.group(1), match.group(2), match.group(3), match.group(4)
    if not lead and not after:
        return match.group(0)
    return f"{lead or ''}{_word_value(hour)}:{_word_value(minutes):02d}"


def _hour_alone(match: re.Match[str]) -> str:
    if match.group(1):
        return f"{match.group(1)} {_word_value(match.group(2))}"
    return str(_word_value(match.group(3)))


def _word_value(words: str) -> int:
    """A number of at most two words or digits ("twenty five", "oh five", "11")."""
    parts = [p for p in re.split(r"[\s-]+", words.lower()) if p != "oh"]
    if len(parts) == 1 and parts[0].isdigit():
        return int(parts[0])
    return sum(_NUMBER_VALUES.get(p, 0) for p in parts)


# ================================================================ moments


def moment_in(text: str, now: dt.datetime) -> str | None:
    """The moment the utterance names, as ISO 8601 with the offset of ``now``'s zone
    ("2026-12-08T14:00:00+01:00"), or ``None`` unless both a day and a time were said.

    ``now`` is the caller's clock, aware, in the caller's zone (a ``zoneinfo.ZoneInfo``; a naive
    ``now`` is read as UTC): the day resolves against its date, and the offset is the zone's on
    that day, summer time included. A part of day stands for a default hour: morning 09:00,
    afternoon 15:00, evening (and "tonight") 18:00. A wall time that does not exist (in the
    hour a summer-time change skips) moves forward by that hour.
    """
    zone = now.tzinfo or dt.UTC
    day = date_in(text, now.date())
    clock = _clock(text)
    if clock is None:
        clock = _PART_DEFAULT_HOURS.get(part_of_day(text) or "")
    if day is None or not clock:
        return None
    wall = dt.datetime.combine(dt.date.fromisoformat(day), dt.time.fromisoformat(clock), zone)
    return wall.astimezone(dt.UTC).astimezone(zone).isoformat(timespec="seconds")


# ================================================================ identifiers


def identifier_in(text: str, noun: str, pattern: str | None = None) -> str | None:
    """The identifier said after ``noun`` ("order A123", "order number 5582", "my 41 order",
    "order C nineteen"); with ``pattern``, only a spelling it accepts (see :func:`_canonical_id`).
    """
    cleaned = _identifier_text(text)
    stem = re.escape(noun.lower().rstrip("s"))
    candidates = [
        rf"\b{stem}s?\s+(?:number\s+|no\.?\s+|#\s*|id\s+)?({_ID_TOKEN}){_ID_END}",
        rf"{_ID_START}({_ID_TOKEN})\s+{stem}s?\b",
        rf"\b{stem}s?\b.*?\b(?:it'?s|is|number)\s+({_ID_TOKEN}){_ID_END}",
    ]
    for regex in candidates:
        match = re.search(regex, cleaned, re.IGNORECASE)
        if match:
            value = _canonical_id(match.group(1), pattern)
            if value:
                return value
    after_noun = re.search(rf"\b{stem}s?\s+(?:number\s+)?(?={_LETTER_WORD}\s)", cleaned,
                           re.IGNORECASE)
    if after_noun:
        run = _LETTER_RUN.match(cleaned, after_noun.end())
        if run:
            return _canonical_id(_letters_joined(run), pattern)
    return None


def _letters_joined(run: re.Match[str]) -> str:
    """A run of letters said one by one and the identifier after it, as one spelling
    ("i and j1" -> "INJ1")."""
    letters = "".join(_LETTER_NAMES.get(w.lower(), w.upper()) for w in run.group(1).split())
    return letters + run.group(2)


def bare_identifier(text: str, pattern: str | None) -> str | None:
    """An identifier said without its noun, as the answer to "Which order is it?" ("It's A124",
    "A one two four", "number 5582", "APT 1001").

    Times, dates, counts and amounts are not identifiers ("at 3", "the 14th", "2 items", "$40").
    With ``pattern``, the first candidate with a spelling the pattern accepts.
    """
    cleaned = _identifier_text(text)
    for match in re.finditer(rf"{_ID_START}({_ID_TOKEN}){_ID_END}", cleaned, re.IGNORECASE):
        value = _canonical_id(match.group(1), pattern)
        if value:
            return value
    if pattern:  # letters said one by one before it, where the pattern wants them ("or X78")
        for run in _LETTER_RUN.finditer(cleaned):
            value = _canonical_id(_letters_joined(run), pattern)
            if value:
                return value
    return None


def _identifier_text(text: str) -> str:
    """The utterance as identifiers are read from it: spoken letters and numbers as characters
    ("B as in bravo five two" -> "B 52", "b k one two" -> "BK 12"), then dates, times, counts
    and amounts blanked out."""
    spoken = spoken_times(text.replace("\u2019", "'"))
    spoken = _SPELLED_LETTER.sub(_spelled_letter, spoken)
    spoken = _NUMBER_RUN.sub(_number_run, spoken)
    spoken = _SPACED_LETTERS.sub(_spaced_letters, spoken)
    masked = spoken
    for pattern in (
        _ISO_DATE, _MONTH_DAY, _DAY_OF_MONTH, _ORDINAL_DAY, _CLOCK, _CLOCK_24, _CLOCK_PART,
        _COUNT, _MONEY, _AT_SMALL_NUMBER,
    ):  # fmt: skip
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    return _SPACED_DIGITS.sub("", _ROUND_THEN_SMALL.sub(_added, masked))


_ROUND_THEN_SMALL = re.compile(r"(?<![\d-])(\d*[1-9](0+)) (\d+)\b")


def _added(match: re.Match[str]) -> str:
    """A round number and a smaller one after it are one number, as a recogniser prints "one
    thousand one" ("1000 1" -> "1001", "20 1" -> "21"); other digit runs are left as spelled."""
    round_, zeros, small = match.group(1), match.group(2), match.group(3)
    if len(small) > len(zeros):
        return match.group(0)
    return str(int(round_) + int(small))


def _spaced_letters(match: re.Match[str]) -> str:
    """Letters spelled one by one before digits as one prefix ("b k 1234" -> "BK 1234")."""
    return "".join(c for c in match.groups() if c).upper() + " "


def _spelled_letter(match: re.Match[str]) -> str:
    """A letter spelled with an example word ("B as in bravo") as the letter alone; kept as said
    when the example does not start with the letter."""
    letter, example = match.group(1), match.group(2)
    return letter if example[0].lower() == letter.lower() else match.group(0)


def _number_run(match: re.Match[str]) -> str:
    """A run of number words as digits: digit by digit ("one two three" -> "123", "one oh one" ->
    "101", "double five" -> "55"), in groups ("twenty one" -> "21", "five fifty" -> "550"), or
    with scales ("one thousand and one" -> "1001"); an ordinal as a day ("fourteenth" -> "14th").

    A lone "one" stays a word ("the one on Friday"), and so does a lone number before a plural
    noun ("two orders"): neither is an identifier."""
    said = match.group(0)
    words = [w.lower() for w in re.split(r"[\s-]+", said) if w]
    if words == ["one"] or not any(w in _NUMBER_VALUES or w in _ORDINAL_WORDS for w in words):
        return said
    plural = re.match(r"\s+([a-z]{2,}s)\b", match.string[match.end() :], re.IGNORECASE)
    if len(words) == 1 and plural and plural.group(1).lower() not in _NOT_PLURAL_NOUNS:
        return said
    return _spoken_digits(words)


def _spoken_digits(words: list[str]) -> str:
    """Number words as digits; words that end a number ("and" not after a scale) stay words."""
    words = _repeats_expanded(words)
    words = ["zero" if w == "oh" and len(words) > 1 else w for w in words]
    out: list[str] = []
    group = _NumberGroup()
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else ""
        if word == "and" and group.room >= 100 and following in _NUMBER_VALUES:
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
        if out and out[-1] in _REPEATS and word in _DIGIT_WORDS:
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
        value = _NUMBER_VALUES.get(word, _ORDINAL_WORDS.get(word))
        if value is None or self.ordinal:
            return False
        if self.started and (value == 0 or value >= self.room):
            return False
        self.value += value
        self.room = 10 if word in _TENS_WORDS else 0
        self.started, self.ordinal = True, word in _ORDINAL_WORDS
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


def _canonical_id(raw: str, pattern: str | None) -> str | None:
    """The identifier as the caller spelled it, upper case, or ``None`` without a digit.

    Spaces and thousands commas go. A hyphen after a prefix of two or more letters is part of
    the spelling and stays ("APT-1001"); hyphens after a single letter or among digits are how a
    recogniser prints spelled-out characters ("A-1-2-3") and go. A lower-case "a" or "i" before
    the digits may be an article: it is a prefix only where the pattern wants one.

    With ``pattern``, the first spelling it accepts: as said, joined, with a dash between
    letters and digits ("APT 1001" -> "APT-1001"), the pattern's literal prefix before bare
    digits ("1001" -> "APT-1001").
    """
    split = re.fullmatch(r"([A-Za-z]{0,3})([-\s]*)(.*)", raw, re.DOTALL)
    assert split is not None  # the pattern admits any string
    prefix, separator, rest = split.groups()
    body = re.sub(r"[\s,-]", "", rest).upper()
    if not any(c.isdigit() for c in body):
        return None
    article = prefix in _ARTICLE_LETTERS and " " in separator
    keep_dash = "-" in separator and len(prefix) >= 2
    said = prefix.upper() + ("-" if keep_dash else "") + body
    if not pattern:
        return body if article else said
    variants = [said, prefix.upper() + body, f"{prefix.upper()}-{body}" if prefix else body]
    variants += [raw.upper(), raw, *([body] if article else [])]
    literal = re.match(r"\^?([A-Za-z]+-?)(?=[\[(\\])", pattern)
    if literal and not prefix:
        variants.append(literal.group(1) + body)
    return next((v for v in variants if pattern_accepts(pattern, v)), None)


def pattern_accepts(pattern: str, value: str) -> bool:
    """Whether a schema ``pattern`` accepts the whole value; a pattern Python cannot compile
    accepts nothing."""
    try:
        return re.fullmatch(pattern, value) is not None
    except re.error:
        return False


# ================================================================ free text


def when_phrase(text: str) -> str | None:
    """The span that says when, in the caller's words ("tomorrow at 10 am", "next week", "on
    Monday at 3 pm", "next Tuesday at half past two")."""
    spans = [m.span() for m in _WHEN_WORDS.finditer(text)]
    spans += [m.span() for m in _CLOCK.finditer(text)]
    spans += [m.span() for m in _SPOKEN_CLOCK_SPAN.finditer(text)]
    spans += [m.span() for m in _MONTH_DAY.finditer(text)]
    spans += [m.span() for m in re.finditer(r"\b(?:noon|midday)\b", text, re.IGNORECASE)]
    if not spans:
        return None
    spans.sort()
    start, end = spans[0]
    for s, e in spans[1:]:
        if re.fullmatch(r"[\s,]*(?:at|on|in the|around|by)?[\s,]*", text[end:s], re.IGNORECASE):
            end = max(end, e)
    phrase = text[start:end]
    before = text[:start].rstrip().split(" ")[-1].lower()
    if before in ("on", "at", "by", "around"):
        phrase = f"{before} {phrase}"
    return phrase.strip(" ,.")


def reason_phrase(text: str) -> str | None:
    """What a call-back is about: the words after "about", "regarding", "to discuss" ..."""
    match = _REASON.search(text)
    if not match:
        return None
    reason = match.group(1)
    when = _WHEN_WORDS.search(reason)
    if when and when.start() > 0:
        reason = reason[: when.start()]
    reason = re.sub(r"^(?:to\s+)?(?:talk about|about)\s+", "", reason.strip(), flags=re.IGNORECASE)
    reason = re.split(r"[.?!]", reason)[0]
    return reason.strip(" ,") or None


# ================================================================ calendar arithmetic


def _next_date(today: dt.date, month: int, day: int) -> str | None:
    for year in (today.year, today.year + 1):
        try:
            candidate = dt.date(year, month, day)
        except ValueError:
            return None
        if candidate >= today:
            return candidate.isoformat()
    return None


def _next_day_of_month(today: dt.date, day: int) -> str | None:
    """The day of a month said alone ("the 14th"): this month's if still ahead, else the next
    month that has that day."""
    year, month = today.year, today.month
    for _ in range(3):
        try:
            candidate = dt.date(year, month, day)
        except ValueError:
            candidate = None
        if candidate and candidate >= today:
            return candidate.isoformat()
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return None


def _weekday_date(today: dt.date, weekday: int, qualifier: str) -> str:
    ahead = (weekday - today.weekday()) % 7 or 7
    target = today + dt.timedelta(days=ahead)
    if qualifier.strip() == "next" and target.isocalendar()[1] == today.isocalendar()[1]:
        target += dt.timedelta(days=7)
    return target.isoformat()


def _number(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return _SMALL_NUMBERS.get(word.lower())
