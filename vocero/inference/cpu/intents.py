"""What a caller's line asks for: a small text classifier fitted on the profile's own material.

The CPU dialogue manager needs one decision per turn: which of the profile's tools the caller
wants, or which conversational act the line is (a greeting, thanks, asking for a person, "what
did you say?", something no tool covers). :class:`IntentModel` learns that decision at profile
load from nothing but the profile: each tool's description, its name split into words, its
schema's property names and descriptions, the caller lines a profile may add (``examples``),
and, for the catalog-search built-in, the approved claims' keys, wording and topics. Generic
English templates written here turn the tool's own verbs and nouns into caller phrasing ("can
you move my visit", "where is my parcel"); nothing here knows any profile's names.

Labels (:attr:`IntentModel.intents`) are the tools' model-facing names plus :data:`ACTS`. A
catalog question is labelled with the knowledge tool's name, whatever the profile calls it (the
tool whose ``builtin`` is ``knowledge.search``); without one, claims are not used.

The model. Text is normalised the way speech-to-text writes it (lower case, apostrophes and
punctuation dropped, any token with a digit becomes ``nnn``), then read twice by TF-IDF with
sublinear term frequency: word 1-2 grams (what is said) and ``char_wb`` 2-5 grams (typos,
inflections: "apointment", "rescheduling"). A multinomial logistic regression (L2, ``C`` =
:data:`C`, classes weighted by their inverse frequency so a tool with many template lines does
not swallow a short act) is fitted on both. Logistic regression rather than a linear SVM: its
``predict_proba`` is a calibrated-enough probability with no extra cross-validated calibration
fit (which would need several lines per class and triple the fit time), the fit is convex and
deterministic (lbfgs; ``random_state`` fixed all the same), and on a few thousand short lines it
fits in a few hundred milliseconds. The fit holds BLAS to one thread (``threadpoolctl``, which
scikit-learn itself depends on): process-wide for those milliseconds, and needed, since
L-BFGS-B's BLAS threads on a loaded two-core machine took the fit from ~0.3 s to over 2 s.
The material is deduplicated first (templates overlap), so a label weighs its variety. ``rank``
is two vectorisers and one sparse vector times a weight matrix: about a millisecond a line.

Training material, besides the profile's own words: :data:`_VERB_FAMILIES` (caller phrasings of
an action a tool's name or description names: move -> push back, postpone, rebook),
:data:`_NOUN_SYNONYMS` (everyday words for common customer-service nouns, used only for the
main noun of a tool's own name), sentence frames per action, call-back lines for the
``followups.record`` built-in, question frames for claim topics, and lines for each act. All
generic English; none is written from, or tuned on, any held-out set (fixtures/dialogue).

Out of scope. Two ways, both documented in :meth:`IntentModel.decide`: an ``out_of_scope``
class trained on generic off-topic lines (weather, jokes, sport, ...; a line sharing a word with
a tool's own material is left out, so a profile that does sell concert tickets keeps them), and
a floor: when the best probability is under :data:`MIN_CONFIDENCE`, nothing was recognised with
enough support and the line is out of scope.

Pure and sans-IO: the same tools and claims always give the same model and the same scores.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from vocero.contracts.builtins import FOLLOWUPS_TOOL, KNOWLEDGE_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ClaimTopic

OUT_OF_SCOPE = "out_of_scope"
ACTS: tuple[str, ...] = (
    "greet", "thanks", "goodbye", "person", "repeat", "capabilities", "identity", "decline",
    OUT_OF_SCOPE,
)  # fmt: skip
"""The conversational acts, always labels besides the profile's tools."""
C = 8.0
"""Inverse L2 strength: the training lines are few and clean, so the fit may follow them."""
MIN_CONFIDENCE = 0.25
"""Below this best probability a line is :data:`OUT_OF_SCOPE` (:meth:`IntentModel.decide`)."""
TOLERANCE = 1e-3
"""lbfgs stops when the loss no longer moves by this much: the ranking is settled long before."""
RANDOM_STATE = 0
MAX_TEMPLATE_LINES = 160
"""Template lines per tool at most (chosen deterministically), so fit time stays bounded."""

