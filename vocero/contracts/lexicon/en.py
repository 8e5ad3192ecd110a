"""English: the words a sentence cannot end on, spelled digits, greetings, and the calendar,
number and clock words (with the misspellings recognisers print: "tmrw", "tommorow").

A word is open only when a finished English statement practically never ends on it; words that
often end one ("up", "over", "me", "it", "there") are not listed. A question may end on a
preposition or an auxiliary ("What is it for?", "Which appointments do I have?"): the reader of
these words decides that from the question (:mod:`vocero.inference.turn`).
"""

from __future__ import annotations

from typing import Final

from vocero.contracts.lexicon.base import (
    CalendarWords,
    ClockWords,
    Lexicon,
    NumberWords,
    inverted,
    open_table,
    ordered,
    word_set,
)

CALENDAR: Final = CalendarWords(
    months=ordered(
        "january february march april may june july august september october november december",
        start=1,
    ),
    month_abbreviations=inverted({
        1: "jan", 2: "feb", 3: "mar", 4: "apr", 6: "jun", 7: "jul", 8: "aug", 9: "sep sept",
        10: "oct", 11: "nov", 12: "dec",
    }),
    weekdays=ordered("monday tuesday wednesday thursday friday saturday sunday"),
    weekday_abbreviations=inverted({
        0: "mon", 1: "tue tues", 2: "wed weds", 3: "thu thur thurs", 4: "fri", 5: "sat", 6: "sun",
    }),
    capitalised_only=word_set("mon tue wed thu fri sat sun"),
    relative_days={
        **inverted({
            -1: "yesterday", 0: "today tonight", 1: "tomorrow tomorow tommorow tmrw tomorrows",
        }),
        "day after tomorrow": 2,
    },
)  # fmt: skip

NUMBERS: Final = NumberWords(
    cardinals=ordered(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen"
    )
    | inverted({
        20: "twenty", 30: "thirty", 40: "forty", 50: "fifty", 60: "sixty", 70: "seventy",
        80: "eighty", 90: "ninety",
    }),
    ordinals=ordered(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
        "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth",
        start=1,
    )
    | {"thirtieth": 30},
    scales={"hundred": 100, "thousand": 1000},
    repeats={"double": 2, "triple": 3},
    articles=word_set("a an"),
)  # fmt: skip

CLOCK: Final = ClockWords(
    named_times={"noon": (12, 0), "midday": (12, 0), "midnight": (0, 0)},
    parts_of_day=inverted({
        "morning": "morning mornin", "noon": "noon midday lunchtime", "afternoon": "afternoon",
        "evening": "evening eve", "night": "night tonight", "midnight": "midnight",
    }),
    meridiem=inverted({"am": "am a.m a.m.", "pm": "pm p.m p.m."}),
    oclock=word_set("o'clock oclock h"),
    fractions={"half": 30, "quarter": 15},
    durations=inverted({
        "minute": "minute minutes min mins", "hour": "hour hours hr", "day": "day days",
    }),
)  # fmt: skip

LEXICON: Final = Lexicon(
    language="en",
    open_words=open_table(
        filler="um umm uh uhh uhm er erm ah like",
        article="a an the this these those some any every each another",
        preposition="to for of on in at from with about by into onto than via per including "
        "between towards toward without",
        conjunction="and or but so because if when while although though unless whether then "
        "plus nor as",
        relative="that which who whom whose where that's",
        possessive="my your our their his her its",
        auxiliary="is are was were am be been being it's i'm i'd i'll i've we're you're "
        "they're he's she's there's can could would will should shall must do does did have has "
        "want need gonna wanna gotta",
    ),
    digit_words=word_set("zero oh one two three four five six seven eight nine double triple"),
    greetings=word_set("hello hi hey hiya good morning afternoon evening there"),
    calendar=CALENDAR,
    numbers=NUMBERS,
    clock=CLOCK,
)
