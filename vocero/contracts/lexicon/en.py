"""English: the words a sentence cannot end on, spelled digits, greetings.

A word is open only when a finished English statement practically never ends on it; words that
often end one ("up", "over", "me", "it", "there") are not listed. A question may end on a
preposition or an auxiliary ("What is it for?", "Which appointments do I have?"): the reader of
these words decides that from the question (:mod:`vocero.inference.turn`).
"""

from __future__ import annotations

from typing import Final

from vocero.contracts.lexicon.base import Lexicon, open_table, word_set

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
)
