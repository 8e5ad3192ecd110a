"""How a date and a time are said, the one rule every plane that speaks follows: the read-back
of a proposal (policy), the read-out of a result (speech) and the agent's questions, so the
caller hears "Friday, December 4 at 4 PM" the same way from each of them.

Dates are worded with the month's name, never as digits ("12/03" could be the third of
December or the twelfth of March), in the locale's order of day and month (Babel's CLDR data),
with the weekday, the year only when it is not this year, and "today" / "tomorrow" when they
help (not in a read-back: there the weekday the caller said is named). A time follows the
locale's clock: "4:30 PM" in en-US, "16:30" in en-GB; on the hour a 12-hour clock says "4 PM",
as people do, not "4:00 PM".
"""

from __future__ import annotations

import re
from datetime import date, time
from functools import lru_cache
from typing import Any

from babel import Locale, UnknownLocaleError
from babel.dates import format_date, format_time

DEFAULT_LOCALE = "en_US"


@lru_cache(maxsize=64)
def babel_locale(tag: str) -> Locale:
    """The Babel locale of a BCP 47 tag (``en-US``); unknown tags read as American English."""
    try:
        return Locale.parse(tag.replace("-", "_"))
    except (UnknownLocaleError, ValueError, TypeError):
        return Locale.parse(DEFAULT_LOCALE)


def plain_spaces(text: str) -> str:
    """CLDR puts no-break spaces in times and numbers; units carry ordinary spaces."""
    return text.replace("\u202f", " ").replace("\xa0", " ")


def relative_day(day: date, today: date | None, locale: str) -> str:
    """"today", "tomorrow", "yesterday" (in the locale's words) or "" when none applies."""
    if today is None:
        return ""
    offset = (day - today).days
    if offset not in (-1, 0, 1):
        return ""
    words: Any = babel_locale(locale)._data["date_fields"]["day"]["relative"]
    word = words.get(offset, "")
    return str(word)


def spoken_date(
    day: date, *, locale: str = "en-US", today: date | None = None, relative: bool = True
) -> str:
    """A date a listener cannot misread: weekday, day and month by name, the year only when it
    is not this year, and "tomorrow, December 2" when the relative word helps (``relative``;
    a read-back keeps the weekday: the caller who said "Thursday" confirms "Thursday")."""
    loc = babel_locale(locale)
    with_year = today is None or day.year != today.year
    pattern = _date_pattern(str(loc), with_year)
    worded = plain_spaces(str(format_date(day, pattern, locale=loc)))
    relative_word = relative_day(day, today, locale) if relative else ""
    if relative_word:
        pattern = _date_pattern(str(loc), with_year, weekday=False)
        without_weekday = plain_spaces(str(format_date(day, pattern, locale=loc)))
        return f"{relative_word}, {without_weekday}"
    return worded


@lru_cache(maxsize=128)
def _date_pattern(locale: str, with_year: bool, weekday: bool = True) -> str:
    """The locale's full date pattern, without the year and/or weekday when asked."""
    pattern = str(Locale.parse(locale).date_formats["full"].pattern)
    if not with_year:
        pattern = re.sub(r"[\s,]*(?:'[^']*'\s*)?\by+\b", "", pattern).strip(" ,")
    if not weekday:
        pattern = re.sub(r"E+[\s,.]*", "", pattern).strip(" ,")
    return pattern


def spoken_time(moment: time, *, locale: str = "en-US") -> str:
    """A time of day in the locale's clock: "4:30 PM" and "4 PM" in en-US, "16:30" and
    "16:00" in en-GB."""
    return plain_spaces(str(format_time(moment, _time_pattern(locale, moment.minute == 0),
                                        locale=babel_locale(locale))))


@lru_cache(maxsize=128)
def _time_pattern(locale: str, on_the_hour: bool) -> str:
    """The locale's short time pattern; on the hour without the minutes when its clock has a
    day period ("h:mm a" -> "h a"): a 24-hour clock keeps them ("16:00", never "16")."""
    pattern = str(babel_locale(locale).time_formats["short"].pattern)
    if on_the_hour and "a" in pattern.replace("'", ""):
        pattern = re.sub(r"[:.]mm", "", pattern)
    return pattern
