"""Spoken forms: how values are worded for a listener, and the text a TTS is given.

Canonical values and their spoken forms stay apart. A unit's ``text`` is what the caller is told
(and what transcripts show): "Order A123", "Thursday, December 3 at 10 AM". Its ``speech`` is
what the voice reads: the same words with identifiers spelled out character by character
("A 1 2 3") so a listener can tell B52 from B5 2, and with nothing in it that a TTS could take
for markup or control tokens.

Dates and times are said by the one rule of :mod:`vocero.contracts.spoken` (the read-back,
the questions and the follow-ups follow it too): the month by name, never as digits, in the
locale's order, "today" / "tomorrow" when they help, "4 PM" on the hour.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date, time
from decimal import Decimal

from babel.numbers import format_decimal, get_currency_name
from babel.units import format_unit

# re-exported: dates and times are said by one rule, whichever plane speaks
from vocero.contracts.spoken import DEFAULT_LOCALE as DEFAULT_LOCALE
from vocero.contracts.spoken import babel_locale as babel_locale
from vocero.contracts.spoken import plain_spaces as plain_spaces
from vocero.contracts.spoken import relative_day as relative_day
from vocero.contracts.spoken import spoken_date as spoken_date
from vocero.contracts.spoken import spoken_time as spoken_time

_SPECIAL_TOKENS = re.compile(r"<\|[^|>]{0,64}\|>|</?s>|\[/?INST\]", re.IGNORECASE)
_TAG = re.compile(r"<[^<>]{0,256}>")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f]")
_IDENTIFIER = re.compile(
    r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\b"
    r"|\b\d{2,}(?:-\d{2,})+\b"
)
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$", re.IGNORECASE)
_MERIDIEM = re.compile(r"^\d{1,2}(?:am|pm|h)$", re.IGNORECASE)
"""A time of day ("4pm", "10h"): said as written, never spelt out."""
_MEASURE = re.compile(r"^\d+-[a-z]{3,}$")


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


def identifiers_in(text: str) -> list[str]:
    """The identifiers of ``text`` as the voice spells them out ("A123", "APT-1002"), in order;
    never an ordinal, a time or a measure ("21st", "4pm", "30-day")."""
    return [m.group(0) for m in _IDENTIFIER.finditer(text) if _is_identifier(m.group(0))]


def _is_identifier(token: str) -> bool:
    return not (_ORDINAL.match(token) or _MERIDIEM.match(token) or _MEASURE.match(token))


def _spelled(match: re.Match[str]) -> str:
    token = match.group(0)
    return spell_identifier(token) if _is_identifier(token) else token
