"""What every end-of-turn judge shares: the words that say a sentence is or is not over.

An audio turn model hears prosody; it cannot know that "my order number is" needs a number
after it. When the recogniser's transcript of the utterance so far is at hand, a sentence that
ends on an open word of its language (:mod:`vocero.contracts.lexicon`: a filler, an article, a
preposition, a conjunction, "that/which/if", a possessive, a linking verb), trails off ("...",
","), or stops in the middle of a number being spelled out (not closed by the recogniser: "The
code is 47") is going on whatever its pitch did: the judge's probability is capped
(:data:`GOING_ON_CAP`) and the turn policy never ends the turn on it. A transcript ending in
``?`` is left to the audio: a question may end on "for" or "to" ("what is it for?").

Words can also say the sentence is over, or say nothing about it: :func:`words_kind` sorts a
transcript into going on, open (not closed by the recogniser, a statement ending on a code the
recogniser was not sure of, or words it was unsure of), closed, and finished (a closed clause of
at least :data:`MIN_FINISHED_WORDS` words, or an identifier just given with
:data:`IDENTIFIER_CONFIDENCE`). The audio model, trained on prosody alone, often doubts a finished
question ("Which appointments do I have?"); the turn policy then ends the turn at a lower
probability (``TurnTaking.finished_probability``), and lower still when the recogniser was sure
of its words (:func:`words_sure`). A lone greeting ("Hello,") is a caller about to say why they
called: it goes on. English is read whole; for Hindi and Telugu only the open words are known
(a sentence ending on one goes on; nothing else is said of their words).
"""

from __future__ import annotations

from typing import Literal

from vocero.contracts.lexicon import Lexicon, for_locale, open_ending, words_of
from vocero.contracts.ports import TurnVerdict

GOING_ON_CAP = 0.05
"""The highest end-of-turn probability a sentence that visibly goes on may get."""

_CLOSED = (".", "?", "!")
_TIME_WORDS: frozenset[str] = frozenset({"at", "by", "until", "till", "before", "after", "around"})
_MODALS: frozenset[str] = frozenset({"can", "could", "would", "will", "should", "may", "shall"})
_PRONOUNS: frozenset[str] = frozenset({"you", "i", "we", "they", "he", "she", "it", "someone"})
_ANSWERS: frozenset[str] = frozenset({"yes", "yeah", "yep", "yup", "no", "nope", "nah"})
_SUBJECTS: frozenset[str] = _PRONOUNS | {"that", "there", "this"}
_ANSWERING_AUXILIARIES: frozenset[str] = _MODALS | {
    "am", "is", "are", "was", "were", "do", "does", "did", "have", "has", "must",
}  # fmt: skip
"""The auxiliaries an answer to a yes-or-no question ends on ("Yes, I do")."""
_SO_VERBS: frozenset[str] = frozenset(
    {"think", "hope", "guess", "believe", "suppose", "expect", "imagine", "reckon", "afraid"}
)
"""Words after which "so" stands for the clause asked about ("I think so", "I'm afraid so")."""
_NAMING: frozenset[str] = frozenset({"is", "number", "code", "reference", "was", "are"})
"""Words after which a lone "one" is a digit ("the code is one"), not a pronoun."""
MIN_CONFIDENCE = 0.65
"""Below this recogniser confidence (Whisper tiny.en: an average token log-probability under
-0.43) a transcript's words do not vouch for the end of a turn. Measured with Whisper tiny.en
on the early transcripts of ``fixtures/turns``: the endings it made up for sentences cut at a
pause ("It was supposed to rhyme one.") scored 0.28-0.63; the spoken requests of ``bench
ttfs`` 0.70-0.92. Finished corpus clips range from 0.48 to 0.96: those under it are left to
the audio (docs/protocol.md "Turn-taking")."""
SURE_CONFIDENCE = 0.85
"""At or above this confidence the recogniser's words are sure (:func:`words_sure`): the turn
policy ends a finished transcript at ``TurnTaking.sure_probability``. Chosen on the tuning half
of ``fixtures/turns`` only: the highest confidence Whisper gave an ending it made up at a pause
there was 0.83 ("I want to change them.", audio 0.61)."""
IDENTIFIER_CONFIDENCE = 0.9
"""A closed statement that ends on an identifier ("My order number is C19.") reads as finished
only at or above this confidence: on the tuning half a code cut in parts at a pause ("The
reference is B4.", "My post code is SW1.") scored up to 0.85, with the audio sure it was over
(0.94-0.96)."""
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


