"""What a caller's spoken answer says for the fields of a server's question, and how a value is
said back: dates, times, numbers (in words or digits), choices and yes/no. Free text is never
guessed from speech. Number words are the English lexicon's (:mod:`vocero.contracts.lexicon`)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from vocero.contracts import values
from vocero.contracts.english import name_words
from vocero.contracts.lexicon import consent
from vocero.contracts.lexicon.en import LEXICON
from vocero.policy.readback import speak_date

_UNITS = {w: v for w, v in LEXICON.numbers.cardinals.items() if v < 20}
"""Zero to nineteen, the English lexicon's (:mod:`vocero.contracts.lexicon`)."""
_TENS = {w: v for w, v in LEXICON.numbers.cardinals.items() if v >= 20}


def values_in(
    properties: Mapping[str, dict[str, Any]], text: str, today: dt.date
) -> dict[str, Any]:
    """The fields ``text`` gives a value for (canonical: ISO dates, 24-hour times, numbers)."""
    found: dict[str, Any] = {}
    numbers = numbers_in(text)
    for name, prop in properties.items():
        value = _value(prop, text, numbers, today)
        if value is not None:
            found[name] = value
    return found


def said(prop: dict[str, Any], name: str, value: Any, today: dt.date) -> str:
    """One field of a read-back: its title and its value as a person says it."""
    title = str(prop.get("title") or label(name)).lower()
    if prop.get("format") == "date":
        return f"{title} {speak_date(str(value), today)}"
    return f"{title} {value}"


def label(name: str) -> str:
    """A field's name said as words (:func:`vocero.contracts.english.name_words`)."""
    return name_words(name)


def _value(prop: dict[str, Any], text: str, numbers: list[int], today: dt.date) -> Any:
    kind = prop.get("type")
    if prop.get("enum"):
        lowered = text.lower()
        return next((o for o in prop["enum"] if str(o).lower() in lowered), None)
    if prop.get("format") == "date":
        return values.date_in(text, today)
    if prop.get("format") == "time":
        return values.time_in(text)
    if kind in ("integer", "number"):
        return numbers[0] if numbers else None
    if kind == "boolean":
        intent = consent.classify(text)
        return {"confirm": True, "reject": False}.get(intent or "")
    return None  # free text is not guessed from a spoken answer


def numbers_in(text: str) -> list[int]:
    """Whole numbers said, in order, dates and times left out ("Friday the 4th" is no party)."""
    masked = re.sub(
        r"\b\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,2}[:.]\d{2}\b|\b\d{4}-\d{2}-\d{2}\b", " ", text.lower()
    )
    found: list[int] = []
    tens: int | None = None  # "twenty" waits for a "five" after it
    for token in re.findall(r"[a-z]+|\d+", masked):
        if tens is not None and token in _UNITS and 0 < _UNITS[token] < 10:
            found.append(tens + _UNITS[token])
            tens = None
            continue
        if tens is not None:
            found.append(tens)
            tens = None
        if token.isdigit():
            found.append(int(token))
        elif token in _TENS:
            tens = _TENS[token]
        elif token in _UNITS:
            found.append(_UNITS[token])
    if tens is not None:
        found.append(tens)
    return found
