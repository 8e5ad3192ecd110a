"""How long, as said: "an hour and a half", "three quarters of an hour", "two hours", "90
minutes", "1 hour 15 minutes", "half an hour", in minutes.

A duration is read only where the words say one: "half past three" and "a quarter to five" are
clock times (:mod:`.times`), not durations, and a bare number is no duration. Two different
durations in one line are no value (the caller is asked), never a guess between them."""

from __future__ import annotations

import re

from vocero.contracts.lexicon.base import alternation
from vocero.contracts.values.numbers import NUMBER_VALUES, word_value

_WORD = alternation(list(NUMBER_VALUES))
_COUNT = rf"(?:\d+(?:\.\d+)?|(?:{_WORD})(?:[\s-]+(?:{_WORD}))?)"
_NUM = rf"(?:{_COUNT}|an?)"
_HOURS = r"(?:hours?|hrs?)"
_MINUTES = r"(?:minutes?|mins?)"

_FORMS: tuple[tuple[re.Pattern[str], str], ...] = (
    # "an hour and a half", "two hours and a half"
    (re.compile(rf"\b(?P<n>{_NUM})\s+{_HOURS}\s+and\s+a\s+half\b"), "n+half"),
    # "one and a half hours", "2 and a half hours"
    (re.compile(rf"\b(?P<n>{_NUM})\s+and\s+a\s+half\s+{_HOURS}\b"), "n+half"),
    # "1 hour 15 minutes", "an hour and 20 minutes", "two hours thirty"
    (
        re.compile(rf"\b(?P<n>{_NUM})\s+{_HOURS}\s+(?:and\s+)?(?P<m>{_COUNT})(?:\s+{_MINUTES})?\b"),
        "n hours m",
    ),
    (re.compile(r"\bthree[\s-]quarters\s+of\s+an\s+hour\b"), "45"),
    (re.compile(r"\b(?:a\s+)?quarter\s+(?:of\s+an\s+)?hour\b"), "15"),
    (re.compile(r"\b(?:a\s+)?half(?:\s+an|-an)?[\s-]+hour\b"), "30"),
    # "two hours", "a two-hour lesson", "a 90-minute lesson"
    (re.compile(rf"\b(?P<n>{_NUM})[\s-]+{_HOURS}\b"), "n hours"),
    (re.compile(rf"\b(?P<n>{_NUM})[\s-]+{_MINUTES}\b"), "n minutes"),
)


def _amount(said: str) -> float:
    said = said.strip()
    if said in ("a", "an"):
        return 1.0
    if re.fullmatch(r"\d+(?:\.\d+)?", said):
        return float(said)
    return float(word_value(said))


def _minutes(match: re.Match[str], form: str) -> float:
    if form.isdigit():
        return float(form)
    hours = _amount(match.group("n"))
    if form == "n+half":
        return (hours + 0.5) * 60
    if form == "n hours m":
        return hours * 60 + _amount(match.group("m"))
    return hours * 60 if form == "n hours" else hours


def duration_minutes(utterance: str) -> int | None:
    """The one duration the line says, in whole minutes; ``None`` when it says none, or two
    different ones."""
    text = utterance.lower()
    found: set[int] = set()
    for pattern, form in _FORMS:
        for match in pattern.finditer(text):
            minutes = _minutes(match, form)
            if minutes > 0 and float(minutes).is_integer():
                found.add(int(minutes))
            # What one form read is not read again by a shorter one ("an hour and a half"
            # is not also "an hour").
            text = text[: match.start()] + " " * (match.end() - match.start()) + text[match.end() :]
    return found.pop() if len(found) == 1 else None
