"""One rule for saying dates and times (vocero/contracts/spoken.py), whichever plane speaks: the
read-back of a proposal, the read-out of a result and the questions word them alike."""

from __future__ import annotations

from datetime import date, time

import pytest

from vocero.contracts.spoken import spoken_date, spoken_time
from vocero.policy.readback import speak_date, speak_time
from vocero.speech import forms

TODAY = date(2026, 12, 2)  # a Wednesday


@pytest.mark.parametrize(("moment", "locale", "said"), [
    (time(16, 0), "en-US", "4 PM"),  # on the hour a 12-hour clock drops ":00", as people do
    (time(16, 30), "en-US", "4:30 PM"),
    (time(9, 5), "en-US", "9:05 AM"),
    (time(16, 0), "en-GB", "16:00"),  # a 24-hour clock keeps its minutes: never "16"
    (time(16, 30), "de-DE", "16:30"),
])
def test_a_time_follows_the_locales_clock(moment: time, locale: str, said: str) -> None:
    assert spoken_time(moment, locale=locale) == said


def test_the_read_back_and_the_read_out_say_a_time_alike() -> None:
    for hhmm in ("16:00", "09:30", "00:00", "12:15"):
        hour, minute = (int(p) for p in hhmm.split(":"))
        assert speak_time(hhmm) == forms.spoken_time(time(hour, minute))


def test_the_read_back_names_the_weekday_where_the_read_out_says_tomorrow() -> None:
    thursday = date(2026, 12, 3)
    assert spoken_date(thursday, today=TODAY) == "tomorrow, December 3"
    assert speak_date(thursday.isoformat(), TODAY) == "Thursday, December 3"
    assert speak_date("2027-01-04", TODAY) == spoken_date(date(2027, 1, 4), today=TODAY) == (
        "Monday, January 4, 2027")
    assert speak_date("not a date", TODAY) == "not a date"
