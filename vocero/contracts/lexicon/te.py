"""Telugu, in Telugu script and romanised: the words a sentence cannot end on.

Telugu puts the verb last and attaches most case endings to the noun ("ఆర్డర్‌లో"), so the open
words are the free-standing ones: conjunctions ("mariyu", "kaani", "endukante"), postpositions
written apart ("gurinchi", "kosam", "nundi"), possessive pronouns before a noun ("naa", "mee")
and fillers ("ante").

Calendar, number and clock words: weekdays, relative days ("repu" tomorrow, "ellundi" the day
after), numbers to thirty, parts of day, "gantalaku", "ara" (half) and delay units. Telugu month
names, ordinals, scales and named times (noon, midnight) are not listed: no plane reads them yet;
callers say English month names.
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
    word_set,
)

CALENDAR: Final = CalendarWords(
    weekdays=inverted({
        0: "somavaram సోమవారం",
        1: "mangalavaram మంగళవారం",
        2: "budhavaram బుధవారం",
        3: "guruvaram bruhaspativaram గురువారం",
        4: "shukravaram sukravaram శుక్రవారం",
        5: "shanivaram sanivaram శనివారం",
        6: "aadivaram adivaram ఆదివారం",
    }),
    relative_days={
        **inverted({
            0: "ivala ivvala eeroju eroju ఈరోజు ఇవాళ ఇవ్వాళ",
            1: "repu reepu రేపు",
            2: "ellundi elundi ఎల్లుండి",
        }),
        "ఈ రోజు": 0,
    },
)

NUMBERS: Final = NumberWords(
    cardinals=inverted({
        0: "sunna సున్నా",
        1: "okati oka ఒకటి ఒక", 2: "rendu రెండు", 3: "moodu mudu మూడు", 4: "naalugu nalugu నాలుగు",
        5: "aidu ayidu ఐదు", 6: "aaru ఆరు", 7: "edu ఏడు", 8: "enimidi enmidi ఎనిమిది",
        9: "tommidi తొమ్మిది", 10: "padi పది", 11: "padakondu పదకొండు",
        12: "pannendu పన్నెండు", 15: "padihenu పదిహేను", 20: "iravai ఇరవై", 30: "mupphai ముప్పై",
    }),
)  # fmt: skip

CLOCK: Final = ClockWords(
    parts_of_day=inverted({
        "morning": "udayam poddunna podduna ఉదయం పొద్దున ప్రొద్దున ఉదయాన్నే",
        "afternoon": "madhyahnam madhyanam mapatyam మధ్యాహ్నం",
        "evening": "sayantram saayantram sayantaram సాయంత్రం",
        "night": "ratri raatri రాత్రి",
    }),
    oclock=word_set("gantalaku gantaki gantala gantalaki గంటలకు గంటకు"),
    fractions=inverted({30: "ara అర"}),
    half_hour=word_set("aragantalo అరగంటలో"),
    durations=inverted({
        "minute": "nimishalu nimishallo nimishaallo nimishala నిమిషాలు నిమిషాల్లో నిమిషాలలో "
        "నిమిషంలో",
        "hour": "gantalo గంటలో గంటల్లో",
        "day": "rojulu rojullo రోజుల్లో రోజులు",
    }),
)

LEXICON: Final = Lexicon(
    language="te",
    open_words=open_table(
        filler="um umm uh ante emitante అంటే ఏమిటంటే",
        preposition="gurinchi kosam nundi nunchi lo గురించి కోసం నుండి నుంచి",
        conjunction="mariyu kaani kani leda ledaa endukante ayite aite మరియు కానీ లేదా ఎందుకంటే అయితే",
        possessive="naa maa mee నా మా మీ",
    ),
    digit_words=word_set(
        "sunna okati rendu moodu naalugu aidu aaru edu enimidi tommidi "
        "సున్నా ఒకటి రెండు మూడు నాలుగు ఐదు ఆరు ఏడు ఎనిమిది తొమ్మిది"
    ),
    greetings=word_set("namaskaram namaste నమస్కారం నమస్తే"),
    calendar=CALENDAR,
    numbers=NUMBERS,
    clock=CLOCK,
)
