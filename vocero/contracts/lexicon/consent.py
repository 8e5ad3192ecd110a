"""Whether a caller's answer to "Shall I go ahead?" is consent: one rule, the same on every plane.

A wrong "confirm" runs an action the caller did not want, so consent is structural (issue 42):

* :func:`explicit_yes` is the only way a spoken line confirms: every word of the line is a yes
  ("yes", "yeah", "that's right", "correct", "go ahead", "do it", …) or politeness ("please",
  "thanks") and at least one is a yes. "yes, but make it 11", "Friday at 11", "the 14th
  instead?", "sure, for Priya" are not: a line that says anything beyond a bare yes is never
  consent, whatever a model made of it.
* :func:`classify` is the rule a runner asks first: ``confirm`` only for an explicit yes,
  ``reject`` for a clear no, ``uncertain`` for a question, a hedge, a mixed answer or a yes that
  goes on, and ``None`` when the model may try (it picks among the three labels).
* :func:`bound` is what the orchestrator (and every runner, after its model) makes of a label:
  a ``confirm`` the rule does not also read as an explicit yes is downgraded, to ``new_request``
  when the line names a value (a changed value is a correction: a new proposal revision, SPEC §2)
  and to ``uncertain`` otherwise (asked again, briefly; never in a loop). An ``uncertain`` that
  names a value is a correction too ("no wait, make that Friday at 11", "not 9, 11"), and so is
  a ``reject`` for a line without a word of refusal: a line that is not clearly a yes or a no is
  asked about, never guessed.
* :func:`names_value` says whether a line carries a value: a digit, a number word, a calendar or
  clock word of the English lexicon or the session's (:mod:`vocero.contracts.lexicon`).
* A yes that restates the pending action ("Yes, book it.", "yeah, go ahead and move it", "yes,
  cancel the reservation") is still a bare yes when ``action`` (the pending tool's name) is
  given: the rest of the line is only that name's own words (its verb and its object, as the
  profile names them) and a few words that point back at it ("it", "that", "the", "for me"),
  and no value is named. A word of refusal, a question, a name or a value is never part of it,
  and without a pending action nothing but yes words and politeness confirms.

The words of a yes are English, with the common Hindi and Telugu ones (native script and
romanised) so that a caller of those languages can still consent by voice; the button and a
DTMF key always can.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from vocero.contracts.lexicon import en
from vocero.contracts.lexicon.base import Lexicon, word_set, words_of

Intent = Literal["confirm", "reject", "uncertain"]
"""What the rule or a model says of an answer to a read-back."""
Label = Literal["confirm", "reject", "uncertain", "new_request"]
"""What the orchestrator does with it (``new_request``: the turn asks for something else)."""

_YES_PHRASES = (
    # English
    "yes", "yeah", "yea", "yep", "yup", "sure", "ok", "okay", "alright", "all right", "correct",
    "right", "that's right", "that is right", "that's correct", "that is correct", "exactly",
    "go ahead", "go on ahead", "do it", "do that", "go for it", "please do", "confirm",
    "confirm it", "confirm that", "confirmed", "i confirm", "affirmative", "absolutely",
    "definitely", "of course",
    "sounds good", "that's fine", "that is fine", "fine", "perfect", "great", "proceed",
    "that works", "works for me", "yes please", "please go ahead",
    "that's the one", "that is the one", "that's it", "that is it", "spot on", "you got it",
    "lovely", "brilliant", "that's perfect", "that's great", "grand", "that's grand",
    "all good", "that's all good", "that is all good", "sweet as", "go on then",
    "yes then", "ok then", "okay then",
    # Hindi, romanised and in Devanagari
    "haan", "haanji", "haan ji", "ji haan", "han", "theek hai", "thik hai",
    "हाँ", "हां", "हाँ जी", "जी हाँ", "जी हां", "ठीक है",
    # Telugu, romanised and in Telugu script
    "avunu", "sare", "alage", "అవును", "సరే", "అలాగే",
)  # fmt: skip
"""Whole phrases that say yes, lower case, as :func:`words_of` splits them."""
_POLITE = word_set(
    "please thanks thank you so much very kindly cheers um umm uh uhh uhm er erm ah oh ji")
"""Words a yes may carry without saying anything more."""

VOCABULARY: frozenset[str] = frozenset(
    word for phrase in _YES_PHRASES for word in words_of(phrase)
) | _POLITE
"""Every word a bare yes may be made of: a line with any other word (or a digit) never
confirms."""

_YES = re.compile(
    r"(?<!\S)(?:"
    + "|".join(re.escape(p) for p in sorted(_YES_PHRASES, key=len, reverse=True))
    + r")(?!\S)"
)
_RESTATING = word_set("it that this them the a an my me for with and now then just go ahead")
"""Words that point back at the pending action ("go ahead and book it for me"): a yes that
restates the action may carry them, and nothing that names a value."""
_LONE_YES = re.compile(r"^(yes|yeah|yep)\?$", re.IGNORECASE)
"""Whisper writes a short "Yes" said with a rising voice as "Yes?": a lone yes is a yes."""

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
_STARTS_YES = re.compile(
    r"^(?:yes|yeah|yep|yup|sure|ok|okay|correct|right|that'?s right|that'?s correct|go ahead|"
    r"do it|confirm(?:ed)?|please do|absolutely|affirmative|sounds good|of course|definitely|"
    r"exactly|alright|all right)\b",
    re.IGNORECASE,
)
_ONLY_NO = re.compile(r"^(?:(?:no|nope|nah)[\s?.!,]*)+$", re.IGNORECASE)
"""Nothing but no-words, however punctuated: Whisper writes a flat "No" as "No?" or "Nope?
No?". Taking it for a no is safe (nothing runs on a no; the caller may ask again)."""
_DIGIT = re.compile(r"\d")
_NEGATIVE = re.compile(
    r"\b(?:no|nope|nah|not|don'?t|do not|never|cancel\w*|stop|forget|leave it|wrong|incorrect|"
    r"changed my mind|rather not|skip|negative|nahi|nahin|mat|vaddu|ledu)\b"
    r"|\u0928\u0939\u0940\u0902|\u092e\u0924|\u0c35\u0c26\u0c4d\u0c26\u0c41|\u0c32\u0c47\u0c26\u0c41",
    re.IGNORECASE,
)
"""A word of refusal: a model's ``reject`` stands only for a line that has one (English, and
Hindi "nahin"/"mat" and Telugu "vaddu"/"ledu", romanised and in their scripts)."""


