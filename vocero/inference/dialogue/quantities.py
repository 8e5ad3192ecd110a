"""How many: the count or length a caller gives for a number field of a tool.

Split from :mod:`.arguments`, which fills each field by its kind and calls :func:`quantity`
for a number that is no identifier: a count said in words or digits ("two tickets", "a pair
of tickets", "so three altogether", "Just the one."), a count of the field's unit ("for 3
months"), or a length of time in minutes or hours (:func:`length_unit`). Pure.
"""

from __future__ import annotations

import re
from typing import Any

from vocero.contracts import values
from vocero.contracts.lexicon.base import alternation
from vocero.contracts.values.numbers import NUMBER_RUN, NUMBER_VALUES, number_run, word_value

_NOT_QUANTITY = re.compile(
    r"\b\d{1,2}(?:[:.]\d{2})?\s*(?:a\.?\s?m\b\.?|p\.?\s?m\b\.?|o'?clock\b)"
    r"|\b(?:(?:at|around|by)\s+)?\d{1,2}:\d{2}\b|\b(?:at|around|by)\s+\d{1,2}\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)\b"
    r"|\b\d+\s*(?:minutes?|hours?|days?|weeks?|months?|years?)\b",
    re.IGNORECASE,
)


_UNITS = ("minute", "hour", "day", "night", "week", "month", "year")
_COUNT = rf"\d+|(?:{alternation(NUMBER_VALUES)})(?:[\s-]+(?:{alternation(NUMBER_VALUES)}))?"


def _counted(text: str, prop: dict[str, Any], name: str = "") -> int | None:
    """A count of the unit the field is in ("months", "Whole months, 1 to 6"): the one number
    the line says before that unit ("for 3 months"); a duration is no quantity otherwise."""
    words = set(re.findall(r"[a-z]+", f"{name} {prop.get('description', '')}".lower()))
    units = [u for u in _UNITS if u in words or f"{u}s" in words]
    if len(units) != 1 or prop.get("type") not in ("integer", "number"):
        return None
    found = {word_value(m) for m in re.findall(rf"\b({_COUNT})\s*{units[0]}s?\b", text)}
    if len(found) != 1:
        return None
    value = found.pop()
    return value if prop.get("minimum", value) <= value <= prop.get("maximum", value) else None


_PAIR = r"a pair of|a couple of"
_TOTAL = re.compile(rf"\b({_COUNT})\s+(?:altogether|all together|in total|in all)\b")


def _total(text: str) -> int | None:
    """A count the caller adds up ("two adults and a child, so three altogether")."""
    said = _TOTAL.findall(text)
    return word_value(said[-1]) if said else None


def _of_noun(text: str, name: str) -> int | None:
    """The count said before what a plural field counts ("two tickets", "a pair of tickets",
    "3 more tickets" for ``tickets``); ``None`` when the line says it of no such noun or says
    two different counts."""
    noun = name.lower().rsplit("_", 1)[-1]
    if len(noun) < 4 or not noun.endswith("s") or noun.endswith("ss"):
        return None
    found = {
        2 if said.startswith("a ") else word_value(said)
        for said in re.findall(
            rf"\b({_COUNT}|{_PAIR})\s+(?:[a-z]+\s+)?{re.escape(noun[:-1])}s?\b", text
        )
    }
    return found.pop() if len(found) == 1 else None


def length_unit(name: str, prop: dict[str, Any]) -> str | None:
    """"minute" or "hour" for a number field counted in one of them ("How long, in minutes"):
    a length of time; ``None`` for any other field."""
    words = set(re.findall(r"[a-z]+", f"{name} {prop.get('description', '')}".lower()))
    units = [u for u in ("minute", "hour") if u in words or f"{u}s" in words]
    if len(units) != 1 or prop.get("type") not in ("integer", "number"):
        return None
    return units[0]


def _lasting(utterance: str, prop: dict[str, Any], name: str) -> int | None:
    """How long, for a field counted in minutes or hours: the caller's duration in the field's
    unit ("an hour and a half" is 90 minutes), within its bounds and steps; a duration that is
    no whole number of the unit is no value."""
    unit = length_unit(name, prop)
    minutes = values.duration_minutes(utterance) if unit else None
    if minutes is None or (unit == "hour" and minutes % 60):
        return None
    value = minutes if unit == "minute" else minutes // 60
    step = prop.get("multipleOf")
    if isinstance(step, int | float) and step and value % step:
        return None
    return value if prop.get("minimum", value) <= value <= prop.get("maximum", value) else None


def quantity(
    utterance: str, prop: dict[str, Any], taken: list[Any], name: str = ""
) -> int | float | None:
    """The one number the line says for a quantity ("It says 48213", "Nine hundred and
    twelve"), not a time, a date, a duration or an identifier another field took; two numbers
    said is no value (it is asked)."""
    lasting = _lasting(utterance, prop, name)
    if lasting is not None:
        return lasting
    text = NUMBER_RUN.sub(number_run, values.spoken_times(utterance.lower()))
    counted = _counted(text, prop, name)
    if counted is None:
        counted = _total(text) or _of_noun(text, name)
    if counted is not None and prop.get("minimum", counted) <= counted <= prop.get(
        "maximum", counted
    ):
        return counted
    text = _NOT_QUANTITY.sub(" ", text)
    taken_text = {str(t) for t in taken}
    amounts: list[int | float] = []
    for match in re.finditer(r"(?<![\w.:-])(\d+(?:\.\d+)?)(?![\w:-])", text.replace(",", "")):
        if match.group(1) in taken_text:
            continue
        number = float(match.group(1))
        value: int | float = int(number) if number.is_integer() else number
        if prop.get("type") == "integer" and not isinstance(value, int):
            continue
        if not prop.get("minimum", value) <= value <= prop.get("maximum", value):
            continue
        if value not in amounts:
            amounts.append(value)
    if not amounts and prop.get("minimum", 1) <= 1 <= prop.get("maximum", 1) and _ONE.search(
        utterance.strip()
    ):
        return 1  # "Just the one.", "so one": a count said as "one", a clause of its own
    return amounts[0] if len(amounts) == 1 else None


_ONE = re.compile(
    r"(?:^|[,.;!?])\s*(?:(?:just|only|so|yes|yeah|yep|it's|its|that's|thats|the|a|single)\s+)*"
    r"(?:one|a single one)(?:\s+(?:please|thanks|only|item|piece|thing|of them))?\s*(?:[,.;!?]|$)",
    re.IGNORECASE,
)
"""A count of one said as a clause of its own ("Just the one.", "so one"); "the recycling one"
and "a new one" name a thing, not a count (a lone "one" is otherwise no number)."""