# --------------------------------------------------------------------------- generic English

_STOP = frozenset((
    "a", "an", "the", "of", "to", "for", "in", "on", "at", "by", "with", "from", "and", "or",
    "but", "is", "are", "be", "been", "it", "its", "this", "that", "these", "those", "my",
    "your", "our", "their", "his", "her", "them", "they", "we", "you", "i", "me", "us", "one",
    "ones", "some", "any", "all", "each", "every", "which", "who", "whom", "what", "when",
    "where", "how", "why", "can", "could", "would", "should", "will", "shall", "may", "might",
    "must", "do", "does", "did", "done", "has", "have", "had", "not", "no", "yes", "if", "then",
    "than", "so", "as", "into", "about", "over", "after", "before", "up", "down", "out", "off",
    "new", "current", "first", "also", "only", "just", "very", "such", "per", "via", "there",
    "here", "his", "hers", "own", "caller", "callers", "customer", "customers",
    "user", "users", "person", "people", "someone",
))  # fmt: skip
"""Words that say nothing about which tool (tool nouns are looked for among the rest)."""

_VERB_FAMILIES: dict[str, tuple[str, ...]] = {
    "check": ("check", "check on", "look up", "find out about", "track", "get the status of",
              "get an update on", "see"),
    "list": ("list", "show me", "tell me", "read me", "go through", "give me"),
    "move": ("move", "reschedule", "change", "push back", "postpone", "rebook", "shift",
             "bring forward", "change the date of", "change the time of"),
    "cancel": ("cancel", "call off", "drop", "scrap", "get rid of", "delete", "remove"),
    "create": ("book", "make", "schedule", "set up", "arrange", "add", "create", "request",
               "get", "open"),
    "update": ("update", "change", "edit", "correct", "fix", "amend"),
    "record": ("record", "note down", "log", "write down", "take down", "save"),
    "search": ("find", "search for", "look for", "ask about"),
    "pay": ("pay", "settle", "make a payment on", "pay off"),
    "send": ("send", "resend", "email", "text me"),
    "close": ("close", "shut", "terminate", "end"),
    "report": ("report", "flag", "complain about", "tell you about a problem with"),
    "renew": ("renew", "extend", "continue"),
    "buy": ("buy", "purchase", "order"),
    "transfer": ("transfer", "move over", "switch"),
}  # fmt: skip
"""Caller phrasings of an action a tool's name or description names."""

_VERB_WORDS: dict[str, str] = {
    "check": "check", "status": "check", "track": "check", "lookup": "check", "look": "check",
    "get": "check", "view": "check", "show": "list", "list": "list", "find": "check",
    "locate": "check", "where": "check", "retrieve": "check", "fetch": "check", "read": "check",
    "move": "move", "reschedule": "move", "postpone": "move", "rebook": "move", "shift": "move",
    "cancel": "cancel", "delete": "cancel", "remove": "cancel", "drop": "cancel",
    "book": "create", "create": "create", "make": "create", "schedule": "create",
    "add": "create", "open": "create", "arrange": "create", "request": "create",
    "new": "create", "start": "create", "place": "create",
    "update": "update", "edit": "update", "change": "update", "modify": "update",
    "amend": "update", "correct": "update", "set": "update",
    "record": "record", "log": "record", "note": "record", "save": "record",
    "search": "search", "query": "search", "ask": "search", "answer": "search",
    "pay": "pay", "charge": "pay", "settle": "pay",
    "send": "send", "resend": "send", "email": "send", "notify": "send",
    "close": "close", "terminate": "close", "end": "close", "deactivate": "close",
    "report": "report", "flag": "report", "complain": "report",
    "renew": "renew", "extend": "renew",
    "buy": "buy", "purchase": "buy",
    "transfer": "transfer", "switch": "transfer",
}  # fmt: skip
"""A name or description word and the action family it names."""

