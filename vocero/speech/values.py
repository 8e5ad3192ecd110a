"""Critical values (docs/grounding.md "Planning units"): the numbers, amounts, dates, times,
weekdays and identifiers of a text, each in a canonical form, and its restriction words.

The check is lexical by design: every critical value of a spoken unit must be found, by its
canonical form, in the unit's evidence (its claims' text, this turn's tool results, the caller's
own words). Canonical forms make "December 3", "2026-12-03" and "Thursday, December 3" agree
(a date; a weekday derived from it), "4:30 PM" and "16:30" agree, "thirty days" and "30 days"
agree, "apt-1001" and "APT 1001" agree. What cannot be read unambiguously is kept as written, so
it needs the same words in the evidence.

Dates are read by the product's one reader of spoken dates (:mod:`vocero.contracts.values`,
ADR-0039, ADR-0040), so a date the agent says and the date in the evidence compare by the
reading the rest of the product gives them: a month day by the month and day it reads ("March
3rd", "the third of March", "March the 3rd"), with its year when one is said; a relative day
("tomorrow"), a day of the month alone ("the 14th") and "next Tuesday" by the day they resolve
to from the caller's today. A weekday said alone stays a weekday ("Friday, December 4" is one
day, not two).

Extraction goes from the most specific shape to the least (times, dates, amounts, identifiers,
numbers) and a matched span is not read again, so "10:30" is one time and not two numbers.
Month, weekday, relative-day, number and named-time words are the English lexicon's
(:mod:`vocero.contracts.lexicon`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Literal

from vocero.contracts.lexicon.base import WEEKDAY_CODES, alternation
from vocero.contracts.lexicon.en import LEXICON
from vocero.contracts.values import date_in, month_day_in
from vocero.contracts.values.dates import BARE_DAY
from vocero.contracts.values.dates import WEEKDAYS as FULL_WEEKDAYS

ValueKind = Literal["number", "amount", "date", "time", "weekday", "identifier"]

RESTRICTION_WORDS = ("not", "no", "never", "only", "unless", "except", "without")

_EN = LEXICON.calendar
MONTHS = {**_EN.months, **_EN.month_abbreviations}
WEEKDAYS = {**_EN.weekdays, **_EN.weekday_abbreviations}
RELATIVE_DAYS = _EN.relative_days
UNITS_WORDS = {w: v for w, v in LEXICON.numbers.cardinals.items() if v < 20 and w != "one"}
""""one" is left out on purpose: "one of our team", "the one on Friday" carry no quantity."""
TENS_WORDS = {w: v for w, v in LEXICON.numbers.cardinals.items() if v >= 20}
ORDINAL_WORDS = LEXICON.numbers.ordinals
NAMED_TIMES = LEXICON.clock.named_times
_MEASURES = """second minute hour day night week month year inch foot feet mile meter metre km kg
pound degree step page piece pack seat room person star point time"""
MEASURE_WORDS = frozenset(_MEASURES.split())
"""Words that make ``24-hour`` or ``3-day`` a number with its unit, not an identifier."""
CURRENCIES = {
    "$": "USD", "usd": "USD", "dollar": "USD", "dollars": "USD", "€": "EUR", "eur": "EUR",
    "euro": "EUR", "euros": "EUR", "£": "GBP", "gbp": "GBP", "pound": "GBP", "pounds": "GBP",
    "₹": "INR", "inr": "INR", "rupee": "INR", "rupees": "INR",
}  # fmt: skip

_MONTH = alternation(MONTHS)
_WEEKDAY = alternation(WEEKDAYS)
_RELATIVE = alternation(RELATIVE_DAYS)
_NAMED_TIME = alternation(NAMED_TIMES)
_NUMBER_WORD = alternation([*UNITS_WORDS, *TENS_WORDS])
_ORDINAL_WORD = alternation(ORDINAL_WORDS)
_DAY_TENS = alternation(w for w, v in TENS_WORDS.items() if v <= 30)
"""Tens a day of the month is said with ("twenty-first", "thirtieth")."""
_DAY = rf"(?:\d{{1,2}}(?:st|nd|rd|th)?|(?:(?:{_DAY_TENS})[\s-])?(?:{_ORDINAL_WORD}))"
_MERIDIEM = r"(?P<mer>a\.?\s?m\.?|p\.?\s?m\.?)(?![a-z])"
_YEAR = r"(?P<y>(?:19|20|21)\d{2})"
"""A year said after a month day: the years the one reader reads."""

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso", re.compile(
        r"\b(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})(?:[T ](?P<h>\d{2}):(?P<m>\d{2})"
        r"(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b")),
    ("time", re.compile(
        rf"\b(?P<h>[01]?\d|2[0-3])(?::(?P<m>[0-5]\d))?\s?{_MERIDIEM}", re.IGNORECASE)),
    ("time", re.compile(r"\b(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?::[0-5]\d)?\b")),
    ("time", re.compile(rf"\b(?P<word>{_NAMED_TIME})\b", re.IGNORECASE)),
    ("md", re.compile(
        rf"\b(?P<mo>{_MONTH})\.?\s+(?:the\s+)?(?P<d>{_DAY})\b(?:,?\s+{_YEAR}\b)?",
        re.IGNORECASE)),
    ("dm", re.compile(
        rf"\b(?P<d>{_DAY})\s+(?:of\s+)?(?P<mo>{_MONTH})\b\.?(?:,?\s+{_YEAR}\b)?",
        re.IGNORECASE)),
    ("slash", re.compile(r"\b(?P<a>\d{1,2})/(?P<b>\d{1,2})(?:/(?P<y>\d{2,4}))?\b")),
    ("relative", re.compile(rf"\b(?P<rel>{_RELATIVE})\b", re.IGNORECASE)),
    ("resolved", re.compile(rf"\bnext\s+(?:{alternation(FULL_WEEKDAYS)})\b", re.IGNORECASE)),
    ("resolved", BARE_DAY),
    ("weekday", re.compile(rf"\b(?P<wd>{_WEEKDAY})(?:s|'s)?\b\.?", re.IGNORECASE)),
    ("amount", re.compile(
        r"(?P<cur>[$€£₹])\s?(?P<v>\d[\d,]*(?:\.\d+)?)|"
        r"\b(?P<v2>\d[\d,]*(?:\.\d+)?)\s?(?P<cur2>usd|eur|gbp|inr|dollars?|euros?|pounds?|"
        r"rupees?)\b|\b(?P<cur3>usd|eur|gbp|inr)\s?(?P<v3>\d[\d,]*(?:\.\d+)?)",
        re.IGNORECASE)),
    ("identifier", re.compile(
        r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\b")),
    ("identifier", re.compile(r"\b[A-Z]{1,4}\s\d{2,}\b")),
    ("digits", re.compile(r"\b\d{2,}(?:[-\s]\d{2,})+\b")),
    ("number", re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:st|nd|rd|th)?\b")),
    ("words", re.compile(
        rf"\b(?:(?P<tens>{'|'.join(TENS_WORDS)})(?:[\s-](?P<unit>one|{'|'.join(UNITS_WORDS)}))?|"
        rf"(?P<word>{_NUMBER_WORD}))\b(?:\s+(?P<mul>hundred|thousand))?", re.IGNORECASE)),
]  # fmt: skip
_MAYBE = re.compile(
    rf"\d|[$€£₹]|\b(?:{_NAMED_TIME}|{_RELATIVE}|{_WEEKDAY}|"
    rf"{_MONTH}|{_NUMBER_WORD})",
    re.IGNORECASE,
)
"""Whether a text may hold a value at all: a cheap test before the full extraction."""
_NEGATIONS = re.compile(r"\b(?:cannot|can't|won't|n't)\b|n't\b", re.IGNORECASE)
_RESTRICTION = re.compile(rf"\b(?:{'|'.join(RESTRICTION_WORDS)})\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Value:
    """One critical value: its kind, its canonical form and the words it was read from."""

    kind: ValueKind
    canonical: str
    raw: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.canonical)


def critical_values(text: str, *, today: date | None = None) -> list[Value]:
    """Every critical value of ``text``, in order. ``today`` (the caller's date) resolves
    "today", "tomorrow" and "yesterday" to dates; without it they stay words."""
    if _MAYBE.search(text) is None:  # most words of a tool result carry no value at all
        return []
    if len(text) <= _CACHED_CHARS:
        return list(_cached(text, today))
    return _extract(text, today)


_CACHED_CHARS = 160


@lru_cache(maxsize=8192)
def _cached(text: str, today: date | None) -> tuple[Value, ...]:
    """Short texts recur (dates, times, ids of tool results; approved claims): read once."""
    return tuple(_extract(text, today))


def _extract(text: str, today: date | None) -> list[Value]:
    found: list[tuple[int, Value]] = []
    taken: list[tuple[int, int]] = []
    for shape, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            values = list(_read(shape, match, today))
            if values:
                taken.append(span)
                found.extend((span[0], value) for value in values)
    return [value for _, value in sorted(found, key=lambda pair: pair[0])]


def evidence_values(data: Any, *, today: date | None = None) -> set[tuple[str, str]]:
    """The canonical values a tool result (any JSON value) supports: the values of its strings,
    its numbers, and the length of its lists (a list of two is evidence for "two")."""
    keys: set[tuple[str, str]] = set()
    for item in _scalars(data):
        if isinstance(item, bool):
            continue
        if isinstance(item, int | float):
            keys.add(("number", _canonical_number(Decimal(str(item)))))
            continue
        keys.update(v.key for v in critical_values(str(item), today=today))
    return expand(keys)


def text_values(texts: Iterable[str], *, today: date | None = None) -> set[tuple[str, str]]:
    keys = {v.key for text in texts for v in critical_values(text, today=today)}
    return expand(keys)


def expand(keys: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """What a set of evidence values also supports: a full date supports its month-day and its
    weekday; a time supports its hour as said on a 12- or 24-hour clock ("at 4" for 16:00); an
    amount supports its number."""
    extra: set[tuple[str, str]] = set()
    for kind, canonical in keys:
        if kind == "date" and len(canonical) == 10:
            day = date.fromisoformat(canonical)
            extra.add(("date", canonical[5:]))
            extra.add(("weekday", WEEKDAY_CODES[day.weekday()]))
        elif kind == "time":
            hour = int(canonical[:2])
            extra.update({("number", str(hour)), ("number", str(hour % 12 or 12))})
        elif kind == "amount":
            extra.add(("number", canonical.split(":", 1)[1]))
    return keys | extra


def supported(value: Value, evidence: set[tuple[str, str]]) -> bool:
    """Whether ``evidence`` (expanded canonical keys) supports ``value``. A date with a year
    needs that date; a date without one, the same month and day. An amount needs the same
    amount, or the same number where the evidence names no other currency for it."""
    if value.key in evidence:
        return True
    if value.kind != "amount":
        return False
    currency, number = value.canonical.split(":", 1)
    if ("number", number) not in evidence:
        return False
    others = {c.split(":", 1)[0] for k, c in evidence if k == "amount" and c.endswith(":" + number)}
    return not currency or not (others - {"", currency})


def unsupported(text: str, evidence: set[tuple[str, str]], *, today: date | None) -> list[Value]:
    return [v for v in critical_values(text, today=today) if not supported(v, evidence)]


def restriction_words(text: str) -> frozenset[str]:
    """The restriction words of ``text``; contractions and "cannot" count as "not"."""
    words = {w.casefold() for w in _RESTRICTION.findall(text)}
    if _NEGATIONS.search(text):
        words.add("not")
    return frozenset(words)


# ------------------------------------------------------------------------------ readers


def _read(shape: str, match: re.Match[str], today: date | None) -> Iterator[Value]:
    raw = match.group(0)
    reader = _READERS[shape]
    for kind, canonical in reader(match, today):
        yield Value(kind=kind, canonical=canonical, raw=raw)


def _time(match: re.Match[str], _: date | None) -> Iterator[tuple[ValueKind, str]]:
    groups = match.groupdict()
    if groups.get("word"):
        hour, minute = NAMED_TIMES[groups["word"].casefold()]
        yield ("time", f"{hour:02d}:{minute:02d}")
        return
    hour, minute = int(groups["h"]), int(groups.get("m") or 0)
    meridiem = (groups.get("mer") or "").casefold().replace(".", "").replace(" ", "")
    if meridiem:
        if hour > 12 or hour == 0:
            return
        hour = hour % 12 + (12 if meridiem == "pm" else 0)
    yield ("time", f"{hour:02d}:{minute:02d}")


def _iso(match: re.Match[str], _: date | None) -> Iterator[tuple[ValueKind, str]]:
    try:
        day = date(int(match["y"]), int(match["mo"]), int(match["d"]))
    except ValueError:
        return
    if match["h"] is not None:
        try:  # with an offset: the local date and time as written, not converted
            moment = datetime.fromisoformat(match.group(0).replace("Z", "+00:00"))
        except ValueError:
            return
        yield ("date", moment.date().isoformat())
        yield ("time", f"{moment.hour:02d}:{moment.minute:02d}")
        return
    yield ("date", day.isoformat())


_LEAP_YEAR = 2028
"""A year with every month day in it: a month day said without a year (February 29 too)."""


def _month_day(match: re.Match[str], _: date | None) -> Iterator[tuple[ValueKind, str]]:
    """A month day as the one reader reads it (:func:`month_day_in`): with its year, that date;
    without one, its month and day (``12-03``), which a full date in the evidence supports. A
    day no calendar has (the 30th of February) is no date: its number is read as a number."""
    said = month_day_in(match.group(0))
    if said is None:
        return
    month, day, year = said
    try:
        found = date(year if year is not None else _LEAP_YEAR, month, day)
    except ValueError:
        return
    yield ("date", found.isoformat() if year is not None else found.isoformat()[5:])


def _slash(match: re.Match[str], _: date | None) -> Iterator[tuple[ValueKind, str]]:
    """``12/03`` is ambiguous between locales: kept as written, it needs the same in evidence."""
    yield ("date", match.group(0))


def _relative(match: re.Match[str], today: date | None) -> Iterator[tuple[ValueKind, str]]:
    """A relative day: the day the one reader resolves it to ("tomorrow"); "yesterday", which
    it does not read (nothing is booked in the past), the day before ``today``. Without a today
    the words stay words: they need the same words in the evidence."""
    word = " ".join(match["rel"].casefold().split())
    if today is None:
        yield ("date", word)
        return
    ahead = RELATIVE_DAYS[word]
    day = date_in(word, today) if ahead >= 0 else (today + timedelta(days=ahead)).isoformat()
    if day is not None:
        yield ("date", day)


def _resolved(match: re.Match[str], today: date | None) -> Iterator[tuple[ValueKind, str]]:
    """A day named from today: "next Tuesday" (ADR-0040: the Tuesday of the week after when
    this week's is still ahead) and a day of the month alone ("the 14th": the next 14th), as the
    one reader resolves them. It is that date, never only a weekday or a number: evidence for
    another Tuesday, or a 14 that is no date, does not support it. Without a today the words
    stay words; a day no month has ("the 35th") is no date."""
    words = " ".join(match.group(0).casefold().split())
    if today is None:
        yield ("date", words)
        return
    day = date_in(words, today)
    if day is not None:
        yield ("date", day)


def _weekday(match: re.Match[str], _: date | None) -> Iterator[tuple[ValueKind, str]]:
    word = match["wd"].casefold()
    if word in _EN.capitalised_only and match["wd"].islower():
        return  # "sat down", "sun", "wed": short forms count only when capitalised
    yield ("weekday", WEEKDAY_CODES[WEEKDAYS[word]])


def _amount(match: re.Match[str], _: date | None) -> Iterator[tuple[ValueKind, str]]:
    symbol = match["cur"] or match["cur2"] or match["cur3"] or ""
    value = _decimal(match["v"] or match["v2"] or match["v3"] or "")
    if value is None:
        return
    yield ("amount", f"{CURRENCIES.get(symbol.casefold(), '')}:{_canonical_number(value)}")


def _identifier(match: re.Match[str], _: date | None) -> Iterator[tuple[ValueKind, str]]:
    """A token mixing letters and digits (``A123``, ``apt-1001``), but not an ordinal (``3rd``)
    nor a compound of a number and a word (``24-hour``: its number is read on its own)."""
    raw = match.group(0)
    if re.fullmatch(r"\d+(?:st|nd|rd|th)", raw, re.IGNORECASE):
        yield ("number", raw[:-2])
        return
    groups = raw.casefold().split("-")
    if len(groups) > 1 and any(g.rstrip("s") in MEASURE_WORDS for g in groups):
        return
    yield ("identifier", re.sub(r"[-\s]", "", raw).upper())


def _digits(match: re.Match[str], _: date | None) -> Iterator[tuple[ValueKind, str]]:
    raw = match.group(0)
    digits = re.sub(r"\D", "", raw)
    if len(digits) < 5:
        for part in re.findall(r"\d+", raw):
            yield ("number", _canonical_number(Decimal(part)))
        return
    yield ("identifier", digits)


def _number(match: re.Match[str], _: date | None) -> Iterator[tuple[ValueKind, str]]:
    raw = re.sub(r"(st|nd|rd|th)$", "", match.group(0), flags=re.IGNORECASE)
    value = _decimal(raw)
    if value is not None:
        yield ("number", _canonical_number(value))


def _words(match: re.Match[str], _: date | None) -> Iterator[tuple[ValueKind, str]]:
    groups = match.groupdict()
    if groups.get("tens"):
        value = TENS_WORDS[groups["tens"].casefold()]
        if groups.get("unit"):
            value += UNITS_WORDS.get(groups["unit"].casefold(), 1)  # "one" only after tens
    else:
        value = UNITS_WORDS[groups["word"].casefold()]
    multiplier = (groups.get("mul") or "").casefold()
    value *= {"hundred": 100, "thousand": 1000}.get(multiplier, 1)
    yield ("number", str(value))


_READERS = {
    "time": _time, "iso": _iso, "md": _month_day, "dm": _month_day, "slash": _slash,
    "relative": _relative, "resolved": _resolved, "weekday": _weekday, "amount": _amount,
    "identifier": _identifier, "digits": _digits, "number": _number, "words": _words,
}  # fmt: skip


def _decimal(text: str) -> Decimal | None:
    cleaned = text.replace(",", "")
    try:
        return Decimal(cleaned)
    except InvalidOperation:
        return None


def _canonical_number(value: Decimal) -> str:
    normal = value.normalize()
    text = format(normal, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _scalars(data: Any) -> Iterator[Any]:
    if isinstance(data, dict):
        for value in data.values():
            yield from _scalars(value)
    elif isinstance(data, list | tuple):
        yield len(data)
        for value in data:
            yield from _scalars(value)
    elif data is not None:
        yield data
