"""Deterministic extraction of typed argument values from one transcribed utterance.

A small model copies identifiers and does date arithmetic badly; these rules do both exactly.
Each extractor takes the utterance (as a speech recogniser prints it) and returns a canonical value
or ``None``: identifiers upper-cased without separators, dates as ``YYYY-MM-DD`` resolved against
``today``, times as ``HH:MM`` on a 24-hour clock, free-text phrases as said.
"""

from __future__ import annotations

import datetime as dt
import re

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

_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_RE = r"(\d{1,2})(?:st|nd|rd|th)?"
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_DAY = re.compile(rf"\b({_MONTH_RE})\.?\s+{_DAY_RE}\b", re.IGNORECASE)
_DAY_OF_MONTH = re.compile(rf"\b(?:the\s+)?{_DAY_RE}\s+(?:of\s+)?({_MONTH_RE})\b", re.IGNORECASE)
_WEEKDAY = re.compile(rf"\b(next\s+|this\s+|on\s+)?({'|'.join(_WEEKDAYS)})\b", re.IGNORECASE)
_IN_DAYS = re.compile(r"\bin\s+(\d+|[a-z]+)\s+days?\b", re.IGNORECASE)

_MERIDIEM = r"(a\.?\s?m\.?|p\.?\s?m\.?)"
_CLOCK = re.compile(rf"\b(\d{{1,2}})(?:[:.](\d{{2}}))?\s*{_MERIDIEM}(?=\W|$)", re.IGNORECASE)
_CLOCK_24 = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_CLOCK_PART = re.compile(
    r"\b(?:at\s+)?(\d{1,2})(?:[:.](\d{2}))?\s+in\s+the\s+(morning|afternoon|evening)\b",
    re.IGNORECASE,
)
_AT_HOUR = re.compile(r"\bat\s+(\d{1,2})(?:[:.](\d{2}))?\b(?!\s*(?:st|nd|rd|th|days?))")
_NAMED_TIMES = {"noon": "12:00", "midday": "12:00", "midnight": "00:00"}

# An optional letter prefix ("A123", "ap-7", or "A 123" when capitals are spaced off by the
# recogniser, never "my 41"), digits with dashes or thousands commas, an optional letter suffix.
_ID_TOKEN = r"(?:(?-i:[A-Z]{1,3})[-\s]|[A-Za-z]{1,3}-?)?\d(?:[\d-]|,(?=\d{3}))*[A-Za-z]?"
_WHEN_WORDS = re.compile(
    r"\b(?:today|tonight|tomorrow|day after tomorrow|this (?:morning|afternoon|evening|week)"
    r"|next (?:week|month|\w+day)|(?:on |this )?(?:monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday)(?: (?:morning|afternoon|evening))?|morning|afternoon|evening"
    r"|in (?:\d+|[a-z]+) (?:minutes?|hours?|days?|weeks?)|later today"
    r"|end of (?:the )?(?:day|week))\b",
    re.IGNORECASE,
)
_REASON = re.compile(
    r"\b(?:about|regarding|concerning|re|to discuss|to talk about|on the subject of)\s+(.+)",
    re.IGNORECASE,
)


def date_in(text: str, today: dt.date) -> str | None:
    """The first calendar date the utterance names, as ``YYYY-MM-DD``."""
    found = _ISO_DATE.search(text)
    if found:
        return found.group(0)
    lowered = text.lower()
    for pattern, month_group, day_group in ((_MONTH_DAY, 1, 2), (_DAY_OF_MONTH, 2, 1)):
        match = pattern.search(lowered)
        if match:
            return _next_date(today, _MONTHS[match.group(month_group)], int(match.group(day_group)))
    if "day after tomorrow" in lowered:
        return (today + dt.timedelta(days=2)).isoformat()
    if re.search(r"\btomorrow\b", lowered):
        return (today + dt.timedelta(days=1)).isoformat()
    if re.search(r"\btoday\b|\btonight\b", lowered):
        return today.isoformat()
    weekday = _WEEKDAY.search(lowered)
    if weekday:
        return _weekday_date(today, _WEEKDAYS.index(weekday.group(2)), weekday.group(1) or "")
    days = _IN_DAYS.search(lowered)
    if days:
        count = _number(days.group(1))
        return (today + dt.timedelta(days=count)).isoformat() if count is not None else None
    return None