def explicit_yes(answer: str, action: str = "") -> bool:
    """Whether the line is a bare yes: only yes phrases and politeness, at least one yes, no
    question (but a lone "Yes?"). With ``action``, the pending tool's name, a yes may also
    restate it: its own words and words that point back at it, no value, no other word."""
    text = _LONE_YES.sub(r"\1", answer.strip().strip(" .!,"))
    if not text or "?" in text:
        return False
    spoken = " ".join(_words(text))
    rest = _YES.sub(" ", spoken)
    if rest == spoken:
        return False  # no yes phrase at all
    if all(word in _POLITE for word in rest.split()) or _tiled(spoken.split()):
        return True
    return bool(action) and _restates(rest.split(), action) and not names_value(text)


_PHRASE_WORDS = tuple(tuple(words_of(p)) for p in _YES_PHRASES)


def _tiled(words: list[str]) -> bool:
    """Whether the words are yes phrases and politeness end to end, however the phrases
    overlap when read longest first ("yes please do" is "yes" and "please do", not "yes please"
    and a stray "do"); at least one yes phrase."""
    reach: dict[int, bool] = {0: False}  # position -> whether a yes phrase was used to get there
    for at in range(len(words)):
        if at not in reach:
            continue
        if words[at] in _POLITE:
            reach[at + 1] = reach.get(at + 1, False) or reach[at]
        for phrase in _PHRASE_WORDS:
            if phrase and tuple(words[at : at + len(phrase)]) == phrase:
                reach[at + len(phrase)] = True
    return reach.get(len(words), False)


def restatable(tool: str, fields: Mapping[str, object] | None = None) -> str:
    """What a yes may restate of a pending proposal (the ``action`` of :func:`explicit_yes`):
    the tool's name and the words of its values that are words, not numbers ("Yes, the van. Go
    ahead." for ``vehicle: van``): saying a value the read-back already holds changes nothing.
    A digit, number, date or time word is still a value (:func:`names_value`), never a yes."""
    said = [
        str(v) for v in (fields or {}).values() if isinstance(v, str) and not _DIGIT.search(v)
    ]
    return " ".join([tool, *said])


def restates(answer: str, tool: str, fields: Mapping[str, object] | None = None) -> bool:
    """Whether a yes names the pending proposal itself ("Yes, please move it", "Yes, the
    van"): an explicit yes with a word of its action or values, not a bare one."""
    return explicit_yes(answer, restatable(tool, fields)) and not explicit_yes(answer)


_SAME_ACTION: tuple[frozenset[str], ...] = (
    frozenset({"book", "reserve", "schedule"}),
    frozenset({"cancel", "scrap"}),
    frozenset({"change", "move", "switch"}),
)
"""Verbs everyday English uses for the same action: "Yes, please book it" restates a
``rooms.reserve`` read back as "book study room ...". Only whole verbs, never values."""


