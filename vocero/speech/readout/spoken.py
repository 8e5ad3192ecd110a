"""One value of a result in words: dates, times and moments (in the caller's zone, naming the city
of a record kept in another zone), yes and no, counts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vocero.contracts.english import join_list
from vocero.speech.forms import (
    count_word,
    spoken_date,
    spoken_time,
)
from vocero.speech.readout.context import ReadoutContext
from vocero.speech.readout.words import mid_sentence

ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


ISO_MOMENT = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)(?::[0-5]\d)?$")


ZONE_NAME = re.compile(r"^[A-Z][A-Za-z]+/[A-Za-z_\-/]+$")


LINK = re.compile(r"^(?:https?|ftp|mailto|data):", re.IGNORECASE)


def instant(value: str, ctx: ReadoutContext) -> datetime | None:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.astimezone(ctx.zone) if moment.tzinfo is not None else moment


def spoken_value(
    key: str, value: Any, record: Mapping[str, Any], ctx: ReadoutContext, at_start: bool
) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and value and all(_scalar(v) for v in value):
        # "{free_starts}": the values themselves ("9 AM, 11:30 AM, and 4 PM"), not their count
        values = [spoken_value(key, v, record, ctx, False) for v in value[:_MOST_LISTED]]
        more = len(value) - len(values)
        tail = [f"{count_word(more, locale=ctx.locale)} more"] if more else []
        return join_list([*values, *tail])
    if isinstance(value, list):
        return count_word(len(value), locale=ctx.locale)
    if not isinstance(value, str):
        return str(value)
    if ISO_DATE.match(value):
        try:
            return spoken_date(date.fromisoformat(value), locale=ctx.locale, today=ctx.today)
        except ValueError:
            return value
    if ISO_MOMENT.match(value):
        return moment_words(value, ctx)
    clock = HHMM.match(value)
    if clock:
        said = spoken_time(time(int(clock[1]), int(clock[2])), locale=ctx.locale)
        return said + elsewhere_of(record, ctx)
    return value if at_start else mid_sentence(value)


_MOST_LISTED = 6
"""A list of values in a read-out says at most this many, then how many more."""


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def moment_words(value: str, ctx: ReadoutContext) -> str:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone(ctx.zone)
    day = spoken_date(moment.date(), locale=ctx.locale, today=ctx.today)
    return f"{day} at {spoken_time(moment.time(), locale=ctx.locale)}"


def elsewhere_of(record: Mapping[str, Any], ctx: ReadoutContext) -> str:
    """ " Madrid time" when the record's timezone is not the caller's; never the raw name."""
    zone = record.get("timezone") or record.get("tz")
    if not isinstance(zone, str) or not zone or zone == ctx.timezone:
        return ""
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return ""
    city = zone.rsplit("/", 1)[-1].replace("_", " ")
    return f" {city} time"