def time_in(text: str) -> str | None:
    """The first clock time the utterance names, as ``HH:MM``."""
    lowered = text.lower()
    match = _CLOCK.search(lowered)
    if match:
        hour, minute = int(match.group(1)) % 12, int(match.group(2) or 0)
        if match.group(3).startswith("p"):
            hour += 12
        return f"{hour:02d}:{minute:02d}" if hour < 24 and minute < 60 else None
    match = _CLOCK_PART.search(lowered)
    if match:
        hour, minute = int(match.group(1)) % 12, int(match.group(2) or 0)
        hour += 0 if match.group(3) == "morning" else 12
        return f"{hour:02d}:{minute:02d}"
    for word, value in _NAMED_TIMES.items():
        if re.search(rf"\b{word}\b", lowered):
            return value
    match = _CLOCK_24.search(lowered)
    if match:
        return f"{int(match.group(1)):02d}:{match.group(2)}"
    match = _AT_HOUR.search(lowered)
    if match:
        hour = int(match.group(1))
        # Without a.m./p.m., a small hour is an afternoon hour in office talk ("at 4").
        hour = hour + 12 if 1 <= hour <= 7 else hour
        return f"{hour:02d}:{int(match.group(2) or 0):02d}" if hour < 24 else None
    return None


def identifier_in(text: str, noun: str, pattern: str | None = None) -> str | None:
    """The identifier said after ``noun`` ("order A123", "order number 5582", "my 41 order")."""
    cleaned = _mask_dates_and_times(text)
    stem = re.escape(noun.lower().rstrip("s"))
    candidates = [
        rf"\b{stem}s?\s+(?:number\s+|no\.?\s+|#\s*|id\s+)?({_ID_TOKEN})\b",
        rf"\b({_ID_TOKEN})\s+{stem}s?\b",
        rf"\b{stem}s?\b.*?\b(?:it'?s|is|number)\s+({_ID_TOKEN})\b",
    ]
    for regex in candidates:
        match = re.search(regex, cleaned, re.IGNORECASE)
        if match:
            value = _canonical_id(match.group(1), pattern)
            if value:
                return value
    return None


def when_phrase(text: str) -> str | None:
    """The span that says when ("tomorrow at 10 am", "next week", "on Monday at 3 pm")."""
    spans = [m.span() for m in _WHEN_WORDS.finditer(text)]
    spans += [m.span() for m in _CLOCK.finditer(text)]
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


def _mask_dates_and_times(text: str) -> str:
    masked = text
    for pattern in (_ISO_DATE, _MONTH_DAY, _DAY_OF_MONTH, _CLOCK, _CLOCK_24, _CLOCK_PART):
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    return re.sub(r"\bat\s+\d{1,2}\b", lambda m: " " * len(m.group(0)), masked)


def _canonical_id(raw: str, pattern: str | None) -> str | None:
    """Separators dropped and upper case; with a pattern, the first spelling it accepts, trying
    a dash between letters and digits ("APT 1001" -> "APT-1001") and the pattern's literal prefix
    before bare digits ("1001" -> "APT-1001")."""
    joined = re.sub(r"[\s,-]", "", raw).upper()
    if not pattern:
        return joined if any(c.isdigit() for c in joined) else None
    variants = [joined, raw.upper(), raw, re.sub(r"^([A-Z]+)(\d)", r"\1-\2", joined)]
    prefix = re.match(r"\^?([A-Za-z]+-?)(?=[\[(\\])", pattern)
    if prefix and joined.isdigit():
        variants.append(prefix.group(1) + joined)
    return next((v for v in variants if re.fullmatch(pattern, v)), None)


def _next_date(today: dt.date, month: int, day: int) -> str | None:
    for year in (today.year, today.year + 1):
        try:
            candidate = dt.date(year, month, day)
        except ValueError:
            return None
        if candidate >= today:
            return candidate.isoformat()
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
