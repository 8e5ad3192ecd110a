"""When a follow-up is due: the agreed words resolved in the caller's timezone
(docs/followups.md "Due time").

"in 10 minutes" is an absolute delay (counted in UTC, so a DST change in between does not move
it); "tomorrow 11am", "Friday 3pm", "today evening", "kal shaam 4 baje", "repu udayam 11
gantalaku" are wall-clock times in the caller's zone, built with :mod:`zoneinfo` and normalised
through UTC so a time that does not exist (the hour skipped in spring) becomes the real instant
after it, and an ambiguous one (the hour repeated in autumn) is its first occurrence. Month days
("December 14th", "March the 3rd") and a day of the month alone ("on the 14th": this month's if
still ahead, else next month's) resolve as the one reader of dates resolves them. Whatever
resolves to nothing usable - no time word, a date that does not exist, a moment already past,
one more than a year ahead ("2031-01-02", "in 900 days": no call-back is promised that far) -
becomes 11:00 the next day, never "now" and never the past; when the words named a calendar
date (:attr:`Due.date_unusable`), the call-back rule asks when instead of recording that.

Hours said without am/pm follow the part of the day when one was said ("shaam 4" is 16:00,
"subah 4" is 04:00); otherwise 1-7 are afternoon and 8-11 morning (call-back hours).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from vocero.contracts import values
from vocero.contracts.builtins import zone_of
from vocero.followups import lexicon as lx
from vocero.followups.timewords import Clock, Reading, read

FALLBACK = (11, 0)
"""The clock time of a follow-up whose words name no usable time (docs/followups.md "Due time")."""
DAY_ONLY = (11, 0)
"""The clock time of a follow-up whose words name a day but no time ("tomorrow")."""
HORIZON = timedelta(days=366)
"""The furthest ahead a follow-up may be due; words naming a later moment are not usable."""


@dataclass(frozen=True, slots=True)
class Due:
    at: datetime
    """Aware, in the caller's zone, always after ``now``."""
    exact: bool
    """False when the words named nothing usable and the 11:00-next-day fallback applies."""
    date_unusable: bool = False
    """True when the words named a calendar date (a month day, a day of the month, an ISO date)
    that gives no usable moment: no such date ("February 30", "the 32nd"), already past, or more
    than a year ahead. ``at`` is the fallback; the call-back rule refuses it and asks when
    (docs/followups.md "Due time")."""


def resolve_due(when: str, now: datetime, timezone: str) -> Due:
    """The due time of ``when`` said at ``now`` (aware) by a caller in ``timezone``."""
    return resolve_reading(read(when), now, timezone)


def resolve_reading(reading: Reading, now: datetime, timezone: str) -> Due:
    zone = zone_of(timezone)
    now = now.astimezone(UTC)
    local_now = now.astimezone(zone)
    if reading.delays and reading.delays[-1] > 0:
        return _usable((now + timedelta(minutes=reading.delays[-1])).astimezone(zone), now, zone)
    day = _day(reading, local_now.date())
    clock = _clock(reading)
    dated = bool(reading.days) and reading.days[-1].startswith(("date:", "dom:"))
    if reading.days and day is None:  # a day said that names none ("February 30")
        return replace(fallback(now, zone), date_unusable=dated)
    if day is None and clock is None:
        return fallback(now, zone)
    if day is None:
        assert clock is not None
        due = wall(local_now.date(), clock, zone)
        if due <= local_now:
            due = wall(local_now.date() + timedelta(days=1), clock, zone)
    else:
        due = wall(day, clock or DAY_ONLY, zone)
    usable = _usable(due, now, zone)
    return usable if usable.exact else replace(usable, date_unusable=dated)


def _usable(due: datetime, now: datetime, zone: ZoneInfo) -> Due:
    """``due`` when it is after ``now`` and within :data:`HORIZON`, else the fallback."""
    if not now < due <= now + HORIZON:
        return fallback(now, zone)
    return Due(at=due, exact=True)


def fallback(now: datetime, zone: ZoneInfo) -> Due:
    """11:00 the next day in ``zone``."""
    tomorrow = now.astimezone(zone).date() + timedelta(days=1)
    return Due(at=wall(tomorrow, FALLBACK, zone), exact=False)


def wall(day: date, clock: tuple[int, int], zone: ZoneInfo) -> datetime:
    """``day`` at ``clock`` in ``zone``, normalised to an instant that exists there."""
    naive = datetime(day.year, day.month, day.day, clock[0], clock[1], tzinfo=zone)
    return naive.astimezone(UTC).astimezone(zone)


# ----------------------------------------------------------------------------------- days


def _day(reading: Reading, today: date) -> date | None:
    if not reading.days:
        return None
    word = reading.days[-1]
    relative = {"today": 0, "tomorrow": 1, "day_after": 2, "week_next": 7}
    if word in relative:
        return today + timedelta(days=relative[word])
    if word.startswith("in_days:"):
        return today + timedelta(days=max(int(word.removeprefix("in_days:")), 1))
    if word in lx.WEEKDAY_ORDER:  # "next Friday": the shared reader's (ADR-0040)
        qualifier = "next" if len(reading.days) - 1 in reading.next_days else ""
        return values.weekday_date(today, lx.WEEKDAY_ORDER.index(word), qualifier)
    if word.startswith("date:"):
        year = dict(reading.years).get(len(reading.days) - 1)
        return _date(word.removeprefix("date:"), today, year)
    if word.startswith("dom:"):  # "on the 14th": the one reader's (ADR-0039)
        return values.next_day_of_month(today, int(word.removeprefix("dom:")))
    return None


def _date(month_day: str, today: date, year: int | None) -> date | None:
    month, day = (int(p) for p in month_day.split("-"))
    return values.next_date(today, month, day, year)


# ---------------------------------------------------------------------------------- clock


def _clock(reading: Reading) -> tuple[int, int] | None:
    part = reading.parts[-1] if reading.parts else ""
    if reading.clocks:
        return hour_of(reading.clocks[-1], part), reading.clocks[-1].minute
    if part:
        return lx.PART_CLOCK[part]
    return None


def hour_of(clock: Clock, part: str = "") -> int:
    """The 24-hour hour of a clock time as said: the one clock rule of every reader of spoken
    times (:func:`vocero.contracts.values.hour_of`)."""
    return values.hour_of(clock.hour, meridiem=clock.meridiem, part=part)