def words_go_on(transcript: str, locale: str = "en-US") -> bool:
    """The transcript of an utterance so far visibly stops mid-sentence."""
    text = transcript.strip()
    lexicon = for_locale(locale)
    if not text or lexicon is None:
        return False
    if text.endswith(_TRAILING):
        return True
    words = words_of(text)
    if words and all(word in lexicon.greetings for word in words):
        return True  # "Hello." or "Hello?" at a pause: the reason for the call follows
    if lexicon.language == "en" and _modal_alone(words):
        return True  # "Can you?", "Could I," at a pause: the verb follows
    if text.endswith("?"):
        return False
    if not text.endswith(_CLOSED) and words and _ends_on_code(words, lexicon):
        return True  # "The code is 47", "my phone number is 555": a number being spelled out
    if lexicon.language == "en":
        words = _without_trailing_you(words)
        if not words or (text.endswith(".") and _stranded_question(words)):
            return False  # "Who am I speaking with." (not "Can you check my refund for")
    if _clock_time(words, lexicon):
        return False  # "at 11 am": a time of day, not "I am"
    if lexicon.language == "en" and _elliptical_answer(words):
        return False  # "Yes, I am.", "I think so.": the question's verb is left out
    return open_ending(words, lexicon) is not None


def _clock_time(words: list[str], lexicon: Lexicon) -> bool:
    """The words end on a.m./p.m. after a number ("at 11 am", "ten am"): "am" is not the verb."""
    if len(words) < 2 or words[-1] not in lexicon.clock.meridiem:
        return False
    before = words[-2]
    spelled = before in lexicon.digit_words or before in lexicon.numbers.cardinals
    return spelled or any(ch.isdigit() for ch in before)


def _elliptical_answer(words: list[str]) -> bool:
    """An answer that leaves the question's verb out, ending on a word that elsewhere waits for
    one: yes or no, then a pronoun and its auxiliary, perhaps with "not" ("Yes, I am", "No, it
    is not", "Yeah, we do"); "please do"; and "so" standing for the question after "think",
    "hope" and the like ("I think so", "I'm afraid so"). "I am" alone, "Yes, I want", "Yes,
    it's", "Do" and "and so" still go on."""
    core = words[:-1] if words and words[-1] == "not" else words
    if len(core) < 2:
        return False
    if core[-1] == "so":
        return core[-2] in _SO_VERBS
    if core[-2:] == ["please", "do"]:
        return True
    return (
        len(core) >= 3
        and core[-3] in _ANSWERS
        and core[-2] in _SUBJECTS
        and core[-1] in _ANSWERING_AUXILIARIES
    )


def _modal_alone(words: list[str]) -> bool:
    """A modal, with at most a pronoun after it: "Can you", "Could I", "Would"."""
    if not words or len(words) > 2 or words[0] not in _MODALS:
        return False
    return len(words) == 1 or words[1] in _PRONOUNS


def _trailing_you(words: list[str]) -> bool:
    """Whisper ends a sentence cut at a pause with "you" ("Send it to" heard as "Send it to
    you"); "Thank you" is meant."""
    return len(words) >= 2 and words[-1] == "you" and words[-2] != "thank"


def _without_trailing_you(words: list[str]) -> list[str]:
    """The words before Whisper's trailing "you": they say whether the sentence goes on."""
    return words[:-1] if _trailing_you(words) else words


def _stranded_question(words: list[str]) -> bool:
    """A question the recogniser closed with "." that ends on a preposition or an auxiliary."""
    return (
        len(words) >= MIN_FINISHED_WORDS
        and words[0] in _QUESTION_OPENERS
        and words[-1] in _STRANDED
    )


def is_question(transcript: str) -> bool:
    """Asked as a question: closed with "?", or opened by a question word or an auxiliary
    (Whisper closes some questions with ".": "which appointments do I have.")."""
    text = transcript.strip()
    words = words_of(text)
    return text.endswith("?") or (bool(words) and words[0] in _QUESTION_OPENERS)


def words_sure(confidence: float | None) -> bool:
    """The recogniser was sure of its words (:data:`SURE_CONFIDENCE`)."""
    return confidence is not None and confidence >= SURE_CONFIDENCE


