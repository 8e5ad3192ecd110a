"""Deterministic tool routing in front of a small model.

SmolLM2-135M picks the right tool about 60 % of the time on its own; these rules pick it from the
tool *names* the profile exposes. A name such as ``rooms.reschedule`` splits into a domain
("room") and an action ("reschedule"); an English lexicon of actions maps what callers say to
those concepts ("push", "move", "rebook" → reschedule). Name words match literally, so a new
profile's tools route without code changes. The lexicon knows actions only, never a domain's
nouns: what else a tool's things are called comes from the profile, the nouns of the tool's
description and their everyday synonyms (the English lexicon's
thesaurus, :mod:`vocero.contracts.lexicon.synonyms`); an action the
name does not say ("schedule.mine") is the description's leading verb ("List ...").

Ranking is lexicographic: first how many of the tool's concepts the caller said, then whether the
tool's required arguments can be filled from the utterance (:mod:`.arguments`). A tool is a
candidate only when its domain was said, or its action together with at least one of its
arguments: a verb alone ("change my password") is not enough, so chit-chat routes to no tool;
nor is its action with one of its description's nouns ("what visits do I have" for a tool that
lists "the caller's booked visits").
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.lexicon.synonyms import NOUN_SYNONYMS, STATE_SYNONYMS
from vocero.contracts.values.numbers import NUMBER_VALUES as NUMBER_WORDS
from vocero.inference.dialogue import schema
from vocero.inference.dialogue.arguments import CALL_BACK_PHRASES, normalise, stem
from vocero.inference.dialogue.arguments import (  # the routing API, as callers know it
    enum_said_plainly as enum_said_plainly,
)
from vocero.inference.dialogue.arguments import field_kind as field_kind
from vocero.inference.dialogue.arguments import fill_arguments as fill_arguments
from vocero.inference.dialogue.arguments import fill_arguments_one as fill_arguments_one
from vocero.inference.dialogue.arguments import id_noun as id_noun
from vocero.inference.dialogue.arguments import length_unit as length_unit
from vocero.inference.dialogue.arguments import said_thing as said_thing
from vocero.inference.dialogue.arguments import shaped_as_shown as shaped_as_shown
from vocero.inference.dialogue.arguments import state_thing as state_thing
from vocero.inference.dialogue.arguments import told_reason as told_reason

# action concept -> phrases that say it (lower case, matched on word boundaries); actions only,
# never a domain's nouns (those come from the profile's tools)
LEXICON: dict[str, tuple[str, ...]] = {
    "followup": CALL_BACK_PHRASES,
    "status": (
        "status", "where is", "where's", "track", "tracking", "shipped", "arrive", "arriving",
        "delivered", "on its way", "update on", "check on", "find", "look up", "lookup",
    ),
    "list": ("list", "show me", "upcoming", "coming up", "what's on", "do i have"),
    "reschedule": (
        "reschedule", "move", "change", "push", "rebook", "shift", "postpone", "instead",
        "exchange", "swap", "switch",
    ),
    "cancel": ("cancel", "call off", "drop", "scrap", "delete", "remove"),
    "add": ("add", "bring", "include", "put on", "take along"),
    "record": ("record", "note down", "log"),
}  # fmt: skip
WEAK_CUES: dict[str, tuple[str, ...]] = {"list": ("what", "which", "when", "any", "anything")}


@dataclass(frozen=True, slots=True)
class Route:
    """The routing decision for one utterance."""

    tool: ToolDefinition | None
    arguments: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    """Required fields the rules could not fill and that must not be guessed."""
    model_fill: tuple[str, ...] = ()
    """Required fields with no rule: the model fills them under the schema."""
    runner_up: str = ""
    learned: bool = False
    """Chosen by the dialogue manager's intent model, not by these rules: an open task whose
    question the line answers keeps it."""


@dataclass(frozen=True, slots=True)
class _Scored:
    tool: ToolDefinition
    said: float
    fit: float
    arguments: dict[str, Any]
    missing: tuple[str, ...]
    model_fill: tuple[str, ...]
    candidate: bool


def route(
    utterance: str,
    tools: list[ToolDefinition],
    today: dt.date,
    *,
    now: dt.datetime | None = None,
) -> Route:
    said = _concepts_said(utterance)
    scored = [_score(tool, utterance, said, today, now) for tool in tools]
    # On a tie, the tool that takes more of what the caller said ("the Ridge Room on Thursday
    # for one hour, card 2731…" books the room; it does not only list the day's free rooms).
    # Still tied, the tool whose own line says more of what the caller said, in the caller's
    # everyday words ("someone's nicked our bin, can I get a new one?" orders a replacement
    # for a stolen bin; it reports no missed collection).
    ranked = sorted(
        (s for s in scored if s.candidate),
        key=lambda s: (s.said, s.fit, len(s.arguments), _described_said(s.tool, utterance)),
        reverse=True,
    )
    if not ranked:
        return Route(tool=None)
    best = ranked[0]
    runner_up = ranked[1].tool.name if len(ranked) > 1 else ""
    return Route(best.tool, best.arguments, best.missing, best.model_fill, runner_up)


_PLAIN = frozenset(("that", "this", "with", "from", "their", "they", "what", "when", "which",
                    "where", "will", "would", "says", "said", "about", "into", "your", "have",
                    "optionally", "property", "caller", "caller's"))


def _described_said(tool: ToolDefinition, utterance: str) -> int:
    """How many words of the tool's own line the caller says, as written or in an everyday word
    for it (:data:`STATE_SYNONYMS`)."""
    text = f" {normalise(utterance)} "
    said = {stem(w) for w in text.split()}
    count = 0
    for word in set(normalise(tool.description).split()):
        if len(word) < 4 or word in _PLAIN:
            continue
        alike = STATE_SYNONYMS.get(word, ())
        if stem(word) in said or any(f" {a} " in text for a in alike):
            count += 1
    return count


def tool_concepts(tool: ToolDefinition) -> list[str]:
    """``appointments.reschedule`` -> ``["appointment", "reschedule"]``: the domain's words, then
    one action. A dotted name's last part is the action, said as a phrase the lexicon may know
    (``visits.call_off`` -> ``["visit", "cancel"]``, ``visits.upcoming`` -> ``["visit",
    "list"]``); a built-in is named by what it resolves to."""
    name = (tool.builtin or tool.name).lower()
    parts = [p for p in name.split(".") if p]
    if len(parts) < 2:
        words = [w for w in re.split(r"[._\-\s]+", name) if w]
        return [stem(w) for w in words]
    domain = [stem(w) for part in parts[:-1] for w in re.split(r"[_\-\s]+", part) if w]
    phrase = " ".join(w for w in re.split(r"[_\-\s]+", parts[-1]) if w)
    known = _known_action(phrase) or _described_action(tool.description)
    action = known or stem(phrase.replace(" ", "_"))
    return [*domain, action]


def _known_action(phrase: str) -> str | None:
    return next((c for c, phrases in LEXICON.items() if phrase in phrases or phrase == c), None)


def _described_action(description: str) -> str | None:
    """The action of a description that leads with a verb the lexicon knows ("List the caller's
    visits" -> "list"), for a name whose action word it does not know (``schedule.mine``)."""
    first = normalise(description).split()[:1]
    return _known_action(first[0]) if first else None


def described_nouns(tool: ToolDefinition) -> frozenset[str]:
    """What the tool's things are called, from the profile: the nouns of its description that
    everyday English has other words for, with those words ("the caller's booked visits" ->
    visit and what else a visit is called), stemmed as a caller's words are."""
    words = {stem(w) for w in normalise(tool.description).split()}
    out: set[str] = set()
    for noun, synonyms in NOUN_SYNONYMS.items():
        if noun in words:
            out.update(stem(s.replace(" ", "")) for s in synonyms)
    return frozenset(out)


_NO_CALL_BACK = re.compile(
    r"\bremind me (?=what|which|when|where|how|who|of\b)"
    r"|\b(?:i'll|i will|we'll) (?:call|ring|phone)(?: you)? back\b",
    re.I,
)
"""Call-back words that ask for none: "remind me what I've booked" asks to be told, "I'll ring
back" says the caller will."""


def _concepts_said(utterance: str) -> dict[str, float]:
    text = f" {normalise(_NO_CALL_BACK.sub(' ', utterance))} "
    said: dict[str, float] = {}
    for concept, phrases in LEXICON.items():
        if any(f" {p} " in text for p in phrases):
            said[concept] = 1.0
    for concept, phrases in WEAK_CUES.items():
        if concept not in said and any(f" {p} " in text for p in phrases):
            said[concept] = 0.3
    words = text.split()
    for word in words:
        said.setdefault(stem(word), 1.0)
    for first, second in itertools.pairwise(words):  # "set up" says "setup"
        said.setdefault(stem(first + second), 1.0)
    return said


def _score(
    tool: ToolDefinition,
    utterance: str,
    said: dict[str, float],
    today: dt.date,
    now: dt.datetime | None,
) -> _Scored:
    concepts = tool_concepts(tool)
    said = {**said, **{c: _phrase_said(c, said) for c in concepts if c not in said and "_" in c}}
    strength = sum(said.get(c, 0.0) for c in concepts)
    arguments, missing, model_fill = fill_arguments(tool, utterance, today, now=now)
    required = set(schema.model_facing(tool).get("required", []))
    fit = 0.5 * len(required & arguments.keys()) - 1.0 * len(missing) - 0.25 * len(model_fill)
    domain, action = concepts[:-1] or concepts, concepts[-1]
    domain_said = any(said.get(c, 0.0) >= 1.0 for c in domain)
    action_said = said.get(action, 0.0) >= 1.0
    verb = _example_verb(tool)
    if not action_said and verb and said.get(verb, 0.0) >= 1.0:
        strength, action_said = strength + 1.0, True  # "hibernate my plan": the tool's own verb
    # "what visits do I have" for a tool that lists "the caller's booked visits"
    described = (
        not domain_said
        and action_said
        and any(said.get(n, 0.0) >= 1.0 for n in described_nouns(tool) - {action})
    )
    strength += 1.0 if described else 0.0
    candidate = domain_said or described or (
        action_said and bool(arguments) and not _other_object(tool, utterance)
    )
    return _Scored(tool, strength, fit, arguments, tuple(missing), tuple(model_fill), candidate)


def action_said(tool: ToolDefinition, utterance: str) -> bool:
    """Whether the line says the tool's action (its name's action, or its description's own
    verb), not only its domain: "what day do my bins go out" names the bins of
    ``bins.report_missed`` but asks for no report."""
    said = _concepts_said(utterance)
    action = tool_concepts(tool)[-1]
    if said.get(action, 0.0) >= 1.0 or ("_" in action and _phrase_said(action, said) >= 1.0):
        return True
    verb = _example_verb(tool)
    return bool(verb) and said.get(verb or "", 0.0) >= 1.0


_REQUEST_FORM = re.compile(
    r"\b(?:(?:can|could|would|will) you|please|(?:i'?d|i would) like(?: you)? to|"
    r"i want(?: you)? to|i need(?: you)? to|i wanna|(?:can|could|may) i|"
    r"i'?m (?:calling|ringing|phoning) to|"
    r"i'?m (?:looking|hoping) to|help me|let me)\s+(?:(?:please|just|also|quickly)\s+)?([a-z]+)",
    re.IGNORECASE,
)


_LEADING = frozenset(
    ("me", "us", "you", "a", "an", "the", "some", "my", "our", "in", "for", "on", "at", "to", "it",
     "them", "this", "that", "one", "another", "another", "just", "please", "again", "up", "off")
)  # fmt: skip


def _other_object(tool: ToolDefinition, utterance: str) -> bool:
    """Whether the tool's action is said of a thing the tool never names ("Can you book us a
    table for dinner?" of a tool that books theatre tickets): the first noun after the verb is
    none of the tool's words (its name, description, fields and their values)."""
    action = tool_concepts(tool)[-1]
    verbs = {action, *(stem(p) for p in LEXICON.get(action, ()) if " " not in p)}
    own = {stem(w) for w in normalise(f"{tool.name} {tool.description}").replace(".", " ").split()}
    for name, prop in schema.model_facing(tool).get("properties", {}).items():
        own.update(stem(w) for w in re.split(r"[_\s]+", name.lower()))
        for value in (prop.get("enum") or []) if isinstance(prop, dict) else []:
            own.update(stem(w) for w in normalise(str(value)).split())
    said = re.findall(r"[\w'-]+", utterance)
    for at, word in enumerate(said):
        if stem(word.lower()) not in verbs:
            continue
        after = said[at + 1 : at + 5]
        ahead = [w for w in after if w.lower() not in _LEADING and not w.isdigit()]
        thing = ahead[0] if ahead else ""
        counted = after.index(thing) if thing else 0
        # a common noun after its article ("book us a table"), never a name ("reserve Piranesi")
        article = counted > 0 and after[counted - 1].lower() in _ARTICLES
        if article and thing.islower() and len(thing) >= 3 and stem(thing) not in own:
            return thing not in NUMBER_WORDS
    return False


_ARTICLES = frozenset(("a", "an", "the", "some", "my", "our", "another"))


def action_requested(tool: ToolDefinition, utterance: str) -> bool:
    """Whether the line asks, in so many words, for the tool's own action ("can you book an
    inorganic collection?", "I'd like to report a missed bin"): a request, not a question
    about it ("is there a fee if I cancel?")."""
    action = tool_concepts(tool)[-1]
    verbs = {action, *(stem(p) for p in LEXICON.get(action, ()) if " " not in p)}
    verbs.add(_example_verb(tool) or action)
    return any(
        stem(m.group(1).lower()) in verbs and not _SUPPOSED.search(utterance[: m.start()])
        for m in _REQUEST_FORM.finditer(utterance)
    )


_SUPPOSED = re.compile(
    r"\b(?:if|when|whenever|whether|once|after|before|what if)\s+(?:\w+\s+){0,2}$", re.I
)
"""A request form inside a supposition ("If I need to cancel a lesson, how much notice ...")."""


def _example_verb(tool: ToolDefinition) -> str | None:
    """The verb a tool's description leads with when its examples say it too ("Hibernate a
    plan ..." and "I want to hibernate my plan"): the profile's own word for the tool's action,
    whatever its name calls it (``plans.suspend``); ``None`` for a description that leads with
    anything else."""
    first = normalise(tool.description).split()[:1]
    if not first or len(first[0]) < 4 or not first[0].isalpha():
        return None
    verb = stem(first[0])
    said = {stem(w) for example in tool.examples for w in normalise(example).split()}
    return verb if verb in said and verb not in tool_concepts(tool) else None


def _phrase_said(concept: str, said: dict[str, float]) -> float:
    """An action of several words the lexicon does not know ("free_time" of
    ``schedule.free_times``) is said when each of its words is ("what times are free")."""
    return min(said.get(stem(w), 0.0) for w in concept.split("_") if w)
