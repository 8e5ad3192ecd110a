"""Reading the time words of one line: what day, part of the day, clock time or delay it names.

Sans-IO and deterministic. :func:`read` turns a text ("kal shaam 4 baje", "tomorrow at 4pm",
"రేపు సాయంత్రం నాలుగు గంటలకు", "in 10 minutes") into a :class:`Reading`; its
:meth:`Reading.concepts` are what the call-back rule compares ("share a time word") and what the
due time is resolved from. A number is a clock time only with a clock word around it ("4pm",
"4 baje", "at 4", "tomorrow 4"); on its own it is not a time word (order numbers are not times).
Month days ("December 14th", "March the 3rd", "the 5th of January 2027") and a day of the month
said alone ("on the 14th", "the 5th, please") are read by the one reader of dates
(:func:`vocero.contracts.values.mark_days`, ADR-0039), as every other reader reads them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from vocero.contracts import values
from vocero.followups import lexicon as lx

_DIGITS = str.maketrans("०१२३४५६७८९౦౧౨౩౪౫౬౭౮౯", "01234567890123456789")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[t ](\d{1,2}):(\d{2})(?::\d{2}(?:\.\d+)?)?"
                  r"(?:z|[+-]\d{2}:?\d{2})?)?\b")
_MERIDIEM = re.compile(r"(?<![a-z])([ap])\.\s?m\.?(?![a-z])")
_BOUNDARY = re.compile(r"(?<=\d)(?=[^\d\s:.,])|(?<=[^\d\s:.,\-])(?=\d)")
_SPLIT = re.compile(r"[\s,;!?\u00bf\u00a1\"\u201c\u201d()\[\]{}\u2026\u0964|/\-\u2013\u2014]+")
_CLOCK = re.compile(r"^([01]?\d|2[0-3])[:.]([0-5]\d)$")
_NUMBER = re.compile(r"^\d{1,3}$")
_CLAUSES = re.compile(r"[,;!?\u0964]|\.(?:\s|$)|\s[-\u2013\u2014]\s|\bbut\b")
"""Clause boundaries: a negation never reaches past one."""
_AFTER_A_HALF = frozenset({
    "hour", "hours", "hr", "hrs", "minute", "minutes", "min", "mins", "day", "days", "week",
    "weeks", "month", "months", "year", "years"})
"""Units after "half <number>" that make it an amount, not half past an hour."""
_DATE_WORD = re.compile(
    r"(?:iso:(?P<iso_year>\d{4}):|monthday:)(?P<month>\d{1,2}):(?P<day>\d{1,2})"
    r"(?::(?P<year>\d{4}))?"
)
_DAY_WORD = re.compile(r"dayofmonth:(\d{1,2})")
"""The one word a date or a day of the month stands for (:func:`_iso_words`,
:func:`_date_word`)."""
_NATIVE = re.compile(r"[\u0900-\u097f\u0c00-\u0c7f]")
_NATIVE_STEM_MIN = 2
"""Native-script words also match as stems (case endings attach to them)."""


@dataclass(frozen=True, slots=True)
class Clock:
    hour: int
    """As said: 0-23 (``16:00``) or 1-12 (``4``, ``4pm``)."""
    minute: int = 0
    meridiem: str = ""
    """``am``, ``pm``, ``24h`` (written as a 24-hour clock: "09:00", "16:30") or ``""`` when the
    words did not say."""

    @property
    def h12(self) -> int:
        return self.hour % 12 or 12


@dataclass(frozen=True, slots=True)
class Reading:
    """The time words of one text, by slot, in the order they were said."""

    days: tuple[str, ...] = ()
    """``today``, ``tomorrow``, ``day_after``, weekday codes (``fri``), ``week_next``,
    ``date:MM-DD`` (a month day), ``dom:N`` (a day of the month said alone, "the 14th") and
    ``in_days:N``."""
    parts: tuple[str, ...] = ()
    clocks: tuple[Clock, ...] = ()
    delays: tuple[int, ...] = ()
    """"in N minutes" as minutes."""
    years: tuple[tuple[int, int], ...] = field(default=())
    """``(position in days, year)`` of the month days said with their year ("March 3, 2027",
    "2027-03-03")."""
    next_days: frozenset[int] = frozenset()
    """The positions in :attr:`days` of weekdays said after "next" ("next Friday"): the due time
    reads them as the shared reader does (ADR-0040); the call-back rule compares the weekday."""

    def __bool__(self) -> bool:
        return bool(self.days or self.parts or self.clocks or self.delays)

    def concepts(self) -> frozenset[str]:
        """What the call-back rule compares: one string per time word, prefixed by its slot."""
        found = {f"day:{d}" for d in self.days} | {f"part:{p}" for p in self.parts}
        found |= {f"hour:{c.h12}" for c in self.clocks}
        found |= {f"in:{m}" for m in self.delays}
        if {"noon", "midnight"} & set(self.parts):
            found.add("hour:12")
        return frozenset(found)

    def slots(self) -> dict[str, frozenset[str]]:
        """Concepts grouped by slot (``day``, ``part``, ``hour``, ``in``)."""
        grouped: dict[str, set[str]] = {}
        for concept in self.concepts():
            slot, _, value = concept.partition(":")
            grouped.setdefault(slot, set()).add(value)
        return {slot: frozenset(values) for slot, values in grouped.items()}


def tokens(text: str) -> list[str]:
    """Lower-cased words with native digits made ASCII and "4pm" split into "4", "pm"."""
    text = unicodedata.normalize("NFC", text).casefold().translate(_DIGITS)
    text = text.replace("\u2019", "'").replace("`", "'")
    text = _ISO.sub(_iso_words, text)
    text = _MERIDIEM.sub(lambda m: f" {m.group(1)}m ", text)
    text = _BOUNDARY.sub(" ", text)
    words = []
    for raw in _SPLIT.split(text):
        word = raw.strip(".'")
        if word.endswith("'s"):
            word = word[:-2]
        if word:
            words.append(word)
    return words


def _iso_words(match: re.Match[str]) -> str:
    year, month, day, hour, minute = match.groups()
    words = f" iso:{year}:{month}:{day} "
    return words + (f" {int(hour)}:{minute} " if hour is not None else "")


def read(text: str) -> Reading:
    """Every time word of ``text`` that is not ruled out in its own clause ("not tomorrow",
    "kal nahi", "Friday doesn't work")."""
    text = unicodedata.normalize("NFC", text).translate(_DIGITS)
    # English clock times said in words with their minutes ("eleven fifteen", "two thirty",
    # "twenty five past four") as digits first: read word by word, the minutes were lost.
    text = values.spoken_times(text)
    words: list[str] = []
    for clause in _CLAUSES.split(values.mark_days(text, _date_word)):
        words.extend(_unnegated(tokens(clause)))
        words.append("")
    return _Reader(words).run()


def _date_word(month: int | None, day: int, year: int | None) -> str:
    """One word for a month day or a day of the month the one reader of dates found: the
    clause splitting and the negations see it as one time word ("not on the 14th")."""
    if month is None:
        return f"dayofmonth:{day}"
    return f"monthday:{month}:{day}" + (f":{year}" if year is not None else "")


def _unnegated(words: list[str]) -> list[str]:
    """``words`` with the time words a local negation rules out blanked (indices kept)."""
    out = list(words)
    for i, word in enumerate(words):
        if word in lx.NEGATE_NEXT:
            ahead = i + 2 if i + 1 < len(words) and words[i + 1] in lx.LEADS else i + 1
            for j in range(i + 1, min(ahead + 1, len(words))):
                out[j] = ""
            if ahead < len(words) and _is_clock_word(words, ahead):
                for j in range(ahead, min(ahead + 2, len(words))):
                    out[j] = ""
        if word in lx.NEGATE_PREVIOUS or (word == "not" and i >= 1
                                          and words[i - 1] in ("is", "are")):
            back = i - 2 if word == "not" else i - 1
            if back >= 0 and (_in(lx.OCLOCK, words[back]) or words[back] in lx.MERIDIEM):
                back -= 1
            for j in range(max(back, 0), i):
                out[j] = ""
    return out


def _is_clock_word(words: list[str], i: int) -> bool:
    """A number followed by its clock word ("4 pm", "4 baje"): ruled out together."""
    return i + 1 < len(words) and (_in(lx.OCLOCK, words[i + 1]) or words[i + 1] in lx.MERIDIEM)


def has_native_script(text: str) -> bool:
    return _NATIVE.search(text) is not None


def lookup(table: dict[str, str], word: str) -> str | None:
    """``word`` in ``table``; native-script words also by stem ("సాయంత్రానికి")."""
    found = table.get(word)
    if found is not None or not _NATIVE.search(word):
        return found
    for key, value in table.items():
        if not _NATIVE.search(key) or len(key) < _NATIVE_STEM_MIN:
            continue
        if word.startswith(key) or (key.endswith("\u0c02") and len(key) > 3
                                    and word.startswith(key[:-1])):
            return value
    return None


def _in(words: frozenset[str], word: str) -> bool:
    if word in words:
        return True
    if not _NATIVE.search(word):
        return False
    return any(_NATIVE.search(w) and len(w) >= _NATIVE_STEM_MIN and word.startswith(w)
               for w in words)


class _Reader:
    """One left-to-right pass; words consumed by a phrase are marked ``used``."""

    def __init__(self, words: list[str]) -> None:
        self.w = words
        self.days: list[str] = []
        self.parts: list[str] = []
        self.clocks: list[Clock] = []
        self.delays: list[int] = []
        self.years: list[tuple[int, int]] = []
        self.next_days: set[int] = set()
        self.used: set[int] = set()

    def at(self, index: int) -> str:
        return self.w[index] if 0 <= index < len(self.w) else ""

    def run(self) -> Reading:
        for index in range(len(self.w)):
            if index not in self.used:
                self._word(index)
        return Reading(days=tuple(self.days), parts=tuple(self.parts), clocks=tuple(self.clocks),
                       delays=tuple(self.delays), years=tuple(self.years),
                       next_days=frozenset(self.next_days))

    def _word(self, i: int) -> None:
        word = self.at(i)
        if self._phrase(i):
            return
        if (date := _DATE_WORD.fullmatch(word)) is not None:
            self._date(int(date["month"]), int(date["day"]), date["iso_year"] or date["year"])
            return
        if (alone := _DAY_WORD.fullmatch(word)) is not None:
            self.days.append(f"dom:{int(alone[1])}")
            return
        if word in lx.HALF_HOUR:
            self.delays.append(30)
            return
        for table, found in ((lx.DAYS, self.days), (lx.WEEKDAYS, self.days),
                             (lx.PARTS, self.parts)):
            named = lookup(table, word)
            if named is not None:
                found.append(named)
                if table is lx.WEEKDAYS and self.at(i - 1) in lx.NEXT:
                    self.next_days.add(len(self.days) - 1)
        if _CLOCK.match(word) or self._number(i) is not None or word in lx.HALVES:
            self._numeric(i)

    # ------------------------------------------------------------------------ phrases

    def _phrase(self, i: int) -> bool:
        first, second = self.at(i), self.at(i + 1)
        if (first, second) == ("day", "after") and self.at(i + 2) in ("tomorrow", "tmrw"):
            self.days.append("day_after")
            self.used |= {i + 1, i + 2}
            return True
        if (first, second) in lx.NEXT_WEEK:
            self.days.append("week_next")
            self.used.add(i + 1)
            return True
        if (first, second) in (("ee", "roju"), ("ee", "rooju")):
            self.days.append("today")
            self.used.add(i + 1)
            return True
        if first in ("half", "quarter") and second in ("past", "to"):
            return self._fraction(i, first, second)
        if first == "half":
            return self._half_hour(i)
        return False

    def _half_hour(self, i: int) -> bool:
        """British "half seven": half past seven (not "half an hour", "half 2 hours")."""
        hour = self._number(i + 1)
        if hour is None or not 1 <= hour <= 12 or self.at(i + 2) in _AFTER_A_HALF:
            return False
        self.clocks.append(self._with_meridiem(Clock(hour, 30), i + 2))
        self.used.add(i + 1)
        return True

    def _fraction(self, i: int, first: str, second: str) -> bool:
        """"half past four", "quarter past four", "quarter to five"."""
        hour = self._number(i + 2)
        if hour is None or not 1 <= hour <= 12 or (first, second) == ("half", "to"):
            return False
        if second == "past":
            clock = Clock(hour, 30 if first == "half" else 15)
        else:
            clock = Clock(hour - 1 or 12, 45)
        self.clocks.append(self._with_meridiem(clock, i + 3))
        self.used |= {i + 1, i + 2}
        return True

    # ------------------------------------------------------------------------ numbers

    def _number(self, i: int) -> int | None:
        word = self.at(i)
        if _NUMBER.match(word):
            return int(word)
        return lx.NUMBERS.get(word)

    def _numeric(self, i: int) -> None:
        word, after, before = self.at(i), self.at(i + 1), self.at(i - 1)
        if (clock := _CLOCK.match(word)) is not None:
            hour, minute = int(clock.group(1)), int(clock.group(2))
            written = "24h" if word.startswith("0") or hour >= 13 else ""
            self.clocks.append(self._with_meridiem(Clock(hour, minute, written), i + 1))
            return
        if self._delay(i):
            return
        value = self._number(i)
        if value is None:
            return
        digits = bool(_NUMBER.match(word))
        half = 30 if before in lx.HALF else 0
        if after in lx.MERIDIEM and 1 <= value <= 12:
            self.clocks.append(Clock(value, half, lx.MERIDIEM[after]))
            self.used.add(i + 1)
        elif _in(lx.OCLOCK, after) and 0 <= value <= 23:
            self.used.add(i + 1)
            self.clocks.append(self._with_meridiem(Clock(value, half), i + 2))
        elif self._bare_clock(i, value, digits, word, before):
            self.clocks.append(self._with_meridiem(Clock(value), i + 1))

    def _bare_clock(self, i: int, value: int, digits: bool, word: str, before: str) -> bool:
        """"at 4", "around four", "tomorrow 4": a clock hour without a clock word after it."""
        if (digits or word in lx.ENGLISH_NUMBER_WORDS) and before in lx.AT and value <= 23:
            return True
        return digits and 1 <= value <= 12 and self._near_day_word(i)

    def _with_meridiem(self, clock: Clock, i: int) -> Clock:
        word = self.at(i)
        if word in lx.MERIDIEM and 1 <= clock.hour <= 12 and clock.meridiem != "24h":
            self.used.add(i)
            return Clock(clock.hour, clock.minute, lx.MERIDIEM[word])
        return clock

    def _delay(self, i: int) -> bool:
        """"in 10 minutes", "10 minute mein", "padi nimishallo", "in an hour", "in half an hour",
        "aadhe ghante mein", "in 2 days"."""
        unit, before = self.at(i + 1), self.at(i - 1)
        per = 1 if _in(lx.MINUTE_UNITS, unit) else 60 if _in(lx.HOUR_UNITS, unit) else 0
        days = unit in lx.DAY_UNITS
        if not per and not days:
            return False
        postposition = self.at(i + 2) in lx.RELATIVE_AFTER
        halved = self.at(i) in lx.HALVES or before in lx.HALVES
        opener = self.at(i - 2) if before in lx.HALVES else before
        marked = opener in ("in", "within", "after") or postposition \
            or unit.endswith(("lo", "లో")) or _NATIVE.search(unit) is not None
        value = self._number(i)
        if not marked or (value is None and not halved):
            return False
        if days:
            self.days.append(f"in_days:{value}")
        else:
            minutes = 30 if halved and per == 60 else (value or 0) * per
            if minutes <= 0:
                return False
            self.delays.append(minutes)
        self.used |= {i + 1, i + 2} if postposition else {i + 1}
        return True

    def _near_day_word(self, i: int) -> bool:
        for j in (i - 1, i + 1):
            word = self.at(j)
            if word and (lookup(lx.DAYS, word) or lookup(lx.WEEKDAYS, word)
                         or lookup(lx.PARTS, word)):
                return True
        return False

    def _date(self, month: int, day: int, year: str | None) -> None:
        """A month day, with the year when one was said."""
        if year:
            self.years.append((len(self.days), int(year)))
        self.days.append(f"date:{month:02d}-{day:02d}")
