"""The time words of seed 003's call-back rule, in English, Hindi and Telugu.

Each table maps a word as it is written (lower case; Hindi and Telugu in their native script and
romanised, with the spellings callers and speech recognisers commonly produce) to the concept it
names. Two texts *share a time word* when they name a common concept: "kal shaam" and
"tomorrow evening" share both ``tomorrow`` and ``evening``. Native-script entries also match as
word stems (Telugu and Hindi attach case endings: "సాయంత్రానికి", "शाम को"); romanised ones
match whole words only, because short romanised words collide with English ("do", "kal").
"""

from __future__ import annotations

from typing import Final

DAYS: Final[dict[str, str]] = {
    # English
    "today": "today", "tonight": "today", "tomorrow": "tomorrow", "tomorow": "tomorrow",
    "tmrw": "tomorrow", "tommorow": "tomorrow", "tomorrows": "tomorrow",
    # Hindi
    "aaj": "today", "aj": "today", "आज": "today",
    "kal": "tomorrow", "kl": "tomorrow", "कल": "tomorrow",
    "parso": "day_after", "parson": "day_after", "parsoon": "day_after", "परसों": "day_after",
    "परसो": "day_after",
    # Telugu
    "ivala": "today", "ivvala": "today", "eeroju": "today", "eroju": "today", "ఈరోజు": "today",
    "ఇవాళ": "today", "ఇవ్వాళ": "today", "ఈ రోజు": "today",
    "repu": "tomorrow", "reepu": "tomorrow", "రేపు": "tomorrow",
    "ellundi": "day_after", "elundi": "day_after", "ఎల్లుండి": "day_after",
}
"""Relative days (``tonight`` is today, at night)."""

WEEKDAYS: Final[dict[str, str]] = {
    "monday": "mon", "tuesday": "tue", "tues": "tue", "wednesday": "wed", "weds": "wed",
    "thursday": "thu", "thurs": "thu", "friday": "fri", "saturday": "sat", "sunday": "sun",
    # Hindi
    "somvar": "mon", "somwar": "mon", "सोमवार": "mon",
    "mangalvar": "tue", "mangalwar": "tue", "मंगलवार": "tue",
    "budhvar": "wed", "budhwar": "wed", "बुधवार": "wed",
    "guruvar": "thu", "guruwar": "thu", "veervar": "thu", "brihaspativar": "thu",
    "गुरुवार": "thu", "बृहस्पतिवार": "thu", "वीरवार": "thu",
    "shukravar": "fri", "shukrawar": "fri", "sukravar": "fri", "शुक्रवार": "fri",
    "shanivar": "sat", "shaniwar": "sat", "शनिवार": "sat",
    "ravivar": "sun", "raviwar": "sun", "itwar": "sun", "itvaar": "sun", "रविवार": "sun",
    "इतवार": "sun",
    # Telugu
    "somavaram": "mon", "సోమవారం": "mon",
    "mangalavaram": "tue", "మంగళవారం": "tue",
    "budhavaram": "wed", "బుధవారం": "wed",
    "guruvaram": "thu", "bruhaspativaram": "thu", "గురువారం": "thu",
    "shukravaram": "fri", "sukravaram": "fri", "శుక్రవారం": "fri",
    "shanivaram": "sat", "sanivaram": "sat", "శనివారం": "sat",
    "aadivaram": "sun", "adivaram": "sun", "ఆదివారం": "sun",
}
WEEKDAY_ORDER: Final = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