_NOUN_SYNONYMS: dict[str, tuple[str, ...]] = {
    "order": ("order", "purchase", "package", "parcel", "delivery", "shipment"),
    "parcel": ("parcel", "package", "delivery", "shipment"),
    "package": ("package", "parcel", "delivery", "shipment"),
    "delivery": ("delivery", "package", "parcel", "shipment"),
    "shipment": ("shipment", "package", "parcel", "delivery"),
    "appointment": ("appointment", "booking", "visit", "reservation", "slot"),
    "booking": ("booking", "appointment", "reservation", "visit"),
    "reservation": ("reservation", "booking", "table", "slot"),
    "visit": ("visit", "appointment", "call out", "booking"),
    "invoice": ("invoice", "bill", "statement", "payment"),
    "bill": ("bill", "invoice", "statement", "payment"),
    "subscription": ("subscription", "plan", "membership", "contract"),
    "plan": ("plan", "subscription", "package", "tariff"),
    "membership": ("membership", "subscription", "plan"),
    "ticket": ("ticket", "case", "request", "issue", "complaint"),
    "case": ("case", "ticket", "claim", "request"),
    "claim": ("claim", "case", "request"),
    "account": ("account", "profile", "details"),
    "address": ("address", "details", "location"),
    "prescription": ("prescription", "medication", "refill"),
    "repair": ("repair", "fix", "service job"),
}  # fmt: skip
"""Everyday English words for common customer-service nouns (used only for a noun a tool's own
material names)."""

_TIMES = (
    "tomorrow", "next monday", "friday at 3 pm", "tomorrow morning", "next week",
    "the 12th at 10", "thursday afternoon", "later today", "nnn pm", "another day",
)  # fmt: skip
_CODE_WORDS = ("id", "number", "code", "reference", "ref", "no")
_TIME_WORDS = frozenset((
    "when", "date", "time", "day", "datetime", "slot", "start", "starts", "starts_at",
    "new_time", "new_date", "due", "hour",
))  # fmt: skip

_VERB_TEMPLATES = (
    "{v} my {n}", "i want to {v} my {n}", "i would like to {v} my {n}", "can you {v} my {n}",
    "could you {v} the {n} please", "i need to {v} a {n}", "please {v} my {n}", "{v} {n}",
    "can i {v} my {n}", "help me {v} my {n}", "id like to {v} the {n}", "i need you to {v} my {n}",
)  # fmt: skip
_FAMILY_TEMPLATES: dict[str, tuple[str, ...]] = {
    "check": ("where is my {n}", "whats the status of my {n}", "any news on my {n}",
              "whats happening with my {n}", "has my {n} arrived", "when will my {n} come",
              "is my {n} on its way", "what is going on with {n} nnn", "{n} nnn status",
              "whats the {n}", "whats my {n}", "tell me the {n}", "what is the {n} like"),
    "list": ("what {n}s do i have", "do i have any {n}s", "when is my next {n}",
             "which {n}s do i have coming up", "my upcoming {n}s", "have i got a {n}",
             "when is my {n}", "what {n}s are there"),
    "move": ("i cant make my {n} can we do another day", "move my {n} to {t}",
             "can we change my {n} to {t}", "a different day for my {n}", "{n} {t} instead",
             "i need a new time for my {n}", "put my {n} on {t} instead"),
    "cancel": ("i dont need my {n} anymore", "cancel the {n} on {t}", "i wont need the {n}",
               "please cancel {n} nnn", "i want to cancel my {n}"),
    "create": ("i want a {n}", "i need a new {n}", "can i get a {n} for {t}", "set up a {n}"),
}  # fmt: skip
_CALLBACK_LINES = (
    "call me back", "can you call me back {t}", "please call me back {t}",
    "could someone call me {t}", "have someone call me back", "ring me back {t}",
    "phone me back {t}", "give me a call back {t}", "i would like a call back {t}",
    "get back to me {t}", "can i get a callback", "callback {t}", "i cant talk now call me later",
    "call me {t} about it", "can somebody ring me {t}", "arrange a call back for {t}",
    "please phone me {t}", "call me later", "can you ring me later", "have someone get back to me",
)  # fmt: skip
_QUESTION_TEMPLATES = (
    "{q}", "what about {q}", "tell me about {q}", "i have a question about {q}",
    "whats your policy on {q}", "how does {q} work", "can you tell me about {q}",
    "what are the rules for {q}", "question about {q}", "i wanted to ask about {q}",
    "do you {q}", "how long {q}", "what is the {q}",
)  # fmt: skip
_GENERIC_QUESTIONS = (
    "what is your policy", "can i ask a question", "i have a question", "how does it work",
    "what are the rules", "is it possible to", "do you allow", "how long does it take",
)  # fmt: skip