def action_words(action: str) -> frozenset[str]:
    """The words a caller may restate a pending action with: its tool name's words
    (``rooms.reserve`` -> "room", "reserve", and "book", "schedule" that say the same), each
    also as its stem."""
    words = [w for w in re.split(r"[^a-z]+", action.lower()) if len(w) > 1]
    for same in _SAME_ACTION:
        if same & set(words):
            words.extend(same)
    return frozenset(stem for w in words for stem in (w, _stem(w)))


def _restates(rest: list[str], action: str) -> bool:
    """Whether the words left beside the yes only restate the action: at least one of its own
    words, and none but those, pointing words and politeness."""
    own = action_words(action)
    said = [w for w in rest if w not in _POLITE and w not in _RESTATING]
    return bool(said) and all(w in own or _stem(w) in own for w in said)


def _stem(word: str) -> str:
    """ "booking", "booked", "books", "rooms" -> "book", "room": enough to hear a tool name's word
    in another form ("cancelling", "moved" -> "cancel", "mov")."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2]:
        word = word[:-1]  # "cancell", "stopp"
    return word.removesuffix("e") if len(word) > 3 else word


def classify(answer: str, action: str = "") -> Intent | None:
    """The label the rule is sure of, or ``None`` when a model may try (and :func:`bound` still
    has the last word on a ``confirm``); ``action`` is the pending tool's name, which a yes may
    restate (:func:`explicit_yes`)."""
    text = answer.strip().strip(" .!,")
    if not text:
        return "uncertain"
    text = _LONE_YES.sub(r"\1", text)
    if _ONLY_NO.match(text):
        return "reject"
    if explicit_yes(text, action):
        return "confirm"
    if _HEDGE.search(text):
        return "uncertain"
    if _REJECT.search(text):
        return "uncertain" if _STARTS_YES.search(text) else "reject"
    if _STARTS_YES.search(text):
        return "uncertain"  # a yes that goes on ("yes, but make it 11") is not a bare yes
    return None


def names_value(answer: str, lexicon: Lexicon | None = None) -> bool:
    """Whether the line carries a value: a digit, or a number, calendar or clock word of the
    English lexicon or ``lexicon`` (the session's)."""
    if _DIGIT.search(answer):
        return True
    words = _words(answer)
    spoken = f" {' '.join(words)} "
    for table in (en.LEXICON, lexicon or en.LEXICON):
        single, phrases = _value_words(table)
        if any(word in single for word in words) or any(p in spoken for p in phrases):
            return True
    return False


def bound(label: str, answer: str, lexicon: Lexicon | None = None, action: str = "") -> Label:
    """What a model's (or a script's) label for ``answer`` may be taken as: ``confirm`` only
    when :func:`explicit_yes` also reads it so (a yes restating ``action``, the pending tool's
    name, included); otherwise a line that names a value is a correction (``new_request``) and
    any other is ``uncertain``. The rule never adds a yes a label did not say."""
    if label == "confirm" and explicit_yes(answer, action):
        return "confirm"
    if label in ("confirm", "uncertain"):
        if explicit_yes(answer, action):  # "that's the one": a yes phrase, not a value
            return "uncertain"
        return "new_request" if names_value(answer, lexicon) else "uncertain"
    if label == "reject" and _NEGATIVE.search(answer):
        return "reject"  # a no declines (nothing runs on it), and withdraws what waits
    if label == "reject":  # a model's "no" for a line with no word of refusal is a guess
        return "new_request" if names_value(answer, lexicon) else "uncertain"
    return "new_request" if label == "new_request" else "uncertain"


def _words(text: str) -> list[str]:
    return words_of(text.lower().replace("\u2019", "'"))


_VALUE_WORDS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {}


def _value_words(lexicon: Lexicon) -> tuple[frozenset[str], tuple[str, ...]]:
    known = _VALUE_WORDS.get(lexicon.language)
    if known is not None:
        return known
    calendar, numbers, clock = lexicon.calendar, lexicon.numbers, lexicon.clock
    words = {
        *calendar.months, *calendar.month_abbreviations, *calendar.weekdays,
        *(w for w in calendar.weekday_abbreviations if w not in calendar.capitalised_only),
        *calendar.relative_days, *numbers.cardinals, *numbers.ordinals, *numbers.scales,
        *clock.named_times, *clock.parts_of_day, *(w for w in clock.oclock if len(w) > 1),
    }  # fmt: skip
    # (a.m./p.m. are left out: "am" is also a verb, and "4 am" or "four am" names its number)
    single = frozenset(w for w in words if " " not in w)
    phrases = tuple(f" {' '.join(words_of(w))} " for w in words if " " in w)
    _VALUE_WORDS[lexicon.language] = (single, phrases)
    return single, phrases


__all__ = [
    "VOCABULARY",
    "Intent",
    "Label",
    "action_words",
    "bound",
    "classify",
    "explicit_yes",
    "names_value",
]
