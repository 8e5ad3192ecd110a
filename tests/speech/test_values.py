"""Critical values: canonical forms that let "December 3" match "2026-12-03" and "thirty"
match "30", and keep "apt-1001" apart from "1001"."""

from __future__ import annotations

from datetime import date

import pytest

from vocero.contracts.values import date_in
from vocero.speech.values import (
    critical_values,
    evidence_values,
    restriction_words,
    supported,
    text_values,
)

TODAY = date(2026, 12, 1)  # a Tuesday


def keys(text: str) -> list[tuple[str, str]]:
    return [v.key for v in critical_values(text, today=TODAY)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("open Monday to Friday from 9 AM to 6 PM", [
            ("weekday", "mon"), ("weekday", "fri"), ("time", "09:00"), ("time", "18:00")]),
        ("at 4:30 p.m.", [("time", "16:30")]),
        ("at 16:30 or noon", [("time", "16:30"), ("time", "12:00")]),
        ("on Saturdays", [("weekday", "sat")]),
        ("December 3", [("date", "12-03")]),
        ("3 December 2026", [("date", "2026-12-03")]),
        ("the third of December", [("date", "12-03")]),
        ("2026-12-02T11:00:00+01:00", [("date", "2026-12-02"), ("time", "11:00")]),
        ("tomorrow", [("date", "2026-12-02")]),
        ("the 14th", [("date", "2026-12-14")]),  # a day of the month alone: the next one
        ("on the 3rd at 4 PM", [("date", "2026-12-03"), ("time", "16:00")]),
        ("next Friday", [("date", "2026-12-11")]),  # on a Tuesday: the week after's (ADR-0040)
        ("next Tuesday", [("date", "2026-12-08")]),  # today's weekday: next week's
        ("March the 3rd", [("date", "03-03")]),
        ("a $25 fee", [("amount", "USD:25")]),
        ("25 euros", [("amount", "EUR:25")]),
        ("within thirty days", [("number", "30")]),
        ("twenty-one items", [("number", "21")]),
        ("1,000.50 points", [("number", "1000.5")]),
        ("order A123", [("identifier", "A123")]),
        ("appointment apt-1001", [("identifier", "APT1001")]),
        ("APT 1001", [("identifier", "APT1001")]),
        ("call 555-0100", [("identifier", "5550100")]),
        ("3-5 business days", [("number", "3"), ("number", "5")]),
        ("a 24-hour window", [("number", "24")]),
        ("the 3rd step", [("number", "3")]),
        ("12/03", [("date", "12/03")]),  # ambiguous between locales: kept as written
        ("one of our team will help", []),  # "one" carries no quantity
        ("he sat in the sun", []),  # lower-case short forms are not weekdays
    ],
)
def test_critical_values_have_canonical_forms(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert keys(text) == expected


def test_without_a_date_relative_words_stay_words() -> None:
    assert [v.key for v in critical_values("tomorrow")] == [("date", "tomorrow")]


def test_a_full_date_supports_its_weekday_and_month_day() -> None:
    evidence = evidence_values({"date": "2026-12-03"})
    for text in ("Thursday", "December 3", "Thursday, December 3, 2026", "3 December"):
        assert all(supported(v, evidence) for v in critical_values(text)), text
    for text in ("Friday", "December 4", "December 3, 2027"):
        assert not all(supported(v, evidence) for v in critical_values(text)), text


def test_a_day_named_from_today_needs_that_date_in_the_evidence() -> None:
    """"next Friday" and "the 14th" are one date each: evidence for another Friday, or a 14 that
    is not a date, does not support them (they were a weekday and a number, and did)."""
    evidence = evidence_values({"date": "2026-12-04", "seats": 14}, today=TODAY)
    for text in ("on Friday", "on the 4th", "on Friday, December 4"):
        assert all(supported(v, evidence) for v in critical_values(text, today=TODAY)), text
    for text in ("next Friday", "on the 14th", "on the 5th", "the day after tomorrow"):
        assert not all(supported(v, evidence) for v in critical_values(text, today=TODAY)), text
    later = evidence_values({"date": "2026-12-11"}, today=TODAY)
    assert all(supported(v, later) for v in critical_values("next Friday", today=TODAY))
    assert not all(supported(v, later) for v in critical_values("on the 4th", today=TODAY))


@pytest.mark.parametrize(
    "said", ["March 3rd", "the third of March", "March the 3rd", "3 March", "March 3, 2028"]
)
def test_a_month_day_is_what_the_one_date_reader_reads(said: str) -> None:
    """The month and day (and the year, when said) are the shared reader's; said without a year
    the check keeps the month and day, so a past year's date in the evidence supports it."""
    day = date_in(said, TODAY)
    assert day is not None
    year_said = said.endswith("2028")
    assert keys(said) == [("date", day if year_said else day[5:])]

    def supports(evidence: str) -> bool:
        found = evidence_values({"on": evidence})
        return all(supported(v, found) for v in critical_values(said, today=TODAY))

    assert supports(day)
    assert supports("2026-03-03") is not year_said  # a past year's March 3: only without a year
    assert not supports("2027-03-04")


def test_a_time_supports_its_hour_on_either_clock() -> None:
    evidence = evidence_values({"due_at": "2026-12-02T16:00:00+01:00"})
    assert all(supported(v, evidence) for v in critical_values("at 4 tomorrow", today=TODAY))
    assert not all(supported(v, evidence) for v in critical_values("at 5", today=TODAY))


def test_an_amount_needs_its_value_and_no_other_currency() -> None:
    evidence = text_values(["a $25 fee"])
    assert all(supported(v, evidence) for v in critical_values("25 dollars"))
    assert not all(supported(v, evidence) for v in critical_values("25 euros"))
    assert not all(supported(v, evidence) for v in critical_values("$30"))
    bare = evidence_values({"fee": 25})
    assert all(supported(v, bare) for v in critical_values("€25"))


def test_tool_results_supply_numbers_strings_and_list_lengths() -> None:
    result = {"appointments": [{"id": "APT-1001", "time": "10:00"}, {"id": "APT-1002"}]}
    found = evidence_values(result)
    assert ("number", "2") in found
    assert ("identifier", "APT1001") in found
    assert ("time", "10:00") in found
    assert ("number", "10") in found


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Opened items can only be returned, unless damaged.", {"only", "unless"}),
        ("You can't return it", {"not"}),
        ("We cannot do that without a receipt", {"not", "without"}),
        ("Never, except on Sundays", {"never", "except"}),
        ("No refunds.", {"no"}),
        ("Returns are accepted.", set()),
    ],
)
def test_restriction_words(text: str, words: set[str]) -> None:
    assert restriction_words(text) == words