_ACT_LINES: dict[str, tuple[str, ...]] = {
    "greet": (
        "hello", "hi", "hey", "hi there", "hello there", "good morning", "good afternoon",
        "good evening", "hey there", "hiya", "morning", "hello how are you", "hi how are you",
        "hey hows it going", "hello anyone there", "hi is this working", "yes hello",
        "hello can you hear me", "howdy", "greetings",
    ),
    "thanks": (
        "thank you", "thanks", "thanks a lot", "thank you very much", "cheers", "great thanks",
        "thats great thank you", "perfect thanks", "much appreciated", "thanks for your help",
        "thank you so much", "brilliant thank you", "ok thanks", "lovely thanks",
        "appreciate it", "that helps thanks", "awesome thank you", "thanks that is all",
    ),
    "goodbye": (
        "bye", "goodbye", "bye bye", "see you", "see you later", "talk to you later",
        "have a good day", "thats all bye", "i have to go", "thats everything goodbye",
        "take care bye", "nothing else bye", "ok bye now", "goodbye for now", "gotta go",
        "have a nice day", "im done bye", "so long", "that will be all goodbye",
    ),
    "person": (
        "can i speak to a person", "i want to talk to a human", "put me through to someone",
        "let me speak to a real person", "i want an agent", "agent", "operator",
        "representative", "human please", "transfer me to a person",
        "can i talk to someone real", "connect me to a human", "i need to speak to someone",
        "get me a real person", "is there a human i can talk to", "speak to an operator",
        "talk to customer service", "put me through to a representative",
        "i would rather talk to a person", "a real human please", "speak to staff",
        "can i talk to your manager", "connect me with a person",
    ),
    "repeat": (
        "what did you say", "can you repeat that", "repeat that please", "say that again",
        "sorry i didnt catch that", "pardon", "come again", "sorry what", "what was that",
        "i didnt hear you", "could you say it again", "once more please", "sorry say again",
        "repeat please", "i missed that", "pardon me", "excuse me what", "one more time",
        "can you repeat the last bit", "sorry i didnt get that",
    ),
    "capabilities": (
        "what can you do", "what can you help me with", "how can you help me",
        "what do you do", "what can i ask you", "what are you able to do",
        "what kind of things can you do", "what are my options", "what can i do here",
        "what else can you do", "what do you help with", "can you help me",
        "what services do you offer", "what can you do for me", "what is this line for",
        "what things can you handle", "tell me what you can do", "how do you work",
    ),
    "identity": (
        "who are you", "what are you", "are you a robot", "am i talking to a machine",
        "are you a bot", "are you human", "are you real", "whats your name",
        "who am i speaking to", "who is this", "is this a computer", "are you an ai",
        "is this an automated system", "are you a real person or a machine",
        "what should i call you", "who am i talking with", "are you a recording",
        "is this a person or a robot", "what company is this",
    ),
    "decline": (
        "no forget it", "never mind", "no thanks", "no thank you", "forget about it",
        "dont worry about it", "no its fine", "nah", "no leave it", "actually no",
        "not now", "no i dont want that", "no dont do that", "skip it", "no need",
        "i changed my mind", "dont bother", "no thats ok", "maybe later not now",
        "no im good", "leave it for now", "nope",
    ),
    OUT_OF_SCOPE: (
        "whats the weather like", "will it rain tomorrow", "tell me a joke",
        "who won the game last night", "whats the score", "sing me a song", "play some music",
        "whats the capital of spain", "what is the meaning of life", "recommend a restaurant",
        "whats a good movie to watch", "how do i fix my computer", "whats the news today",
        "what is the stock price", "how much is bitcoin", "help me with my homework",
        "what is two plus two", "translate this into french", "write me a poem",
        "who is the president", "how tall is mount everest", "tell me a story",
        "what is your favourite colour", "do you like pizza", "how do i cook pasta",
        "book me a flight", "order me a taxi", "whats the time in tokyo", "my wifi is broken",
        "can you lend me money", "what is the best phone to buy", "how old are the pyramids",
        "give me directions to the airport", "what are the lottery numbers",
        "can you set an alarm", "read me the horoscope", "whats on tv tonight",
        "banana", "blah blah", "um", "hmm", "testing testing",
    ),
}  # fmt: skip
"""Generic English lines of each act (never a profile's names)."""
_OFF_TOPICS = (
    "football", "the weather", "politics", "movies", "celebrities", "cooking", "the news",
    "history", "music", "video games", "holidays abroad", "the lottery",
)  # fmt: skip
"""Subjects no customer-service profile covers, asked in the catalog questions' own frames
("tell me about football"), so a question frame alone does not mean a catalog question."""

