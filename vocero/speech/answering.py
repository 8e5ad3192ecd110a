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


def answers(question: str, claim_words: Iterable[str]) -> bool:
    """Whether a claim of these words answers ``question`` (:data:`COVERAGE` of its key
    words, and at least one)."""
    asked = key_words(question)
    share = covered(question, claim_words)
    return not asked or (share >= COVERAGE and share > 0)


def _stem(word: str) -> str:
    """A crude English stem, enough to hear "charged" in "charge" and "Saturdays" in
    "Saturday": plural, past and -ing endings, then a final "e"."""
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if len(word) > len(suffix) + 1 and word.endswith(suffix) and not word.endswith("ss"):
            word = word[: -len(suffix)] + replacement
            break
    return word.removesuffix("e") if len(word) > 3 else word
