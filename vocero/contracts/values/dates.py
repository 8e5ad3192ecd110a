"""Calendar dates and moments in an utterance: month days ("March 10", "the fourteenth of
March", "jan 5, 2027"), "the 14th" alone, relative days ("tomorrow", "tmrw"), weekdays ("next
Tuesday") and "in 3 days", resolved against the caller's today; a moment is a date and a clock
time in the caller's zone. Month, weekday and relative-day words are the English lexicon's
(:mod:`vocero.contracts.lexicon`).

The one reader of spoken dates (ADR-0039): the dialogue's slots, the orchestrator's spoken
answers and policy's canonical arguments read a date with :func:`date_in` and a moment with
:func:`moment_in`; the follow-ups' due time, which reads its own (multilingual) time words,
reads month days and days of the month alone with :func:`mark_days` and does its calendar
arithmetic with :func:`weekday_date` (its "next" included), :func:`next_date` and
:func:`next_day_of_month`; the grounding check of spoken facts reads a day of the month alone,
a relative day and "next <weekday>" with :func:`date_in` and a month day with
:func:`month_day_in`. "next Friday" said on a day of the same week is the Friday of the week
after, everywhere (ADR-0040).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from vocero.contracts.lexicon.base import alternation
from vocero.contracts.lexicon.en import LEXICON
from vocero.contracts.values.numbers import ORDINAL_WORDS, TENS_WORDS, small_number
from vocero.contracts.values.times import PART_DEFAULT_HOURS, part_of_day
from vocero.contracts.values.times import clock as clock_in

_CALENDAR = LEXICON.calendar
MONTHS = {**_CALENDAR.months, **_CALENDAR.month_abbreviations}
WEEKDAYS = _CALENDAR.weekdays
"""Weekdays by their full names: a short form ("sat", "wed") is too often another word."""
_RELATIVE_DAYS = [
    (re.compile(rf"\b(?:{alternation([word])})\b"), ahead)
    for word, ahead in sorted(_CALENDAR.relative_days.items(), key=lambda p: (-p[1], -len(p[0])))
    if ahead >= 0
]
"""Days named from today, the furthest first ("the day after tomorrow" is not tomorrow)."""
_DAY_TENS = alternation(w for w, v in TENS_WORDS.items() if v <= 30)
"""Tens a day of the month is said with ("twenty-first", "thirtieth")."""
_THIS_PART = re.compile(r"\bthis\s+(?:morning|afternoon|evening)\b")

MONTH_RE = alternation(MONTHS)
_DAY_RE = r"(\d{1,2})(?:st|nd|rd|th)?"
ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?=T\d|\b)")
MONTH_DAY = re.compile(rf"\b({MONTH_RE})\.?\s+(?:the\s+)?{_DAY_RE}\b", re.IGNORECASE)
DAY_OF_MONTH = re.compile(rf"\b(?:the\s+)?{_DAY_RE}\s+(?:of\s+)?({MONTH_RE})\b", re.IGNORECASE)
ORDINAL_DAY = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)\b", re.IGNORECASE)
BARE_DAY = re.compile(
    r"\bthe\s+(\d{1,2})(?:st|nd|rd|th)\b(?=\s*(?:$|[,.?!;]|(?:at|in|around|by|from|please"
    r"|instead|then|would|works|is|if|or|and|for|of\s+(?:this|next|the)\s+month)\b))",
    re.IGNORECASE,
)
"""A day of the month said alone ("the 14th", "on the 3rd at 4"), but not "the 3rd step"."""
_YEAR_AFTER = re.compile(r",?\s+((?:19|20|21)\d{2})\b")
"""A year said right after a month and day ("March 10, 2027", "the 5th of January 2027")."""
_DAYS_SAID = re.compile(
    rf"(?:{MONTH_DAY.pattern}(?:{_YEAR_AFTER.pattern})?)"
    rf"|(?:{DAY_OF_MONTH.pattern}(?:{_YEAR_AFTER.pattern})?)"
    rf"|(?:{BARE_DAY.pattern})",
    re.IGNORECASE,
)
"""A month day (groups 1-3: month, day, the year said right after them), a day and month (4-6:
day, month, year) or a day of the month alone (7), in the order said."""
_WEEKDAY = re.compile(rf"\b(next\s+|this\s+|on\s+)?({alternation(WEEKDAYS)})\b", re.IGNORECASE)
_IN_DAYS = re.compile(r"\bin\s+(\d+|[a-z]+)\s+days?\b", re.IGNORECASE)


def date_in(text: str, today: dt.date) -> str | None:
    """The first calendar date the utterance names, as ``YYYY-MM-DD``.

    Month names with a day in digits or ordinal words ("March 10", "the fourteenth of March"),
    with the year when one is said right after it ("March 10, 2027"), "the 14th" alone (the
    next such day of a month), relative days, weekdays ("next Tuesday", "Friday morning" is
    Friday) and "in 3 days".
    """
    found = ISO_DATE.search(text)
    if found:
        return found.group(0)
    month_day = month_day_in(text)
    if month_day is not None:
        day = next_date(today, *month_day)
        if day is not None and month_day[2] is None:
            day = _weekday_agreed(day, text)
        return day.isoformat() if day else None
    lowered = _ordinal_days(text.lower())
    bare = BARE_DAY.search(lowered)
    if bare:
        day = _bare_day_agreed(today, int(bare.group(1)), lowered)
        return day.isoformat() if day else None
    for said, ahead in _RELATIVE_DAYS:
        if said.search(lowered):
            return (today + dt.timedelta(days=ahead)).isoformat()
    if _THIS_PART.search(lowered):
        return today.isoformat()
    weekday = _WEEKDAY.search(lowered)
    if weekday:
        return weekday_date(today, WEEKDAYS[weekday.group(2)], weekday.group(1) or "").isoformat()
    days = _IN_DAYS.search(lowered)
    if days:
        count = small_number(days.group(1))
        return (today + dt.timedelta(days=count)).isoformat() if count is not None else None
    return None


def _weekday_agreed(day: dt.date, text: str) -> dt.date:
    """A month day said without its year but with its weekday ("on Saturday the 5th of
    December") in the year before when only that one falls on the weekday said: a day just
    past, not next year's (a thing lost, an earlier visit)."""
    weekday = _WEEKDAY.search(text.lower())
    if weekday is None or day.weekday() == WEEKDAYS[weekday.group(2)]:
        return day
    try:
        before = day.replace(year=day.year - 1)
    except ValueError:
        return day
    return before if before.weekday() == WEEKDAYS[weekday.group(2)] else day


def month_day_in(text: str) -> tuple[int, int, int | None] | None:
    """The month, the day and the year (``None`` unless said right after them) of the first
    month day the utterance names ("March 3rd", "the fourteenth of March", "jan 5, 2027"), as
    said: not resolved against a today, nor checked against a calendar. :func:`date_in` resolves
    it; the grounding check of spoken facts compares a month day said without a year by its
    month and day (docs/grounding.md)."""
    lowered = _ordinal_days(text.lower())
    for pattern, month_group, day_group in ((MONTH_DAY, 1, 2), (DAY_OF_MONTH, 2, 1)):
        match = pattern.search(lowered)
        if match:
            year = _YEAR_AFTER.match(lowered, match.end())
            return (
                MONTHS[match.group(month_group)],
                int(match.group(day_group)),
                int(year.group(1)) if year else None,
            )
    return None


def mark_days(text: str, mark: Callable[[int | None, int, int | None], str]) -> str:
    """``text`` lower-cased, with each month day (read as :func:`month_day_in` reads one, its
    year included) and each day of the month said alone (:data:`BARE_DAY`, read as
    :func:`date_in` reads one) replaced by ``mark(month, day, year)``: ``month`` is ``None`` for a
    day of the month alone, ``year`` ``None`` unless one was said. For a reader that reads the
    other words its own way: the follow-ups' time words, in three languages, read these days as
    every other reader does and resolve them with :func:`next_date` and
    :func:`next_day_of_month`."""

    def marked(match: re.Match[str]) -> str:
        said = match.group
        if said(1):
            month, day, year = MONTHS[said(1)], said(2), said(3)
        elif said(5):
            month, day, year = MONTHS[said(5)], said(4), said(6)
        else:
            return f" {mark(None, int(said(7)), None)} "
        return f" {mark(month, int(day), int(year) if year else None)} "

    return _DAYS_SAID.sub(marked, _ordinal_days(text.lower()))


def _ordinal_days(lowered: str) -> str:
    """Ordinal words next to a month, or after "on the", as digits ("fourteenth" -> "14th").

    Elsewhere an ordinal word is not a day ("the second one", "wait a second")."""
    ordinal = rf"((?:(?:{_DAY_TENS})[\s-])?(?:{alternation(ORDINAL_WORDS)}))"

    def digits(words: str) -> str:
        parts = re.split(r"[\s-]+", words)
        return f"{sum(TENS_WORDS.get(p, 0) + ORDINAL_WORDS.get(p, 0) for p in parts)}th"

    lowered = re.sub(
        rf"\b({MONTH_RE})\s+(?:the\s+)?{ordinal}\b",
        lambda m: f"{m.group(1)} {digits(m.group(2))}",
        lowered,
    )
    lowered = re.sub(
        rf"\b{ordinal}\s+of\s+({MONTH_RE})\b",
        lambda m: f"{digits(m.group(1))} of {m.group(2)}",
        lowered,
    )
    return re.sub(rf"\bon\s+the\s+{ordinal}\b", lambda m: f"on the {digits(m.group(1))}", lowered)


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
    clock = clock_in(text)
    if clock is None:
        clock = PART_DEFAULT_HOURS.get(part_of_day(text) or "")
    if day is None or not clock:
        return None
    wall = dt.datetime.combine(dt.date.fromisoformat(day), dt.time.fromisoformat(clock), zone)
    return wall.astimezone(dt.UTC).astimezone(zone).isoformat(timespec="seconds")


# ------------------------------------------------------------------ calendar arithmetic


def next_date(
    today: dt.date, month: int, day: int, year: int | None = None
) -> dt.date | None:
    """A month and day as said: in ``year`` when one was said, else the next such day from
    ``today`` on (this year's, or next year's once it has passed); ``None`` when that day does
    not exist (the 30th of February, the 29th in a year without one)."""
    if year is not None:
        try:
            return dt.date(year, month, day)
        except ValueError:
            return None
    for candidate_year in (today.year, today.year + 1):
        try:
            candidate = dt.date(candidate_year, month, day)
        except ValueError:
            return None
        if candidate >= today:
            return candidate
    return None


def _bare_day_agreed(today: dt.date, day: int, lowered: str) -> dt.date | None:
    """"Friday the 15th": the next 15th that is a Friday (within a year), not this month's 15th
    on another weekday; "the 15th" alone is the next such day of a month."""
    weekday = _WEEKDAY.search(lowered)
    if weekday is None:
        return next_day_of_month(today, day)
    wanted = WEEKDAYS[weekday.group(2)]
    year, month = today.year, today.month
    for _ in range(13):
        try:
            candidate = dt.date(year, month, day)
        except ValueError:
            candidate = None
        if candidate and candidate >= today and candidate.weekday() == wanted:
            return candidate
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return next_day_of_month(today, day)


def next_day_of_month(today: dt.date, day: int) -> dt.date | None:
    """The day of a month said alone ("the 14th"): this month's if still ahead, else the next
    month that has that day; ``None`` when none of the next three has it (the 32nd)."""
    year, month = today.year, today.month
    for _ in range(3):
        try:
            candidate = dt.date(year, month, day)
        except ValueError:
            candidate = None
        if candidate and candidate >= today:
            return candidate
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return None


def weekday_date(today: dt.date, weekday: int, qualifier: str = "") -> dt.date:
    """The day a weekday (0 Monday ... 6 Sunday) names, said on ``today``: the next such day
    after today (today's own weekday is next week's); "next" said of a day still in this week
    is the one of the week after ("next Friday" on a Monday)."""
    ahead = (weekday - today.weekday()) % 7 or 7
    target = today + dt.timedelta(days=ahead)
    if qualifier.strip() == "next" and target.isocalendar()[1] == today.isocalendar()[1]:
        target += dt.timedelta(days=7)
    return target
