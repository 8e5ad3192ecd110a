"""Telugu, in Telugu script and romanised: the words a sentence cannot end on.

Telugu puts the verb last and attaches most case endings to the noun ("ఆర్డర్‌లో"), so the open
words are the free-standing ones: conjunctions ("mariyu", "kaani", "endukante"), postpositions
written apart ("gurinchi", "kosam", "nundi"), possessive pronouns before a noun ("naa", "mee")
and fillers ("ante").
"""

from __future__ import annotations

from typing import Final

from vocero.contracts.lexicon.base import Lexicon, open_table, word_set

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
)
