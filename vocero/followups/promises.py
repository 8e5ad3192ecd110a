"""Finding promises in heard assistant text: the lexical detector behind ``promised_unbooked``.

The call-back rule stops a false *record*; it cannot stop a sentence. This detector finds the
residue: a heard sentence that commits the business to contact the caller later. A sentence is a
promise when it has a commitment form and none of the forms that undo one:

* commitment (English): a future of a contact verb ("someone **will call** you", "we**'ll
  ring** you", "our team **will get back** to you", "I'll **have someone call** you", "we'll
  **be in touch**", "we'll **send** the quotation"); the caller as recipient ("you'll **get a
  call**", "you'll **hear from us**", "**expect a call**"); or a booking stated as done
  ("I've **booked a call-back**", "your call-back **is scheduled**", "I've **arranged for** the
  manager **to phone** you");
* commitment (Hindi, Telugu; native script and romanised): the future of call/phone/contact
  ("call **karenge**", "फ़ोन **करेंगे**", "संपर्क **करेगी**", "call **chestamu**",
  "కాల్ **చేస్తాము**", "**సంప్రదిస్తుంది**");
* undone by: a question ("Shall I have someone call you?" - an offer is not a promise), a
  negation ("nobody will call", "I haven't booked", "nahin", "ledu"), or a condition or mere
  possibility ("if you like", "we could", "I can arrange").

It is lexical by design (measured, not assumed: docs/followups.md): a promise worded around these
forms is missed, and a commitment-shaped sentence about something else is flagged. Precision and
recall on the labelled corpus ``fixtures/followups/promises.yaml`` are reported by
``vocero bench followups``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_SENTENCES = re.compile(r"[^.!?।\n]+[.!?।]*")
_CONTACT = (r"(call|calling|ring|ringing|phone|phoning|contact|contacting|reach out|reaching out|"
            r"get back|getting back|follow up|following up|give you a (call|ring|buzz)|"
            r"be in touch|be in contact|send|email|e-mail|text|message|ring you)")
_FUTURE = r"(\bwill|'ll|\bshall|\bis going to|\bare going to|\bam going to|\bgonna)"
_PATTERNS = tuple(re.compile(p) for p in (
    # someone will call you / we'll ring you / an engineer will be calling you
    rf"{_FUTURE}\s+(be\s+)?(have\s+\w+\s+|get\s+\w+\s+to\s+)?{_CONTACT}\b",
    # you'll get a call / you will receive a call back / you'll hear from us
    r"\byou(\s+will|'ll)\s+(get|receive|have)\s+(a|an|your)\s+(\w+\s+)?"
    r"(call|ring|call-back|callback|email|message|text)\b",
    r"\byou(\s+will|'ll)\s+hear\s+(from|back)\b",
    r"\bexpect\s+(a|our|my)\s+(call|ring|call-back|callback)\b",
    r"\bexpect\s+to\s+hear\b",
    # I've booked a call-back / your call back is scheduled / arranged for X to phone you
    r"\b(booked|scheduled|arranged|set up|organi[sz]ed|recorded)\s+(you\s+)?(a|an|your|the)?\s*"
    r"(call[- ]?back|follow[- ]?up|call)\b",
    r"\b(call[- ]?back|follow[- ]?up( call)?)\s+(is|has been)\s+"
    r"(recorded|scheduled|booked|arranged|set|confirmed)\b",
    r"\barranged\s+for\s+.+\s+to\s+(call|phone|ring|contact)\b",
    r"\bcall[- ]?back\b.*\bit is\b",
    # Hindi
    r"\b(call|phone|fon|phone call)\s+kar(enge|ega|egi|unga|ungi|oonga|oongi)\b",
    r"\bsampark\s+kar(enge|ega|egi)\b",
    r"(फ़ोन|फोन|कॉल|काल)\s+कर(ेंगे|ेगा|ेगी|ूँगा|ूंगा|ूँगी|ूंगी)",
    r"संपर्क\s+कर(ेंगे|ेगा|ेगी)",
    # Telugu
    r"\b(call|phone|fone)\s+(chestamu|chestam|chestaru|chestanu|chestadu|chestundi|"
    r"chesthamu|chestharu)\b",
    r"(కాల్|ఫోన్)\s+చేస్తా(ము|రు|ను|డు)",
    r"సంప్రదిస్తా(ము|రు|ను)|సంప్రదిస్తుంది",
))
_NEGATION = re.compile(
    r"(\b(not|never|nobody|no one|nothing|unable|without)\b|n't\b|n\u2019t\b|\bcannot\b|"
    r"\b(nahi|nahin|mat)\b|नहीं|मत|\b(ledu|kaadu|kadu|vaddu)\b|లేదు|కాదు|వద్దు)")
_CONDITION = re.compile(
    r"\b(if|unless|whether|could|might|may|can|would you|happy to|just tell me|"
    r"agar|ayithe)\b|अगर|అయితే")
_QUESTION_START = re.compile(
    r"^\s*(shall|should|would|could|can|do|does|did|is|are|may|will you|kya|क्या)\b")


@dataclass(frozen=True, slots=True)
class Promise:
    text: str
    """The sentence as heard."""


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCES.findall(text) if s.strip()]


def is_promise(sentence: str) -> bool:
    """Whether one heard sentence commits the business to contact the caller later."""
    text = " ".join(sentence.replace("\u2019", "'").lower().split())
    if text.endswith("?") or _QUESTION_START.search(text):
        return False
    if _NEGATION.search(text) or _CONDITION.search(text):
        return False
    return any(p.search(text) for p in _PATTERNS)


def promises(text: str) -> list[Promise]:
    """Every promise in one heard assistant text, in order."""
    return [Promise(s) for s in sentences(text) if is_promise(s)]


@dataclass(frozen=True, slots=True)
class Score:
    precision: float
    recall: float
    true_positives: int
    false_positives: int
    false_negatives: int
    total: int
    misses: tuple[str, ...] = ()
    false_alarms: tuple[str, ...] = ()


def score(labelled: Iterable[tuple[str, bool]]) -> Score:
    """Precision and recall of :func:`is_promise` on ``(sentence, is a promise)`` pairs."""
    tp = fp = fn = total = 0
    misses: list[str] = []
    alarms: list[str] = []
    for text, expected in labelled:
        total += 1
        found = bool(promises(text))
        if found and expected:
            tp += 1
        elif found:
            fp += 1
            alarms.append(text)
        elif expected:
            fn += 1
            misses.append(text)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return Score(precision=round(precision, 3), recall=round(recall, 3), true_positives=tp,
                 false_positives=fp, false_negatives=fn, total=total, misses=tuple(misses),
                 false_alarms=tuple(alarms))