PARTS: Final[dict[str, str]] = {
    "morning": "morning", "mornin": "morning", "afternoon": "afternoon", "evening": "evening",
    "eve": "evening", "night": "night", "tonight": "night", "noon": "noon", "midday": "noon",
    "lunchtime": "noon", "midnight": "midnight",
    # Hindi
    "subah": "morning", "subha": "morning", "savere": "morning", "सुबह": "morning",
    "सवेरे": "morning",
    "dopahar": "afternoon", "dopehar": "afternoon", "dophar": "afternoon", "दोपहर": "afternoon",
    "shaam": "evening", "sham": "evening", "shyam": "evening", "शाम": "evening",
    "raat": "night", "rat": "night", "रात": "night",
    # Telugu
    "udayam": "morning", "poddunna": "morning", "podduna": "morning", "ఉదయం": "morning",
    "పొద్దున": "morning", "ప్రొద్దున": "morning", "ఉదయాన్నే": "morning",
    "madhyahnam": "afternoon", "madhyanam": "afternoon", "mapatyam": "afternoon",
    "మధ్యాహ్నం": "afternoon",
    "sayantram": "evening", "saayantram": "evening", "sayantaram": "evening",
    "సాయంత్రం": "evening",
    "ratri": "night", "raatri": "night", "రాత్రి": "night",
}
"""Parts of the day; each has a default clock time (:data:`PART_CLOCK`)."""

PART_CLOCK: Final[dict[str, tuple[int, int]]] = {
    "morning": (9, 0), "noon": (12, 0), "afternoon": (15, 0), "evening": (18, 0),
    "night": (20, 0), "midnight": (0, 0),
}

OCLOCK: Final = frozenset({
    "o'clock", "oclock", "h", "baje", "bje", "bajey", "बजे",
    "gantalaku", "gantaki", "gantala", "gantalaki", "గంటలకు", "గంటకు",
})
"""Words after a number that make it a clock hour ("4 baje", "నాలుగు గంటలకు")."""

MERIDIEM: Final[dict[str, str]] = {"am": "am", "a.m": "am", "a.m.": "am", "pm": "pm",
                                  "p.m": "pm", "p.m.": "pm"}

AT: Final = frozenset({"at", "around", "by", "about", "after", "before", "till", "until",
                       "say", "approximately"})
"""Words before a number that make it a clock hour ("at 4", "around four")."""

HALF: Final = frozenset({"saade", "sade", "साढ़े", "साढे"})
"""Hindi "half past" before an hour ("saade chaar" = 4:30)."""

HALVES: Final = frozenset({"half", "aadha", "aadhe", "आधा", "आधे", "ara", "అర"})
""""half" before an hour unit: "in half an hour", "aadhe ghante mein", "ara gantalo"."""

HALF_HOUR: Final = frozenset({"aragantalo", "అరగంటలో"})
"""One word for "in half an hour" (Telugu)."""

DAY_UNITS: Final = frozenset({"day", "days", "din", "दिन", "rojulu", "rojullo", "రోజుల్లో",
                              "రోజులు"})

MINUTE_UNITS: Final = frozenset({
    "minute", "minutes", "min", "mins", "minat", "minit", "मिनट", "nimishalu", "nimishallo",
    "nimishaallo", "nimishala", "నిమిషాలు", "నిమిషాల్లో", "నిమిషాలలో", "నిమిషంలో",
})
HOUR_UNITS: Final = frozenset({
    "hour", "hours", "hr", "ghanta", "ghante", "ghantay", "घंटा", "घंटे", "gantalo",
    "గంటలో", "గంటల్లో",
})
"""Units of "in 10 minutes" / "ek ghante mein" / "oka gantalo"."""

RELATIVE_AFTER: Final = frozenset({"mein", "me", "mai", "में", "baad", "बाद", "lo", "లో",
                                  "tarvata", "taruvata", "తర్వాత"})
"""Hindi/Telugu postpositions of a duration ("10 minute mein", "padi nimishalu taruvata")."""

