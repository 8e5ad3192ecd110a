"""What every end-of-turn judge shares: the words that say a sentence is not over.

An audio turn model hears prosody; it cannot know that "my order number is" needs a number
after it. When the recogniser's transcript of the utterance so far is at hand, a sentence that
ends on a filler, an article, a preposition, a conjunction or a linking verb, or trails off
("...", ","), is going on whatever its pitch did: the judge's probability is capped
(:data:`GOING_ON_CAP`). A transcript ending in ``?`` is left to the audio: a question may end
on "for" or "to" ("what is it for?"). Only English words are known; other locales pass through.

Words can also say the sentence is over (:func:`words_finish`): a clause of at least
:data:`MIN_FINISHED_WORDS` words that the recogniser closed with ".", "?" or "!", whose last word
does not go on, is no digit, spelled out or not (a code or a list of digits is read out with
pauses in it), and is not Whisper's habitual "you" on a trailing pause. The audio model, trained
on prosody alone, often doubts a finished question ("Which appointments do I have?"); the turn
policy then ends the turn at a lower probability (``TurnTaking.finished_probability``). A lone
greeting ("Hello,") is a caller about to say why they called: it goes on.
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
_GREETINGS: frozenset[str] = frozenset(
    {"hello", "hi", "hey", "hiya", "good", "morning", "afternoon", "evening", "there"}
)
_DIGIT_WORDS: frozenset[str] = frozenset(
    {
        "zero", "oh", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
        "double", "triple",
    }
)  # fmt: skip
_CLOSED = (".", "?", "!")
MIN_FINISHED_WORDS = 4
"""Fewer words than this never read as finished ("Can you help?" at a pause is often the start
of "Can you help me with ..."; a short answer is left to the audio)."""
_QUESTION_OPENERS: frozenset[str] = frozenset(
    {
        "what", "which", "who", "whom", "where", "when", "why", "how", "do", "does", "did",
        "can", "could", "would", "will", "is", "are", "am", "was", "were", "should", "may",
        "have", "has",
    }
)  # fmt: skip
_STRANDED: frozenset[str] = frozenset(
    {
        "to", "for", "of", "on", "in", "at", "from", "with", "about", "by", "into", "onto",
        "is", "are", "am", "was", "were", "be", "been", "can", "could", "would", "will",
        "should", "do", "does", "did", "have", "has",
    }
)  # fmt: skip
"""Words a question may end on ("Who am I speaking with", "Which appointments do I have")."""
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
    words = _words(text)
    if words and all(word in _GREETINGS for word in words):
        return True  # "Hello." at a pause: the reason for the call follows
    if not words or _stranded_question(words):
        return False
    return words[-1] in _GOES_ON


def _stranded_question(words: list[str]) -> bool:
    """A question the recogniser closed with "." that ends on a preposition or an auxiliary."""
    return (
        len(words) >= MIN_FINISHED_WORDS
        and words[0] in _QUESTION_OPENERS
        and words[-1] in _STRANDED
    )


def words_finish(transcript: str, locale: str = "en-US") -> bool:
    """The transcript of an utterance so far reads as a finished clause."""
    text = transcript.strip()
    if not locale.lower().startswith("en"):
        return False
    if not text.endswith(_CLOSED) or text.endswith(_TRAILING) or words_go_on(text, locale):
        return False
    words = _words(text)
    if len(words) < MIN_FINISHED_WORDS or words[-1] in _DIGIT_WORDS:
        return False
    if any(ch.isdigit() for ch in words[-1]):
        return False  # "The code is 47." may be a code read out in parts: left to the audio
    return not (words[-1] == "you" and words[-2] != "thank")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def weigh_words(probability: float, transcript: str, locale: str = "en-US") -> float:
    """The audio model's probability, capped when the words say the sentence goes on."""
    if words_go_on(transcript, locale):
        return min(probability, GOING_ON_CAP)
    return probability