def _ends_on_code(words: list[str], lexicon: Lexicon) -> bool:
    """The last word is a digit, spelled out or not, or has one in it (a code, a number read
    out in parts), but not a time ("at ten", "by 3pm") or the pronoun "one" ("the other one")."""
    last = words[-1]
    before = words[-2] if len(words) >= 2 else ""
    if before in _TIME_WORDS:
        return False
    digits = lexicon.digit_words
    if last == "one" and before not in digits and not any(c.isdigit() for c in before):
        return before in _NAMING
    return last in digits or any(ch.isdigit() for ch in last)


WordsKind = Literal["none", "going_on", "open", "closed", "finished"]


def words_kind(
    transcript: str, locale: str = "en-US", confidence: float | None = None
) -> WordsKind:
    """What the transcript of an utterance so far says about its end.

    ``none``: no words (or a locale whose words are not known); ``going_on``: it visibly stops
    mid-sentence (:func:`words_go_on`); ``open``: the words do not vouch for an end, because
    the recogniser did not close the sentence (Whisper leaves a clause it heard cut off without
    ".", "?" or "!") or a closed statement ends on a code the recogniser was not sure of (read
    out in parts, with pauses); ``finished``: a closed clause of at least
    :data:`MIN_FINISHED_WORDS` words that does not end on Whisper's trailing "you", or a closed
    statement ending on an identifier the recogniser was sure of (:data:`IDENTIFIER_CONFIDENCE`:
    "My order number is C19."); ``closed``: any other closed sentence. Words the recogniser
    was unsure of (``confidence`` below :data:`MIN_CONFIDENCE`) may still say the sentence goes
    on, but never vouch for its end: on a sentence cut at a pause Whisper often makes up a
    plausible ending. Hindi and Telugu words are only ever ``going_on`` or ``none``.
    """
    text = transcript.strip()
    lexicon = for_locale(locale)
    if not text or lexicon is None:
        return "none"
    if words_go_on(text, locale):
        return "going_on"
    if lexicon.language != "en":
        return "none"
    words = words_of(text)
    if not text.endswith(_CLOSED) or not words:
        return "open"
    if confidence is not None and confidence < MIN_CONFIDENCE:
        return "open"
    if not text.endswith("?") and _ends_on_code(words, lexicon):
        # "The code is 47." may be a code read out in parts: left to the audio, unless the
        # recogniser was sure of it and the statement names it (an identifier just given).
        sure = confidence is not None and confidence >= IDENTIFIER_CONFIDENCE
        return "finished" if sure and len(words) >= 3 else "open"
    if len(words) < MIN_FINISHED_WORDS or _trailing_you(words):
        return "closed"
    return "finished"


def capped(probability: float, kind: WordsKind) -> float:
    """The audio model's probability, capped when the words say the sentence goes on."""
    return min(probability, GOING_ON_CAP) if kind == "going_on" else probability


def reading(
    probability: float,
    transcript: str,
    *,
    locale: str = "en-US",
    confidence: float | None = None,
    words_probability: float | None = None,
    model_ms: float = 0.0,
) -> TurnVerdict:
    """The verdict of a judge that heard ``probability`` from the audio and read
    ``transcript`` (with the recogniser's ``confidence`` and, when a words model read it, its
    ``words_probability``): the words are read once, here."""
    kind = words_kind(transcript, locale, confidence)
    return TurnVerdict(
        probability=capped(probability, kind),
        # Words that do not vouch for an end (``open``) count as none: the audio decides.
        heard_words=kind in ("going_on", "closed", "finished"),
        words_finished=kind == "finished",
        words_question=kind == "finished" and is_question(transcript),
        words_going_on=kind == "going_on",
        words_sure=kind == "finished" and words_sure(confidence),
        words_probability=words_probability,
        # A small language model cannot tell a code just given from one half read out ("order
        # A124" reads to it as going on): its doubt about an identifier does not hold the turn.
        words_identifier=_ends_on_identifier(transcript, locale),
        words_count=len(words_of(transcript)),
        model_ms=model_ms,
    )


def _ends_on_identifier(transcript: str, locale: str) -> bool:
    """A statement that ends on a code or a digit ("... order A124.", "The code is 47")."""
    text = transcript.strip()
    lexicon = for_locale(locale)
    words = words_of(text)
    return bool(words) and lexicon is not None and not text.endswith("?") and (
        _ends_on_code(words, lexicon)
    )