# ----------------------------------------------------------------------------- text


_APOSTROPHE = re.compile(r"['\u2019`]")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_HAS_DIGIT = re.compile(r"\b\w*\d\w*\b")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def normalise(text: str) -> str:
    """The line as speech-to-text would write it: lower case words, codes as ``nnn``."""
    text = _APOSTROPHE.sub("", text.lower())
    text = _NON_WORD.sub(" ", text)
    return " ".join(_HAS_DIGIT.sub("nnn", text).split())


def _words(text: str) -> list[str]:
    """The words of a name or phrase: ``parcels.trackByCode`` -> parcels, track, by, code."""
    return normalise(_CAMEL.sub(" ", text).replace("_", " ")).split()


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# ----------------------------------------------------------------------------- material


@dataclass(frozen=True, slots=True)
class _ToolWords:
    families: tuple[str, ...]
    literal_verbs: tuple[str, ...]
    nouns: tuple[str, ...]
    has_code: bool
    has_time: bool


def _schema_properties(tool: ToolDefinition) -> Mapping[str, Any]:
    props = tool.input_schema.get("properties") if isinstance(tool.input_schema, dict) else None
    return props if isinstance(props, dict) else {}


def _tool_words(tool: ToolDefinition) -> _ToolWords:
    name = _words(tool.name)
    sentences = [s for s in _SENTENCE.split(tool.description.strip()) if s]
    lead = _words(sentences[0]) if sentences else []
    families: list[str] = []
    literal: list[str] = []
    nouns: list[str] = []
    for word in name:
        family = _VERB_WORDS.get(word)
        if family is not None:
            families.append(family)
        elif word not in _STOP:
            nouns.append(_singular(word))
    # The description's first word is its verb ("Look up the ...", "Move one of ...").
    if lead:
        family = _VERB_WORDS.get(lead[0])
        if family is not None:
            families.append(family)
        elif lead[0] not in _STOP:
            literal.append(lead[0])
    for word in lead[1:]:
        if word not in _STOP and word not in _VERB_WORDS and len(word) > 2:
            nouns.append(_singular(word))
    props = _schema_properties(tool)
    prop_words = [w for key in props for w in _words(str(key))]
    desc_words = set(_words(tool.description))
    has_code = any(w in _CODE_WORDS for w in prop_words) or bool(
        desc_words & {"number", "code", "reference", "id"}
    )
    has_time = bool(set(prop_words) & _TIME_WORDS or desc_words & {"date", "time", "when"})
    # Nouns of the name first: they say what the tool is about; a few from the description.
    ordered = list(dict.fromkeys(nouns))
    head = [n for n in ordered if n in {_singular(w) for w in name}]
    rest = [n for n in ordered if n not in head][:3]
    return _ToolWords(
        families=tuple(dict.fromkeys(families)) or (() if literal else ("check",)),
        literal_verbs=tuple(literal),
        nouns=tuple(head + rest) or ("request",),
        has_code=has_code,
        has_time=has_time,
    )


