"""Whether an approved claim answers the question asked, not only shares a word with it.

Retrieval (``knowledge.search``) ranks claims by the words they share with a question, so a
claim about adult fares comes first for "Do you price match if another operator sold me a
cheaper seat?" on the one word "price". SPEC §8 lets the agent speak a claim only as an answer:
a claim answers when its wording, topics, conditions and key cover :data:`COVERAGE` of the
question's key words (:func:`key_words`: the words left without stop words and conversational
filler), and always at least one; ``knowledge.search_result`` keeps, of those, the ones that
cover most. A question no claim answers gets the agent's "I don't have an approved answer".

Pure: words in, a verdict out; generic English only, no catalog's own words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from vocero.store.knowledge import STOPWORDS

COVERAGE = 0.3
"""The share of a question's key words a claim must cover to answer it: one of five ("price"
of "price match ... another operator sold ... cheaper seat ... same trip") is a shared word;
two of five ("emergency ... who do I call" of a question that also tells a story) is one."""
_FILLER = frozenset(
    ("actually", "again", "also", "another", "anything", "anyway", "bit", "currently", "else",
     "ever", "exactly", "get", "getting", "got", "hmm", "just", "kind", "less", "lot", "lots",
     "more", "most", "nowadays", "oh", "other", "others", "really", "same", "something", "sort",
     "still", "sure", "though", "wait", "well", "wondering", "whether")
)  # fmt: skip
"""Words a question leans on without saying what it is about ("I was wondering whether ...")."""
_FILLER_PHRASES = re.compile(
    r"\b(?:these days|this year|at the moment|right now|at all|by any chance|if possible)\b"
)
_WORD = re.compile(r"[^\W_]+")


def key_words(question: str) -> list[str]:
    """The words of ``question`` that say what it asks about, stemmed, first-said order."""
    text = _FILLER_PHRASES.sub(" ", question.casefold().replace("\u2019", "'"))
    text = re.sub(r"'(?:s|re|ve|ll|d|m|t)\b", "", text)
    words = [w for w in _WORD.findall(text) if len(w) > 1]
    kept = [_stem(w) for w in words if w not in STOPWORDS and w not in _FILLER]
    return list(dict.fromkeys(kept))


def covered(question: str, claim_words: Iterable[str]) -> float:
    """The share of the question's key words that ``claim_words`` (a claim's wording, topics,
    conditions and key) say; 1.0 for a question with no key words (nothing to miss)."""
    asked = key_words(question)
    if not asked:
        return 1.0
    said = {_stem(w) for text in claim_words for w in _WORD.findall(text.casefold())}
    return sum(1 for w in asked if w in said) / len(asked)


def answers(question: str, claim_words: Iterable[str], topics: Iterable[str] = ()) -> bool:
    """Whether a claim of these words answers ``question``: it covers :data:`COVERAGE` of its
    key words (and at least one), or two of them are words of its ``topics`` (what the catalog's
    author said it is about: "old tins of paint and a couple of car batteries ..." asks the
    claim about paint and batteries, however long the story around them); and, where the
    question asks in a main clause after a clause that sets the scene ("When I take a trailer
    to the transfer station, can I pay with cash?"), it covers a key word of what is asked."""
    asked = key_words(question)
    if not asked:
        return True
    claim_words = list(claim_words)
    share = covered(question, claim_words)
    on_topic = _topics_said(set(asked), topics) >= 2
    if not (on_topic or (share >= COVERAGE and share > 0)):
        return False
    main = main_clause(question)  # judged where it says enough: two key words at least
    return main is None or len(key_words(main)) < 2 or covered(main, claim_words) > 0


_SCENE = re.compile(
    r"^\W*(?:when|whenever|if|after|before|once|while|since)\b[^,?]{3,}?,\s*(?P<main>[^,]+\?)\s*$",
    re.IGNORECASE,
)


def main_clause(question: str) -> str | None:
    """What a question asks after the clause that sets its scene ("When I take a trailer load
    to the transfer station, can I pay with cash or is it card only?" -> "can I pay with cash or
    is it card only?"); ``None`` for a question without such a clause."""
    sentence = question.strip()
    found = _SCENE.match(sentence)
    return found.group("main") if found else None


def asked_sentences(question: str) -> str:
    """The sentences of a line that ask (end in "?"), the line whole where none does: "My bins
    go out on a Friday. What happens on Christmas Day?" asks about Christmas Day."""
    asking = [s for s in re.findall(r"[^.?!]*\?", question) if s.strip()]
    return " ".join(asking) if asking else question


def _topics_said(asked: set[str], topics: Iterable[str]) -> int:
    """How many of a claim's topics the question says, each whole and counted once ("gas
    bottle" and "gas bottles" are one; "gas" inside "gas bottle" is not another)."""
    said = {
        frozenset(words)
        for t in topics
        if (words := key_words(t)) and set(words) <= asked and not set(words) <= _GENERIC
    }
    return sum(1 for s in said if not any(s < other for other in said))


def _stem(word: str) -> str:
    """A crude English stem, enough to hear "charged" in "charge" and "Saturdays" in
    "Saturday": plural, past and -ing endings, then a final "e"."""
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if len(word) > len(suffix) + 1 and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)] + replacement
            break
    return word.removesuffix("e") if len(word) > 3 else word


_GENERIC = frozenset(
    _stem(w)
    for w in ("time", "times", "day", "days", "date", "week", "weekend", "month", "year", "today",
              "tomorrow", "morning", "afternoon", "evening", "night", "hour", "hours", "number",
              "cost", "price", "much", "many", "free", "new", "change")
)  # fmt: skip
"""Topic words any question may say ("what time", "morning", "how much"): a topic made only of
them proves no question is about that claim."""
