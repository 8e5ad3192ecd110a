"""The shared lexicon (vocero/contracts/lexicon) is the one source of month, weekday, number and
time words: every reader of dates, times and quantities understands every word it lists, and
none of them writes its own table of those words."""

from __future__ import annotations

import ast
import datetime as dt
import re
from pathlib import Path

import pytest

from vocero.contracts import values
from vocero.contracts.builtins import Context
from vocero.contracts.lexicon import LEXICONS
from vocero.contracts.lexicon.base import WEEKDAY_CODES
from vocero.contracts.lexicon.en import LEXICON as EN
from vocero.followups import timewords
from vocero.orchestrator.spoken_answers import numbers_in
from vocero.policy.canonical import resolve_date, resolve_time
from vocero.speech.values import critical_values

TODAY = dt.date(2026, 12, 1)  # a Tuesday
CTX = Context(tenant="acme", timezone="UTC", now=dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC))
EN_MONTHS = sorted({**EN.calendar.months, **EN.calendar.month_abbreviations}.items())
EN_WEEKDAYS = sorted(EN.calendar.weekdays.items())
EVERY_WEEKDAY = sorted(
    (lexicon.language, word, index)
    for lexicon in LEXICONS.values()
    for word, index in lexicon.calendar.weekdays.items()
)
READERS = [
    "vocero/speech/values.py",
    "vocero/policy/canonical.py",
    "vocero/contracts/values",
    "vocero/inference/dialogue/cues.py",
    "vocero/inference/dialogue/manager.py",
    "vocero/orchestrator/spoken_answers.py",
    "vocero/followups/lexicon.py",
    "vocero/followups/timewords.py",
]


@pytest.mark.parametrize(("word", "month"), EN_MONTHS)
def test_every_month_word_is_a_month_to_every_reader(word: str, month: int) -> None:
    said = f"{word.capitalize()} 14"
    assert ("date", f"{month:02d}-14") in [v.key for v in critical_values(said)]
    assert values.date_in(said, TODAY) == f"{2026 + (month < 12):d}-{month:02d}-14"
    assert resolve_date("date", said, CTX) == dt.date(2026 + (month < 12), month, 14)
    assert f"date:{month:02d}-14" in timewords.read(said).days


@pytest.mark.parametrize(("word", "index"), EN_WEEKDAYS)
def test_every_english_weekday_is_that_weekday_to_every_reader(word: str, index: int) -> None:
    assert critical_values(word.capitalize())[0].key == ("weekday", WEEKDAY_CODES[index])
    found = values.date_in(f"on {word}", TODAY)
    assert found is not None and dt.date.fromisoformat(found).weekday() == index
    assert resolve_date("date", f"next {word}", CTX).weekday() == index


@pytest.mark.parametrize(("language", "word", "index"), EVERY_WEEKDAY)
def test_every_weekday_of_every_language_is_a_call_back_day(
    language: str, word: str, index: int
) -> None:
    assert WEEKDAY_CODES[index] in timewords.read(f"{word} 4 pm").days, language


@pytest.mark.parametrize(
    ("word", "short"), sorted(EN.calendar.weekday_abbreviations.items())
)
def test_a_weekday_short_form_counts_capitalised(word: str, short: int) -> None:
    assert critical_values(word.capitalize())[0].key == ("weekday", WEEKDAY_CODES[short])
    lowered = critical_values(f"we {word} down")
    assert bool(lowered) is (word not in EN.calendar.capitalised_only)


@pytest.mark.parametrize(
    ("language", "word", "ahead"),
    sorted(
        (lexicon.language, word, ahead)
        for lexicon in LEXICONS.values()
        for word, ahead in lexicon.calendar.relative_days.items()
        if ahead >= 0 and " " not in word
    ),
)
def test_every_relative_day_ahead_is_read_by_the_call_back_rule(
    language: str, word: str, ahead: int
) -> None:
    days = timewords.read(f"{word} 4 pm").days
    assert days and days[0] == ("today", "tomorrow", "day_after")[ahead], language


@pytest.mark.parametrize(("word", "ahead"), sorted(EN.calendar.relative_days.items()))
def test_every_english_relative_day_is_a_date(word: str, ahead: int) -> None:
    day = (TODAY + dt.timedelta(days=ahead)).isoformat()
    assert ("date", day) in [v.key for v in critical_values(f"It is {word}.", today=TODAY)]
    if ahead >= 0:
        assert values.date_in(f"call me {word}", TODAY) == day
        assert resolve_date("date", word, CTX).isoformat() == day


@pytest.mark.parametrize(("word", "clock"), sorted(EN.clock.named_times.items()))
def test_every_named_time_is_that_clock_time(word: str, clock: tuple[int, int]) -> None:
    hhmm = f"{clock[0]:02d}:{clock[1]:02d}"
    assert critical_values(f"at {word}")[0].key == ("time", hhmm)
    assert values.time_in(f"at {word}") == hhmm
    assert resolve_time("time", word) == hhmm


@pytest.mark.parametrize(("word", "value"), sorted(EN.numbers.cardinals.items()))
def test_every_english_number_word_is_its_number(word: str, value: int) -> None:
    assert numbers_in(f"{word} people") == [value]
    if word != "one":  # "the one on Friday" carries no quantity
        assert critical_values(f"{word} days")[0].key == ("number", str(value))
    if 1 <= value <= 12:
        assert values.time_in(f"at {word} pm") == f"{value % 12 + 12:02d}:00"


def test_every_language_s_numbers_count_in_a_call_back_delay() -> None:
    for lexicon in LEXICONS.values():
        for word, value in lexicon.numbers.cardinals.items():
            if 1 <= value <= 30:
                unit = {"en": "minutes", "hi": "minute mein", "te": "nimishallo"}
                said = f"in {word} {unit[lexicon.language]}"
                assert timewords.read(said).delays == (value,), (lexicon.language, word)


def _table_strings(path: Path) -> list[str]:
    """The string constants of a module that are not documentation (a string statement)."""
    tree = ast.parse(path.read_text())
    documentation = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in documentation
    ]


@pytest.mark.parametrize("reader", READERS)
def test_no_reader_writes_its_own_month_weekday_or_number_table(reader: str) -> None:
    """Two names of one kind in one string, or one as a whole string, is a table of its own."""
    root = Path(__file__).resolve().parents[2]
    paths = sorted((root / reader).rglob("*.py")) if (root / reader).is_dir() else [root / reader]
    kinds = {
        "month": set(EN.calendar.months),
        "weekday": set(EN.calendar.weekdays),
        "number": {w for w, v in EN.numbers.cardinals.items() if v >= 13},
    }
    for path in paths:
        for text in _table_strings(path):
            words = re.findall(r"[a-z]+", text.lower())
            for kind, names in kinds.items():
                listed = {w for w in words if w in names}
                assert len(listed) < 2 and text.lower() not in names, (path.name, kind, text)