NUMBERS: Final[dict[str, int]] = {
    # English
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "forty": 40, "an": 1, "a": 1,
    # Hindi
    "ek": 1, "do": 2, "teen": 3, "char": 4, "chaar": 4, "paanch": 5, "panch": 5, "chhe": 6,
    "chhah": 6, "che": 6, "saat": 7, "aath": 8, "aat": 8, "nau": 9, "das": 10, "dus": 10,
    "gyarah": 11, "gyaarah": 11, "barah": 12, "baarah": 12, "pandrah": 15, "bees": 20,
    "tees": 30,
    "एक": 1, "दो": 2, "तीन": 3, "चार": 4, "पांच": 5, "पाँच": 5, "छह": 6, "छः": 6, "सात": 7,
    "आठ": 8, "नौ": 9, "दस": 10, "ग्यारह": 11, "बारह": 12, "पंद्रह": 15, "बीस": 20,
    "तीस": 30,
    # Telugu
    "okati": 1, "oka": 1, "rendu": 2, "moodu": 3, "mudu": 3, "naalugu": 4, "nalugu": 4,
    "aidu": 5, "ayidu": 5, "aaru": 6, "edu": 7, "enimidi": 8, "enmidi": 8, "tommidi": 9,
    "padi": 10, "padakondu": 11, "pannendu": 12, "padihenu": 15, "iravai": 20, "mupphai": 30,
    "ఒకటి": 1, "ఒక": 1, "రెండు": 2, "మూడు": 3, "నాలుగు": 4, "ఐదు": 5, "ఆరు": 6, "ఏడు": 7,
    "ఎనిమిది": 8, "తొమ్మిది": 9, "పది": 10, "పదకొండు": 11, "పన్నెండు": 12,
    "పదిహేను": 15, "ఇరవై": 20, "ముప్పై": 30,
}
"""Number words. Hindi and Telugu ones (and ``a``/``an``) count only next to a clock or
duration word, never on their own."""

ENGLISH_NUMBER_WORDS: Final = frozenset(
    {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
     "twelve"}
)

NEXT_WEEK: Final = (("next", "week"), ("agle", "hafte"), ("agle", "week"), ("अगले", "हफ्ते"),
                    ("vachhe", "vaaram"), ("vache", "varam"), ("వచ్చే", "వారం"))

MONTHS: Final = ("january", "february", "march", "april", "may", "june", "july", "august",
                 "september", "october", "november", "december")

CONFIRMING: Final = frozenset({
    "yes", "yeah", "yep", "yup", "ya", "sure", "ok", "okay", "fine", "perfect", "great",
    "correct", "right", "absolutely", "definitely", "please", "alright", "works", "good",
    # Hindi
    "haan", "han", "haa", "ha", "ji", "jee", "theek", "thik", "bilkul", "sahi", "हाँ", "हां",
    "जी", "ठीक", "बिल्कुल", "सही",
    # Telugu
    "avunu", "avnu", "sare", "saree", "alage", "alaage", "సరే", "అవును", "అలాగే",
})
"""Words of a confirming answer ("yes", "haan ji", "sare")."""

NEGATING: Final = frozenset({
    "no", "nope", "not", "don't", "dont", "never", "wait", "nah", "cancel", "wrong",
    "nahi", "nahin", "nai", "mat", "नहीं", "नही", "मत",
    "kaadu", "kadu", "vaddu", "ledu", "కాదు", "వద్దు", "లేదు",
})
"""Any of these turns an answer into something other than a plain yes."""

NO_FOLLOWUP: Final = (
    "no follow-up", "no follow up", "no followup", "no call back", "no callback",
    "no call-back", "not needed", "no need", "none needed", "nothing needed",
    "zaroorat nahi", "zarurat nahi", "ज़रूरत नहीं", "जरूरत नहीं", "avasaram ledu",
    "అవసరం లేదు",
)
"""Phrases of "no follow-up needed": nothing is recorded."""

NEGATE_NEXT: Final = frozenset({"not", "no", "never", "don't", "dont", "except"})
"""A time word right after these (or after these and "at"/"on") is ruled out: "not tomorrow",
"not at 4", "never on Sundays"."""
NEGATE_PREVIOUS: Final = frozenset({
    "doesn't", "isn't", "won't", "nahi", "nahin", "नहीं", "नही", "mat", "मत", "kaadu", "kadu",
    "ledu", "vaddu", "కాదు", "లేదు", "వద్దు",
})
"""A time word right before these is ruled out: "tomorrow doesn't work", "kal nahi",
"4 baje nahi", "repu kaadu"."""
LEADS: Final = frozenset({"at", "on", "in", "this", "next", "by", "around"})
