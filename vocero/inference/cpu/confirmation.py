"""Rules that classify an answer to "Shall I go ahead?" as confirm, reject or uncertain.

A wrong "confirm" executes an action the caller did not want, so the rules are strict: a
question, a hedge or a mixed answer is uncertain, and only a clear yes confirms. What the rules
do not recognise goes to the model, constrained to the three labels.
"""

from __future__ import annotations

import re
from typing import Literal

Intent = Literal["confirm", "reject", "uncertain"]

_HEDGE = re.compile(
    r"\?|\b(?:maybe|perhaps|probably|i think|i guess|i suppose|not sure|unsure|let me think|"
    r"hmm+|hold on|wait|which|what|when|why|how|i don'?t know|depends)\b",
    re.IGNORECASE,
)
_REJECT = re.compile(
    r"^(?:no|nope|nah|negative|don'?t|do not|stop|cancel(?: that| it)?|never ?mind|not (?:now|yet|"
    r"really)|leave it)\b|\b(?:changed my mind|don'?t do|do not do|leave it as it is)\b",
    re.IGNORECASE,
)
_CONFIRM = re.compile(
    r"^(?:yes|yeah|yep|yup|sure|ok|okay|correct|right|that'?s right|that'?s correct|go ahead|"
    r"do it|confirm(?:ed)?|please do|absolutely|affirmative|sounds good|of course|definitely|"
    r"exactly|alright|all right)\b",
    re.IGNORECASE,
)


_LONE_YES = re.compile(r"^(yes|yeah|yep)\?$", re.IGNORECASE)
_ONLY_NO = re.compile(r"^(?:(?:no|nope|nah)[\s?.!,]*)+$", re.IGNORECASE)
"""Nothing but no-words, however punctuated: Whisper writes a flat "No" as "No?" or "Nope?
No?". Taking it for a no is safe (nothing runs on a no; the caller may ask again)."""


def classify(answer: str) -> Intent | None:
    """The label the rules are sure of, or ``None`` when the model must decide."""
    text = answer.strip().strip(" .!,")
    if not text:
        return "uncertain"
    # Whisper writes a short "Yes" said with a rising voice as "Yes?": a lone yes is a yes.
    text = _LONE_YES.sub(r"\1", text)
    if _ONLY_NO.match(text):
        return "reject"
    if _HEDGE.search(text):
        return "uncertain"
    rejects, confirms = bool(_REJECT.search(text)), bool(_CONFIRM.search(text))
    if rejects and confirms:
        return "uncertain"
    if rejects:
        return "reject"
    if confirms:
        return "confirm"
    return None
