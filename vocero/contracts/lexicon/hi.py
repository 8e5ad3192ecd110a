"""Hindi, in Devanagari and romanised: the words a sentence cannot end on.

Hindi puts the verb last (subject, object, verb): a sentence that stops on a postposition ("ko",
"se", "mein"), a possessive ("mera"), a conjunction ("aur", "kyunki", "ki") or a filler
("matlab") has its verb still to come. Romanised words are listed only where they do not collide
with a Hindi word a sentence ends on ("main" is both "in" and "I": left out; so is "to").

Calendar, number and clock words: weekdays, relative days ("kal" is read as tomorrow: it is also
yesterday, but a caller asking for a call-back means the coming one), numbers to thirty, parts of
day, "baje", "saade", "aadha" and delay units. Hindi month names, ordinals, scales and named
times (noon, midnight) are not listed: no plane reads them yet; callers say English month names.
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
        0: "somvar somwar सोमवार",
        1: "mangalvar mangalwar मंगलवार",
        2: "budhvar budhwar बुधवार",
        3: "guruvar guruwar veervar brihaspativar गुरुवार बृहस्पतिवार वीरवार",
        4: "shukravar shukrawar sukravar शुक्रवार",
        5: "shanivar shaniwar शनिवार",
        6: "ravivar raviwar itwar itvaar रविवार इतवार",
    }),
    relative_days=inverted({
        0: "aaj aj आज", 1: "kal kl कल", 2: "parso parson parsoon परसों परसो",
    }),
)

NUMBERS: Final = NumberWords(
    cardinals=inverted({
        0: "shunya शून्य",
        1: "ek एक", 2: "do दो", 3: "teen तीन", 4: "char chaar चार", 5: "paanch panch पांच पाँच",
        6: "chhe chhah che छह छः", 7: "saat सात", 8: "aath aat आठ", 9: "nau नौ",
        10: "das dus दस", 11: "gyarah gyaarah ग्यारह", 12: "barah baarah बारह",
        15: "pandrah पंद्रह", 20: "bees बीस", 30: "tees तीस",
    }),
)  # fmt: skip

CLOCK: Final = ClockWords(
    parts_of_day=inverted({
        "morning": "subah subha savere सुबह सवेरे",
        "afternoon": "dopahar dopehar dophar दोपहर",
        "evening": "shaam sham shyam शाम",
        "night": "raat rat रात",
    }),
    oclock=word_set("baje bje bajey बजे"),
    fractions=inverted({30: "aadha aadhe आधा आधे"}),
    half_past=word_set("saade sade साढ़े साढे"),
    durations=inverted({
        "minute": "minat minit मिनट", "hour": "ghanta ghante ghantay घंटा घंटे", "day": "din दिन",
    }),
)

LEXICON: Final = Lexicon(
    language="hi",
    open_words=open_table(
        filler="um umm uh matlab yaani मतलब यानी",
        preposition="ko se mein tak ka ki ke par pe को से में तक का की के पर पे",
        conjunction="aur ya lekin magar kyunki kyonki agar jab taaki jaise और या लेकिन मगर "
        "क्योंकि अगर जब ताकि जैसे कि",
        relative="jo jis jiska जो जिस जिसका",
        possessive="mera meri mere hamara hamari hamare aapka aapki aapke मेरा मेरी मेरे हमारा "
        "हमारी हमारे आपका आपकी आपके",
    ),
    digit_words=word_set(
        "shunya ek do teen char paanch chhah saat aath nau शून्य एक दो तीन चार पांच पाँच छह सात आठ नौ"
    ),
    greetings=word_set("namaste namaskar नमस्ते नमस्कार"),
    calendar=CALENDAR,
    numbers=NUMBERS,
    clock=CLOCK,
)
