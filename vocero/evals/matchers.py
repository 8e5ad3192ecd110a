"""Matchers (docs/eval.md, "Matchers"): how an expected value is compared with what happened."""

from __future__ import annotations

import re
import string
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vocero.contracts.lexicon.en import CALENDAR

FORMS = ("equals", "contains", "pattern", "datetime")
WEEKDAYS = CALENDAR.weekdays
"""Weekday name → 0 (Monday) … 6, from the shared lexicon."""
_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation if c not in "-:'"})


def normalise(text: str) -> str:
    """Case, punctuation (but for ``-``, ``:`` and ``'``) and runs of spaces do not count."""
    return " ".join(text.lower().translate(_PUNCTUATION).split())


def check_matcher(expected: Any) -> str:
    """Why ``expected`` is not a matcher of a known form ('' when it is one)."""
    if not isinstance(expected, dict):
        return ""
    if "datetime" in expected:
        if set(expected) - {"datetime", "zone"}:
            return f"a datetime matcher takes datetime and zone, got {sorted(expected)}"
        try:
            utc = ZoneInfo("UTC")
            resolve_moment(str(expected["datetime"]), utc, datetime.now(utc))
        except ValueError as exc:
            return str(exc)
        zone = expected.get("zone", "caller")
        if zone != "caller":
            try:
                ZoneInfo(str(zone))
            except (ZoneInfoNotFoundError, ValueError):
                return f"unknown zone {zone!r} (caller or an IANA name)"
        return ""
    if len(expected) != 1 or next(iter(expected)) not in FORMS:
        forms = ", ".join(FORMS)
        return f"a matcher is a plain value or one of {{{forms}}}, got {sorted(expected)}"
    if "pattern" in expected:
        try:
            re.compile(str(expected["pattern"]))
        except re.error as exc:
            return f"not a regular expression: {exc}"
    return ""


def matches(expected: Any, actual: Any, *, caller_zone: str = "UTC",
            now: datetime | None = None) -> bool:
    """Whether ``actual`` satisfies ``expected`` (a plain value or a matcher mapping)."""
    if expected == "present":
        return actual not in (None, "", [], {})
    if expected == "absent":
        return actual in (None, "", [], {})
    if isinstance(expected, dict) and len(expected) >= 1 and set(expected) <= {*FORMS, "zone"}:
        if "equals" in expected:
            return bool(actual == expected["equals"])
        if "contains" in expected:
            return isinstance(actual, str) and normalise(str(expected["contains"])) in normalise(
                actual)
        if "pattern" in expected:
            return actual is not None and re.search(
                str(expected["pattern"]), _text(actual), re.IGNORECASE) is not None
        if "datetime" in expected:
            zone_name = str(expected.get("zone", "caller"))
            zone = ZoneInfo(caller_zone if zone_name == "caller" else zone_name)
            return datetime_equal(str(expected["datetime"]), actual, zone, now)
    if isinstance(expected, str) and isinstance(actual, str):
        return normalise(expected) == normalise(actual)
    if isinstance(expected, str) and isinstance(actual, (int, float)) and not isinstance(
            actual, bool):
        return normalise(expected) == normalise(str(actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return all(matches(v, actual.get(k), caller_zone=caller_zone, now=now)
                   for k, v in expected.items())
    return bool(expected == actual)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def resolve_moment(words: str, zone: ZoneInfo, now: datetime) -> datetime:
    """``today``/``tomorrow``/a weekday/``YYYY-MM-DD`` then ``HH:MM``, in ``zone``, from ``now``.

    A weekday is the next such day after today (never today)."""
    parts = words.lower().split()
    if len(parts) != 2 or not re.fullmatch(r"\d{1,2}:\d{2}", parts[1]):
        raise ValueError(f"a datetime is a day (today, tomorrow, a weekday or YYYY-MM-DD) then "
                         f"HH:MM, got {words!r}")
    today = now.astimezone(zone).date()
    day: date
    if parts[0] == "today":
        day = today
    elif parts[0] == "tomorrow":
        day = today + timedelta(days=1)
    elif parts[0] in WEEKDAYS:
        ahead = (WEEKDAYS[parts[0]] - today.weekday()) % 7 or 7
        day = today + timedelta(days=ahead)
    else:
        try:
            day = date.fromisoformat(parts[0])
        except ValueError:
            raise ValueError(f"unknown day {parts[0]!r} in {words!r}") from None
    hour, minute = (int(x) for x in parts[1].split(":"))
    if hour > 23 or minute > 59:
        raise ValueError(f"not a time of day: {parts[1]!r}")
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)


def datetime_equal(words: str, actual: Any, zone: ZoneInfo, now: datetime | None = None) -> bool:
    """Whether the RFC3339 ``actual`` is the moment ``words`` names in ``zone``."""
    if not isinstance(actual, str):
        return False
    try:
        moment = datetime.fromisoformat(actual.replace("Z", "+00:00"))
    except ValueError:
        return False
    if moment.tzinfo is None:
        return False
    expected = resolve_moment(words, zone, now or datetime.now(zone))
    return moment == expected


def describe(expected: Any) -> str:
    """A matcher as a person reads it in a failure."""
    if isinstance(expected, dict):
        if "datetime" in expected:
            return f"{expected['datetime']} ({expected.get('zone', 'caller')} time)"
        if len(expected) == 1 and next(iter(expected)) in FORMS:
            key, value = next(iter(expected.items()))
            return f"{key} {value!r}"
        return "{" + ", ".join(f"{k}: {describe(v)}" for k, v in expected.items()) + "}"
    return str(expected)
