"""Deterministic extraction of typed argument values from one transcribed utterance.

A small model copies identifiers and does date arithmetic badly; these rules do both exactly.
Each extractor takes the utterance (as a speech recogniser prints it, or as typed) and returns a
canonical value or ``None``: identifiers upper-cased, dates as ``YYYY-MM-DD`` resolved against
``today``, times as ``HH:MM`` on a 24-hour clock, moments as ISO 8601 with the caller's offset,
free-text phrases as said.

Callers say numbers as words and the recogniser often prints them so ("C nineteen", "at eleven",
"half past three"); the rules first rewrite spoken numbers into digits, then read the digits.
What was said but cannot be a value ("27 pm", "at 25:00") gives ``None``, never a wrapped value:
a missing value is asked for, a wrong one would be executed. Nothing here knows a profile's tool
or field names: :mod:`vocero.inference.dialogue.router` picks the extractor from the field's JSON
Schema.

One module a kind of value: :mod:`.numbers` (spoken numbers as digits), :mod:`.times` (clock
times), :mod:`.dates` (dates and moments), :mod:`.identifiers`, :mod:`.phrases` (when and what
about, as said). Month, weekday, number and time words are the English lexicon's
(:mod:`vocero.contracts.lexicon`).
"""

from vocero.contracts.values.dates import (
    date_in,
    mark_days,
    moment_in,
    month_day_in,
    next_date,
    next_day_of_month,
    weekday_date,
)
from vocero.contracts.values.durations import duration_minutes
from vocero.contracts.values.identifiers import bare_identifier, identifier_in, pattern_accepts
from vocero.contracts.values.phrases import (
    age_asked,
    asked_alike,
    length_asked,
    reason_phrase,
    requested_thing,
    when_phrase,
)
from vocero.contracts.values.times import hour_of, part_of_day, spoken_times, time_in

__all__ = [
    "age_asked",
    "asked_alike",
    "bare_identifier",
    "date_in",
    "duration_minutes",
    "hour_of",
    "identifier_in",
    "length_asked",
    "mark_days",
    "moment_in",
    "month_day_in",
    "next_date",
    "next_day_of_month",
    "part_of_day",
    "pattern_accepts",
    "reason_phrase",
    "requested_thing",
    "spoken_times",
    "time_in",
    "weekday_date",
    "when_phrase",
]