def _noun_forms(nouns: Sequence[str]) -> list[str]:
    forms: list[str] = []
    for i, noun in enumerate(nouns):
        forms.append(noun)
        if i == 0:  # synonyms of the tool's main noun only
            forms.extend(_NOUN_SYNONYMS.get(noun, ()))
    return list(dict.fromkeys(forms))


def _templated(words: _ToolWords) -> list[str]:
    """Caller phrasings of one tool from its own verbs and nouns."""
    nouns = _noun_forms(words.nouns)
    verbs = [v for f in words.families for v in _VERB_FAMILIES.get(f, (f,))]
    verbs += list(words.literal_verbs)
    lines: list[str] = []
    times = itertools.cycle(_TIMES)
    for template, verb, noun in itertools.product(_VERB_TEMPLATES, verbs, nouns):
        line = template.format(v=verb, n=noun)
        if words.has_time and "move" in words.families:
            line = f"{line} to {next(times)}"
        elif words.has_code and template.endswith("{n}"):
            line = f"{line} nnn"
        lines.append(line)
    for family in words.families:
        for template, noun in itertools.product(_FAMILY_TEMPLATES.get(family, ()), nouns):
            lines.append(template.format(n=noun, t=next(times)))
    # A deterministic spread over the product, capped: every verb and noun keeps a share.
    if len(lines) > MAX_TEMPLATE_LINES:
        step = len(lines) / MAX_TEMPLATE_LINES
        lines = [lines[int(i * step)] for i in range(MAX_TEMPLATE_LINES)]
    return lines


def _tool_material(tool: ToolDefinition) -> list[str]:
    lines = [tool.description, " ".join(_words(tool.name))]
    lines += [s for s in _SENTENCE.split(tool.description) if s]
    for key, prop in _schema_properties(tool).items():
        lines.append(" ".join(_words(str(key))))
        if isinstance(prop, dict) and isinstance(prop.get("description"), str):
            lines.append(prop["description"])
    lines += list(tool.examples)
    if tool.builtin == FOLLOWUPS_TOOL:
        times = itertools.cycle(_TIMES)
        lines += [t.format(t=next(times)) for t in _CALLBACK_LINES]
    else:
        lines += _templated(_tool_words(tool))
    return lines


def _claim_material(claims: Iterable[ClaimTopic]) -> list[str]:
    lines = list(_GENERIC_QUESTIONS)
    for claim in claims:
        lines.append(claim.text)
        lines.append(" ".join(_words(claim.key)))
        for topic in claim.topics:
            lines += [t.format(q=topic) for t in _QUESTION_TEMPLATES]
    return lines


