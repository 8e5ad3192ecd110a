"""Due-time resolution (seed 003): examples in three languages, and Hypothesis properties -
always in the future, in the caller's timezone, deterministic for a fixed clock, across DST."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vocero.followups.due import resolve_due

MADRID = "Europe/Madrid"
NOW = datetime(2026, 12, 3, 8, 30, tzinfo=UTC)  # Thursday, 09:30 in Madrid


@pytest.mark.parametrize(("when", "local", "exact"), [
    ("in 10 minutes", "2026-12-03 09:40", True),
    ("10 minute mein", "2026-12-03 09:40", True),
    ("padi nimishallo", "2026-12-03 09:40", True),
    ("in an hour", "2026-12-03 10:30", True),
    ("tomorrow 11am", "2026-12-04 11:00", True),
    ("kal subah 11 baje", "2026-12-04 11:00", True),
    ("repu udayam 11 gantalaku", "2026-12-04 11:00", True),
    ("రేపు ఉదయం 11 గంటలకు", "2026-12-04 11:00", True),
    ("Friday 3pm", "2026-12-04 15:00", True),
    ("shukravar dopahar 3 baje", "2026-12-04 15:00", True),
    ("శుక్రవారం మధ్యాహ్నం మూడు గంటలకు", "2026-12-04 15:00", True),
    ("today evening", "2026-12-03 18:00", True),
    ("aaj shaam", "2026-12-03 18:00", True),
    ("ivala sayantram", "2026-12-03 18:00", True),
    ("kal shaam 4 baje", "2026-12-04 16:00", True),
    ("4pm", "2026-12-03 16:00", True),
    ("at 8am", "2026-12-04 08:00", True),  # already past today: tomorrow
    ("tomorrow", "2026-12-04 11:00", True),  # a day and no time: 11:00 that day
    ("Thursday 10am", "2026-12-10 10:00", True),  # today's weekday: next week's
    ("next Friday 3pm", "2026-12-11 15:00", True),  # this week's is tomorrow: the week after's
    ("agle shukravar dopahar 3 baje", "2026-12-11 15:00", True),
    ("next Monday", "2026-12-07 11:00", True),  # already in the week after: no week more
    ("december 24 at 9:30am", "2026-12-24 09:30", True),
    ("on the 14th at 3 pm", "2026-12-14 15:00", True),  # a day of the month alone: this month's
    ("on the third", "2026-12-03 11:00", True),  # today is the 3rd: today's
    ("the 2nd, please", "2027-01-02 11:00", True),  # already past this month: next month's
    ("march the 3rd", "2027-03-03 11:00", True),
    ("December the fourteenth at 4", "2026-12-14 16:00", True),
    ("the 5th of January 2027 at 10am", "2027-01-05 10:00", True),
    ("sometime", "2026-12-04 11:00", False),  # nothing usable: 11:00 the next day
    ("today morning", "2026-12-04 11:00", False),  # already past: never the past
    ("february 30", "2026-12-04 11:00", False),  # no such date
    ("february 30 at 3pm", "2026-12-04 11:00", False),  # not 15:00 today: no day is named
    ("the 32nd at 3pm", "2026-12-04 11:00", False),
    ("2028-01-02", "2026-12-04 11:00", False),  # more than a year ahead: not usable
    ("in 900 days", "2026-12-04 11:00", False),
    ("2027-12-03 09:00", "2027-12-03 09:00", True),  # within the year: kept
])
def test_examples(when: str, local: str, exact: bool) -> None:
    due = resolve_due(when, NOW, MADRID)
    assert (due.at.strftime("%Y-%m-%d %H:%M"), due.exact) == (local, exact)
    assert str(due.at.tzinfo) == MADRID


@pytest.mark.parametrize(("when", "unusable"), [
    ("february 30", True),
    ("february 30 at 3pm", True),
    ("the 32nd", True),
    ("2028-01-02", True),  # a date more than a year ahead
    ("march 3, 2025", True),  # a date already past
    ("december 3 at 8am", True),  # today's date, at a time already past
    ("on the 14th", False),
    ("sometime", False),  # no date named: no date to be unusable
    ("today morning", False),  # a relative day, not a date: the fallback, as before
    ("in 900 days", False),
])
def test_a_date_named_that_gives_no_usable_time_is_marked(when: str, unusable: bool) -> None:
    """The call-back rule asks when for these rather than recording the fallback."""
    due = resolve_due(when, NOW, MADRID)
    assert due.date_unusable is unusable
    assert not (unusable and due.exact)


@pytest.mark.parametrize(("zone", "local"), [
    ("America/Los_Angeles", "2026-12-14 15:00"),  # still the 14th there: today's
    ("Asia/Kolkata", "2027-01-14 15:00"),  # already the 15th there: next month's
])
def test_a_day_of_the_month_is_read_on_the_callers_own_calendar(zone: str, local: str) -> None:
    now = datetime(2026, 12, 14, 20, 0, tzinfo=UTC)
    due = resolve_due("on the 14th at 3 pm", now, zone)
    assert (due.at.strftime("%Y-%m-%d %H:%M"), due.exact) == (local, True)


# ------------------------------------------------------------------------------ properties

ZONES = ["Europe/Madrid", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe",
         "America/Santiago", "Pacific/Chatham", "UTC", "Europe/London", "America/St_Johns"]
WORDS = ["tomorrow", "today", "tonight", "kal", "aaj", "repu", "friday", "monday", "sunday",
         "somvar", "shukravaram", "morning", "evening", "afternoon", "shaam", "subah",
         "sayantram", "udayam", "at 4", "4pm", "11am", "2:30", "16:00", "4 baje",
         "naalugu gantalaku",
         "in 10 minutes", "in 2 hours", "10 minute mein", "half past four", "noon", "midnight",
         "sometime", "later", "day after tomorrow", "parso", "ellundi", "next week", "march 31",
         "february 29", "2:30am", "1:30am", "in 3 days", "on the 14th", "the 31st",
         "march the 3rd", "the 29th of february"]
whens = st.lists(st.sampled_from(WORDS), min_size=0, max_size=3).map(" ".join) | st.text(
    max_size=30)
instants = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1),
                        timezones=st.just(UTC))


@settings(max_examples=400, deadline=None)
@given(when=whens, now=instants, zone=st.sampled_from(ZONES))
@example(when="tomorrow 2:30am", now=datetime(2026, 3, 28, 12, tzinfo=UTC), zone="Europe/Madrid")
@example(when="tomorrow 2:30am", now=datetime(2026, 10, 24, 12, tzinfo=UTC), zone="Europe/Madrid")
@example(when="in 10 minutes", now=datetime(2026, 3, 29, 0, 55, tzinfo=UTC), zone="Europe/Madrid")
@example(when="2001-01-02", now=datetime(2000, 1, 1, tzinfo=UTC), zone="Europe/Madrid")
def test_due_is_after_now_in_the_callers_zone_and_deterministic(
    when: str, now: datetime, zone: str
) -> None:
    first = resolve_due(when, now, zone)
    assert first.at > now
    assert first.at.tzinfo == ZoneInfo(zone)
    assert first.at == first.at.astimezone(UTC).astimezone(ZoneInfo(zone))  # a real instant
    assert resolve_due(when, now, zone) == first  # the same clock, the same answer
    assert first.at - now <= timedelta(days=367)


transitions = st.sampled_from([
    ("Europe/Madrid", datetime(2026, 3, 29, 1, 0, tzinfo=UTC)),  # 02:00 -> 03:00
    ("Europe/Madrid", datetime(2026, 10, 25, 1, 0, tzinfo=UTC)),  # 03:00 -> 02:00
    ("America/New_York", datetime(2026, 3, 8, 7, 0, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 11, 1, 6, 0, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2026, 4, 4, 15, 0, tzinfo=UTC)),  # half-hour DST
])


@settings(max_examples=300, deadline=None)
@given(transition=transitions, offset_min=st.integers(-36 * 60, 36 * 60),
       minutes=st.integers(1, 600))
def test_a_delay_is_elapsed_time_across_a_dst_change(
    transition: tuple[str, datetime], offset_min: int, minutes: int
) -> None:
    zone, instant = transition
    now = instant + timedelta(minutes=offset_min)
    due = resolve_due(f"in {minutes} minutes", now, zone)
    assert due.at - now == timedelta(minutes=minutes)  # aware subtraction: real elapsed time
    assert due.exact


@settings(max_examples=300, deadline=None)
@given(transition=transitions, offset_h=st.integers(-30, 30), hour=st.integers(0, 23),
       minute=st.sampled_from([0, 15, 30, 45]))
def test_tomorrow_at_a_clock_time_is_that_wall_time_or_the_instant_after_a_gap(
    transition: tuple[str, datetime], offset_h: int, hour: int, minute: int
) -> None:
    zone, instant = transition
    now = instant + timedelta(hours=offset_h)
    due = resolve_due(f"tomorrow {hour:02d}:{minute:02d}", now, zone)
    local_today = now.astimezone(ZoneInfo(zone)).date()
    assert due.at.date() == local_today + timedelta(days=1)
    wall = (due.at.hour, due.at.minute)
    if wall != (hour, minute):  # only a time skipped by the clock change moves, and forward
        skipped = datetime(due.at.year, due.at.month, due.at.day, hour, minute,
                           tzinfo=ZoneInfo(zone))
        assert skipped.astimezone(UTC).astimezone(ZoneInfo(zone)) == due.at
        assert due.at.hour * 60 + due.at.minute > hour * 60 + minute
