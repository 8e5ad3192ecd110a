"""What every end-of-turn judge shares: the words that say a sentence is not over.

An audio turn model hears prosody; it cannot know that "my order number is" needs a number
after it. When the recogniser's transcript of the utterance so far is at hand, a sentence that
ends on a filler, an article, a preposition, a conjunction or a linking verb, or trails off
("...", ","), is going on whatever its pitch did: the judge's probability is capped
(:data:`GOING_ON_CAP`). A transcript ending in ``?`` is left to the audio: a question may end
on "for" or "to" ("what is it for?"). Only English words are known; other locales pass through.
"""

from __future__ import annotations

import re

GOING_ON_CAP = 0.05
"""The highest end-of-turn probability a sentence that visibly goes on may get."""

_GOES_ON: frozenset[str] = frozenset(
    {
        # fillers
        "um", "umm", "uh", "uhh", "uhm", "er", "erm", "ah", "like",
        # articles and determiners
        "a", "an", "the", "my", "your", "our", "their", "his", "her", "its", "this", "that's",
        "some", "any", "every",
        # prepositions
        "to", "for", "of", "on", "in", "at", "from", "with", "about", "by", "into", "onto",
        "than", "via", "per",
        # conjunctions
        "and", "or", "but", "so", "because", "if", "when", "while", "although", "though",
        "unless", "whether", "then", "plus",
        # linking and auxiliary verbs
        "is", "are", "was", "were", "am", "be", "been", "it's", "i'm", "i'd", "i'll", "i've",
        "can", "could", "would", "will", "should", "do", "does", "did", "have", "has", "want",
        "need",
    }
)  # fmt: skip
_TRAILING = ("...", "\u2026", ",", "-", "\u2014", ":", ";")
_WORD = re.compile(r"[a-z0-9']+")


def words_go_on(transcript: str, locale: str = "en-US") -> bool:
    """The transcript of an utterance so far visibly stops mid-sentence."""
    text = transcript.strip()
    if not text or not locale.lower().startswith("en"):
        return False
    if text.endswith(_TRAILING):
        return True
    if text.endswith("?"):
        return False
    words = _WORD.findall(text.lower().replace("\u2019", "'"))
    return bool(words) and words[-1] in _GOES_ON


def weigh_words(probability: float, transcript: str, locale: str = "en-US") -> float:
    """The audio model's probability, capped when the words say the sentence goes on."""
    if words_go_on(transcript, locale):
        return min(probability, GOING_ON_CAP)
    return probability