def _material(
    tools: Sequence[ToolDefinition], claims: Sequence[ClaimTopic]
) -> tuple[list[str], list[str]]:
    texts: list[str] = []
    labels: list[str] = []
    tool_words: set[str] = set()
    name_words: set[str] = set()
    for tool in tools:
        lines = _tool_material(tool)
        if tool.builtin == KNOWLEDGE_TOOL:
            lines += _claim_material(claims)
        texts += lines
        labels += [tool.name] * len(lines)
        name_words |= set(_words(tool.name))
        own = [tool.description, tool.name, *_schema_properties(tool), *tool.examples]
        tool_words |= {w for line in own for w in _words(line) if w not in _STOP}
    off_topic = [t.format(q=q) for q in _OFF_TOPICS for t in _QUESTION_TEMPLATES[1:]]
    for act, act_lines in (*_ACT_LINES.items(), (OUT_OF_SCOPE, tuple(off_topic))):
        for line in act_lines:
            said = set(line.split())
            # An act line naming a tool's own words would teach the act that word (a decline
            # with "cancel" against a cancel tool); an off-topic line sharing any word of a
            # tool's description is not off topic for this profile.
            if said & name_words or (act == OUT_OF_SCOPE and said & tool_words):
                continue
            texts.append(line)
            labels.append(act)
    # Templates overlap ("change" moves and updates): each distinct line once per label, so a
    # label's weight is its variety, not its repeats, and the fit has half the rows.
    pairs = dict.fromkeys((normalise(t), label) for t, label in zip(texts, labels, strict=True))
    return [t for t, _ in pairs], [label for _, label in pairs]


# ----------------------------------------------------------------------------- the model


@dataclass(frozen=True, slots=True)
class Decision:
    """One line's intent: the label, its probability, and whether the floor decided it."""

    intent: str
    score: float
    below_floor: bool = False


class IntentModel:
    """Tool names and :data:`ACTS` ranked for one caller line; fitted once per tool set."""

    def __init__(
        self, vectorisers: Sequence[TfidfVectorizer], classifier: LogisticRegression
    ) -> None:
        self._vectorisers = tuple(vectorisers)
        self._classifier = classifier
        self._labels: tuple[str, ...] = tuple(str(c) for c in classifier.classes_)

    @classmethod
    def fit(cls, tools: Sequence[ToolDefinition], claims: Sequence[ClaimTopic] = ()) -> IntentModel:
        """Learn the profile's intents from its tools (and claims, for its knowledge tool)."""
        texts, labels = _material(tools, claims)
        vectorisers = (
            TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=False,
                            token_pattern=r"(?u)\b\w+\b"),
            TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True,
                            lowercase=False),
        )  # fmt: skip
        matrix = sparse.hstack([v.fit_transform(texts) for v in vectorisers], format="csr")
        classifier = LogisticRegression(
            C=C, class_weight="balanced", max_iter=300, tol=TOLERANCE, random_state=RANDOM_STATE
        )
        # One BLAS thread: a problem this small gains nothing from threads, and OpenBLAS threads
        # contending with a busy machine's other work made the fit 5-10 times slower.
        with threadpool_limits(limits=1, user_api="blas"):
            classifier.fit(matrix, np.asarray(labels))
        return cls(vectorisers, classifier)

    @property
    def intents(self) -> tuple[str, ...]:
        """Every label the model may give: the tools' names and the acts."""
        return self._labels

    def rank(self, text: str) -> list[tuple[str, float]]:
        """Every intent with its probability, best first (ties by label, so stable)."""
        line = [normalise(text)]
        matrix = sparse.hstack([v.transform(line) for v in self._vectorisers], format="csr")
        probabilities = self._classifier.predict_proba(matrix)[0]
        ranked = sorted(
            zip(self._labels, (float(p) for p in probabilities), strict=True),
            key=lambda pair: (-pair[1], pair[0]),
        )
        return ranked

    def decide(self, text: str) -> Decision:
        """The line's intent, with the out-of-scope decision applied.

        Out of scope when the ``out_of_scope`` class ranks first, or when the best probability
        is under :data:`MIN_CONFIDENCE` (the line resembles nothing the profile's material or
        the acts' lines say). An empty line is out of scope."""
        if not normalise(text):
            return Decision(OUT_OF_SCOPE, 1.0)
        intent, score = self.rank(text)[0]
        if score < MIN_CONFIDENCE:
            return Decision(OUT_OF_SCOPE, score, below_floor=True)
        return Decision(intent, score)
