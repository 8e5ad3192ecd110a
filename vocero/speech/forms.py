"""Spoken forms: how values are worded for a listener, and the text a TTS is given.

Canonical values and their spoken forms stay apart. A unit's ``text`` is what the caller is told
(and what transcripts show): "Order A123", "Thursday, December 3 at 10:00 AM". Its ``speech`` is
what the voice reads: the same words with identifiers spelled out character by character
("A 1 2 3") so a listener can tell B52 from B5 2, and with nothing in it that a TTS could take
for markup or control tokens.

Dates are worded with the month's name, never as digits, so "12/03" cannot be heard as the
third of December by one caller and the twelfth of March by another; the order of day and month
follows the locale (Babel's CLDR data), and "today" / "tomorrow" are said when they help.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date, time
from decimal import Decimal
from functools import lru_cache
from typing import Any

from babel import Locale, UnknownLocaleError
from babel.dates import format_date, format_time
from babel.numbers import format_decimal, get_currency_name
from babel.units import format_unit

DEFAULT_LOCALE = "en_US"
_SPECIAL_TOKENS = re.compile(r"<\|[^|>]{0,64}\|>|</?s>|\[/?INST\]", re.IGNORECASE)
_TAG = re.compile(r"<[^<>]{0,256}>")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f]")
_IDENTIFIER = re.compile(
    r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\b"
    r"|\b\d{2,}(?:-\d{2,})+\b"
)
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$", re.IGNORECASE)
_MERIDIEM = re.compile(r"^\d{1,2}(?:am|pm)$", re.IGNORECASE)
_MEASURE = re.compile(r"^\d+-[a-z]{3,}$")


@lru_cache(maxsize=64)
def babel_locale(tag: str) -> Locale:
    """The Babel locale of a BCP 47 tag (``en-US``); unknown tags read as American English."""
    try:
        return Locale.parse(tag.replace("-", "_"))
    except (UnknownLocaleError, ValueError, TypeError):
        return Locale.parse(DEFAULT_LOCALE)


def warm_locale(tag: str) -> None:
    """Load a locale's CLDR data now: Babel unpickles it on first use (a quarter of a second
    for en-US on this machine, on whichever thread asks), so the server calls this for every
    profile's locale while it starts and no caller's first read-out waits for it."""
    day = date(2000, 1, 3)
    spoken_date(day, locale=tag, today=date(2000, 1, 2))
    spoken_date(day, locale=tag)
    spoken_time(time(9, 30), locale=tag)
    spoken_amount(Decimal("1.50"), "USD", locale=tag)
    spoken_quantity(2, "duration-day", locale=tag)


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


def spoken_date(day: date, *, locale: str = "en-US", today: date | None = None) -> str:
    """A date a listener cannot misread: weekday, day and month by name, the year only when it
    is not this year, and "tomorrow, December 2" when the relative word helps."""
    loc = babel_locale(locale)
    with_year = today is None or day.year != today.year
    pattern = _date_pattern(str(loc), with_year)
    worded = plain_spaces(str(format_date(day, pattern, locale=loc)))
    relative = relative_day(day, today, locale)
    if relative:
        pattern = _date_pattern(str(loc), with_year, weekday=False)
        without_weekday = plain_spaces(str(format_date(day, pattern, locale=loc)))
        return f"{relative}, {without_weekday}"
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
    """A time of day in the locale's clock: "4:30 PM" in en-US, "16:30" in en-GB."""
    return plain_spaces(str(format_time(moment, "short", locale=babel_locale(locale))))


def plain_spaces(text: str) -> str:
    """CLDR puts no-break spaces in times and numbers; units carry ordinary spaces."""
    return text.replace("\u202f", " ").replace("\xa0", " ")


def spoken_quantity(value: float | int | Decimal, unit: str, *, locale: str = "en-US") -> str:
    """A number with its unit (a CLDR unit id such as ``duration-day``), e.g. "30 days"."""
    return plain_spaces(str(format_unit(value, unit, locale=babel_locale(locale))))


def spoken_amount(value: float | int | Decimal, currency: str, *, locale: str = "en-US") -> str:
    """An amount said the way it is heard: "25 US dollars", never "$25.00" read symbol by
    symbol."""
    loc = babel_locale(locale)
    number = plain_spaces(str(format_decimal(value, locale=loc)))
    name = str(get_currency_name(currency, count=value, locale=loc))
    return f"{number} {name}"


def count_word(count: int, *, locale: str = "en-US") -> str:
    """Small counts in words ("two appointments"); larger ones as digits."""
    words = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    if babel_locale(locale).language == "en" and 0 <= count < len(words):
        return words[count]
    return str(count)


def spell_identifier(value: str) -> str:
    """An identifier character by character: ``APT-1001`` -> ``A P T, 1 0 0 1``."""
    groups = [g for g in re.split(r"[-\s_/.]+", value) if g]
    return ", ".join(" ".join(group) for group in groups)


def speech_text(text: str) -> str:
    """What the TTS is given for ``text``: markup and control tokens neutralised, identifiers
    spelled out. Plain text for plain-text engines; use :func:`escape_ssml` on top for SSML."""
    clean = neutralise(text)
    return _IDENTIFIER.sub(_spelled, clean)


def neutralise(text: str) -> str:
    """Text that can never become markup or a model control token: no tags, no special tokens,
    no control or bidi characters; a stray ``<``, ``>`` or ``&`` is worded or dropped."""
    clean = unicodedata.normalize("NFKC", text)
    clean = _CONTROL.sub(" ", clean)
    clean = _SPECIAL_TOKENS.sub(" ", clean)
    clean = _TAG.sub(" ", clean)
    clean = clean.replace("&", " and ").replace("<", " ").replace(">", " ")
    clean = re.sub(r"[{}\[\]|\\`]", " ", clean)
    return " ".join(clean.split())


def escape_ssml(text: str) -> str:
    """XML-escaped text for an SSML engine: retrieved wording stays text, never elements."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        .replace('"', "&quot;").replace("'", "&apos;")
    )


def _spelled(match: re.Match[str]) -> str:
    token = match.group(0)
    if _ORDINAL.match(token) or _MERIDIEM.match(token) or _MEASURE.match(token):
        return token
    return spell_identifier(token)
