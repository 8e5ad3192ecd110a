"""Free-text phrases of an utterance, in the caller's words: when ("tomorrow at 10 am", "next
Tuesday at half past two") and what about ("about my refund")."""

from __future__ import annotations

import re

from vocero.contracts.lexicon.base import alternation
from vocero.contracts.lexicon.en import LEXICON
from vocero.contracts.lexicon.synonyms import QUESTION_SYNONYMS
from vocero.contracts.values.dates import MONTH_DAY, WEEKDAYS
from vocero.contracts.values.numbers import NUMBER_VALUES
from vocero.contracts.values.times import (
    CLOCK,
    HOUR_WORD,
    MERIDIEM,
    MINUTE_WORDS,
    OCLOCK,
    RELATIVE_TIME,
    misheard_times,
)

_WEEKDAY = alternation(WEEKDAYS)
_RELATIVE = alternation(w for w, ahead in LEXICON.calendar.relative_days.items() if ahead >= 0)
_WHEN_WORDS = re.compile(
    rf"\b(?:{_RELATIVE}|this (?:morning|afternoon|evening|week)|next (?:week|month|\w+day)"
    rf"|(?:on |this )?(?:{_WEEKDAY})(?: (?:morning|afternoon|evening|night|lunchtime|matinee))?"
    r"|morning|afternoon|evening|tonight|matinee"
    r"|in (?:\d+|[a-z]+) (?:minutes?|hours?|days?|weeks?)|later today"
    r"|end of (?:the )?(?:day|week))\b",
    re.IGNORECASE,
)
_SPOKEN_CLOCK_SPAN = re.compile(
    rf"{RELATIVE_TIME.pattern}|{OCLOCK.pattern}"
    rf"|\b(?:{HOUR_WORD})(?:[\s-]+{MINUTE_WORDS})?\s*{MERIDIEM}(?=\W|$)",
    re.IGNORECASE,
)
_BARE_CLOCK_SPAN = re.compile(
    r"\b(?:at|around|by)\s+\d{1,2}(?:[:.]\d{2})?\b(?!\s*(?:st|nd|rd|th|days?|%)\b)", re.IGNORECASE
)
"""A bare hour after "at" ("Friday at 11"): a time in a when-phrase."""
_WORD_CLOCK_SPAN = re.compile(
    rf"\b(?:at|around|by)\s+(?:{HOUR_WORD})(?:[\s-]+{MINUTE_WORDS})?\b(?!\s+of\b)",
    re.IGNORECASE,
)
"""An hour in words after "at" ("Friday at ten in the morning", "at two thirty"): a time in a
when-phrase, as the digits are."""
_BARE_DAY_SPAN = re.compile(r"\bthe\s+\d{1,2}(?:st|nd|rd|th)\b", re.IGNORECASE)
"""A day of the month without its month ("the 14th")."""
_REASON = re.compile(
    r"\b(?:about|regarding|concerning|re|to discuss|to talk about|on the subject of|because|"
    r"since|due to)\s+(.+)",
    re.IGNORECASE,
)


def when_phrase(text: str) -> str | None:
    """The span that says when, in the caller's words ("tomorrow at 10 am", "next week", "on
    Monday at 3 pm", "next Tuesday at half past two")."""
    text = misheard_times(text)  # "tomorrow at half pass then"
    spans = [m.span() for m in _WHEN_WORDS.finditer(text)]
    spans += [m.span() for m in CLOCK.finditer(text)]
    spans += [m.span() for m in _SPOKEN_CLOCK_SPAN.finditer(text)]
    spans += [m.span() for m in MONTH_DAY.finditer(text)]
    spans += [m.span() for m in re.finditer(r"\b(?:noon|midday)\b", text, re.IGNORECASE)]
    spans += [m.span() for m in _BARE_CLOCK_SPAN.finditer(text)]
    spans += [m.span() for m in _WORD_CLOCK_SPAN.finditer(text)]
    spans += [m.span() for m in _BARE_DAY_SPAN.finditer(text)]
    if not spans:
        return None
    spans.sort()
    start, end = spans[0]
    for s, e in spans[1:]:
        gap = r"[\s,]*(?:(?:at|on|in the|around|by|about|at about|at around)(?:\s+a)?)?[\s,]*"
        if re.fullmatch(gap, text[end:s], re.IGNORECASE):  # "Thursday at a quarter past nine"
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
    said_when = when_phrase(reason)
    if said_when and reason.lower().startswith(said_when.lower()[:8]):
        return None  # "about quarter past four": when, not what about
    when = _WHEN_WORDS.search(reason)
    if when and when.start() > 0:
        reason = reason[: when.start()]
    reason = re.sub(r"^(?:to\s+)?(?:talk about|about)\s+", "", reason.strip(), flags=re.IGNORECASE)
    reason = re.split(r"[.?!]", reason)[0]
    return reason.strip(" ,") or None


_REQUESTED = re.compile(
    r"\b(?:book|schedule|arrange|set up|get|make|need|want|like)\s+(?:me\s+|us\s+)?"
    r"(?:a|an)\s+((?:[a-z][\w'-]*\s+){0,4}?[a-z][\w'-]*)"
    r"(?=\s+(?:with|on|at|for|in|by|this|next|tomorrow|today|please)\b|[\s,.?!]*$|[,.?!])",
    re.IGNORECASE,
)


def requested_thing(text: str) -> str | None:
    """What the caller asks to be booked or arranged, as said ("book a blood pressure check
    with ..." -> "blood pressure check"): the words after the verb and its article, up to the
    person, the day or the time."""
    match = _REQUESTED.search(text)
    if not match:
        return None
    thing = match.group(1).strip()
    return None if _WHEN_WORDS.search(thing) else thing


_NUMBER_WORD = alternation(NUMBER_VALUES)
_AGE_SAID = re.compile(
    r"\b(?:i'?m|i am|she'?s|he'?s|she is|he is|they'?re|aged)\s+(?:only\s+|just\s+)?"
    rf"(?:[1-9][0-9]|(?:{_NUMBER_WORD})(?:[\s-]+(?:{_NUMBER_WORD}))?)(?:\s+years?\s+old)?"
    rf"(?![\s-]*(?:{_NUMBER_WORD}|of|minutes?|hours?|days?|weeks?|months?|"
    r"euros?|dollars?|pounds?|percent|%|miles?|km|kilometres?|kilometers?|a\.?m|p\.?m)\b)\b",
    re.I,
)


def asked_alike(text: str) -> list[str]:
    """Words the line asks by another name (:data:`QUESTION_SYNONYMS`): "how much does it cost"
    says "fee"; "I'm 22" says "age"."""
    lowered = f" {text.lower()} "
    out: list[str] = []
    for group in QUESTION_SYNONYMS:
        if any(re.search(rf"\b{re.escape(w)}\b", lowered) for w in group):
            out.extend(group)
    return out + age_asked(text)


_LENGTH_ASKED = re.compile(r"\bhow long\b|\bgo(?:es)? on for\b|\brunning time\b", re.I)


def length_asked(text: str) -> list[str]:
    """The words of asking how long something lasts when the line asks it ("how long does it
    go on for?" asks the running time); ``[]`` otherwise."""
    if not _LENGTH_ASKED.search(text):
        return []
    return list(next(g for g in QUESTION_SYNONYMS if "running time" in g))


def age_asked(text: str) -> list[str]:
    """The words of asking about age when the line says one ("I'm 22, can I still rent?");
    ``[]`` otherwise."""
    return list(next(g for g in QUESTION_SYNONYMS if "age" in g)) if _AGE_SAID.search(text) else []
