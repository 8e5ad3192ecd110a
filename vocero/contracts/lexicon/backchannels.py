"""Words that do not take the turn: backchannels, and the sounds a recogniser writes for no words.

* :data:`BACKCHANNELS`: a short acknowledgement said over the agent ("mm-hmm", "okay"): heard
  as a partial, it does not stop the agent (``orchestrator/listening.py``).
* :data:`NO_WORDS`: what is left of a sound that carried no request once its transcript is
  final: a filler, a hum, a hesitation ("um", "uh", "hmm"). Said *alone* it is not a turn;
  at the start of a real interruption ("Um, actually ...") the partial heard it before the
  words came, which is why only the final is read with it (ADR-0038).

English only: the project's other languages have no backchannel list yet.
"""

from __future__ import annotations

import re

BACKCHANNELS: frozenset[str] = frozenset(
    {
        "mm",
        "mhm",
        "mm-hmm",
        "mmhmm",
        "mm hmm",
        "uh-huh",
        "uh huh",
        "uhhuh",
        "okay",
        "ok",
        "yeah",
        "yep",
        "right",
        "sure",
        "i see",
        "got it",
        "alright",
        "all right",
        "hmm",
    }
)
NO_WORDS: frozenset[str] = frozenset(
    {"um", "umm", "uh", "uhh", "ah", "ahh", "oh", "er", "erm", "hm", "hmm", "mmm", "mm"}
)
_NON_SPEECH = re.compile(r"\[[^\]]*\]|\([^)]*\)|\*[^*]*\*|♪+")
"""What a recogniser writes for a sound it heard as no words: "[cough]", "(coughing)",
"*sighs*", "♪"."""
_PUNCTUATION = re.compile(r"[.,!?;:…\"]")


def cleaned(text: str) -> str:
    """``text`` lower-cased, without punctuation, non-speech marks or repeated spaces."""
    text = _NON_SPEECH.sub(" ", text.lower())
    return " ".join(_PUNCTUATION.sub(" ", text).split())


def is_backchannel(text: str) -> bool:
    """A short acknowledgement that does not ask to take the turn."""
    return cleaned(text) in BACKCHANNELS


def has_no_words(text: str) -> bool:
    """The final transcript of a sound is empty, only non-speech marks, only fillers, or only
    backchannels ("Mm-hmm, okay."): nothing the caller asked for. "Uh-uh" (no) is a word."""
    words = cleaned(text)
    if words in BACKCHANNELS:
        return True
    return all(word in NO_WORDS or word in BACKCHANNELS for word in words.split())
