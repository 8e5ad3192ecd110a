"""The training material of the intent model (:mod:`vocero.inference.dialogue.intents`): each tool's
own words (description, name split into words, schema properties, examples), caller phrasings
templated from the tool's verbs and nouns, the knowledge tool's claims, and the acts' lines, as
normalised, deduplicated ``(line, label)`` pairs.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vocero.contracts.builtins import FOLLOWUPS_TOOL, KNOWLEDGE_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.lexicon.synonyms import NOUN_SYNONYMS
from vocero.contracts.ports import ClaimTopic
from vocero.inference.dialogue.intent_lines import (
    ACT_LINES,
    CALLBACK_LINES,
    CODE_WORDS,
    FAMILY_TEMPLATES,
    GENERIC_QUESTIONS,
    OFF_TOPICS,
    OUT_OF_SCOPE,
    QUESTION_TEMPLATES,
    REFUSED,
    STOP,
    TIME_WORDS,
    TIMES,
    VERB_FAMILIES,
    VERB_TEMPLATES,
    VERB_WORDS,
)

MAX_TEMPLATE_LINES = 160
"""Template lines per tool at most (chosen deterministically), so fit time stays bounded."""
RANDOM_SEED = 0
"""The seed of that choice: the same tools always give the same lines."""

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


_PHRASAL = {
    phrase: family
    for family, phrases in VERB_FAMILIES.items()
    for phrase in phrases
    if len(phrase.split()) == 2
}
"""Two-word verbs of the families ("call off", "set up"): a name may spell its action so."""


def _name_words(name: str) -> tuple[list[str], list[str], list[str]]:
    """The action families of a tool's name, those of its area, and its nouns (in name order).
    In ``area.action`` the part after the last dot says what the tool does and the area what it
    is about: a verb word of the area (``schedule.move``: its siblings share "schedule") names
    the action only when nothing else does (:func:`_tool_words`), and is no noun either."""
    area, _, action = name.rpartition(".")
    families: tuple[list[str], list[str]] = ([], [])
    nouns: list[str] = []
    for part, found in ((_words(area), families[1]), (_words(action), families[0])):
        skip = False
        for word, after in itertools.zip_longest(part, part[1:], fillvalue=""):
            if skip:
                skip = False
                continue
            family = VERB_WORDS.get(word)
            phrasal = _PHRASAL.get(f"{word} {after}")
            if family is None and phrasal is not None:
                family, skip = phrasal, True
            if family is not None:
                found.append(family)
            elif word not in STOP:
                nouns.append(_singular(word))
    return families[0], families[1], nouns


def _tool_words(tool: ToolDefinition) -> _ToolWords:
    name = _words(tool.name)
    sentences = [s for s in _SENTENCE.split(tool.description.strip()) if s]
    lead = _words(sentences[0]) if sentences else []
    families, area_families, nouns = _name_words(tool.name)
    literal: list[str] = []
    # The description's first word is its verb ("Look up the ...", "Move one of ...").
    if lead:
        family = VERB_WORDS.get(lead[0]) or _PHRASAL.get(" ".join(lead[:2]))
        if family is not None:
            families.append(family)
        elif lead[0] not in STOP:
            literal.append(lead[0])
    for word in lead[1:]:
        if word not in STOP and word not in VERB_WORDS and len(word) > 2:
            nouns.append(_singular(word))
    props = _schema_properties(tool)
    prop_words = [w for key in props for w in _words(str(key))]
    desc_words = set(_words(tool.description))
    has_code = any(w in CODE_WORDS for w in prop_words) or bool(
        desc_words & {"number", "code", "reference", "id"}
    )
    has_time = bool(set(prop_words) & TIME_WORDS or desc_words & {"date", "time", "when"})
    # Nouns of the name first: they say what the tool is about; a few from the description.
    ordered = list(dict.fromkeys(nouns))
    head = [n for n in ordered if n in {_singular(w) for w in name}]
    rest = [n for n in ordered if n not in head][:3]
    families = families or ([] if literal else area_families)
    return _ToolWords(
        families=tuple(dict.fromkeys(families)) or (() if literal else ("check",)),
        literal_verbs=tuple(literal),
        nouns=tuple(head + rest) or ("request",),
        has_code=has_code,
        has_time=has_time,
    )


def _noun_forms(nouns: Sequence[str]) -> list[str]:
    """The nouns and the everyday words for the tool's main noun only: the first of its nouns
    the thesaurus knows (a first word such as "booked" or "mine" is no noun it knows)."""
    forms: list[str] = []
    main = next((n for n in nouns if n in NOUN_SYNONYMS), None)
    for noun in nouns:
        forms.append(noun)
        if noun == main:
            forms.extend(NOUN_SYNONYMS[noun])
    return list(dict.fromkeys(forms))


def _templated(words: _ToolWords) -> list[str]:
    """Caller phrasings of one tool from its own verbs and nouns."""
    nouns = _noun_forms(words.nouns)
    verbs = [v for f in words.families for v in VERB_FAMILIES.get(f, (f,))]
    verbs += list(words.literal_verbs)
    lines: list[str] = []
    times = itertools.cycle(TIMES)
    for template, verb, noun in itertools.product(VERB_TEMPLATES, verbs, nouns):
        line = template.format(v=verb, n=noun)
        if words.has_time and "move" in words.families:
            line = f"{line} to {next(times)}"
        elif words.has_code and template.endswith("{n}"):
            line = f"{line} nnn"
        lines.append(line)
    for family in words.families:
        for template, noun in itertools.product(FAMILY_TEMPLATES.get(family, ()), nouns):
            lines.append(template.format(n=noun, t=next(times)))
    # A deterministic sample of the product, capped: every verb and noun keeps a share. (A
    # fixed stride did not: with 7 nouns varying fastest, a stride of 3.5 kept only 2 of them.)
    if len(lines) > MAX_TEMPLATE_LINES:
        kept = sorted(random.Random(RANDOM_SEED).sample(range(len(lines)), MAX_TEMPLATE_LINES))
        lines = [lines[i] for i in kept]
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
        times = itertools.cycle(TIMES)
        lines += [t.format(t=next(times)) for t in CALLBACK_LINES]
    else:
        lines += _templated(_tool_words(tool))
    return lines


def _claim_material(claims: Iterable[ClaimTopic]) -> list[str]:
    lines = list(GENERIC_QUESTIONS)
    for claim in claims:
        lines.append(claim.text)
        lines.append(" ".join(_words(claim.key)))
        for topic in claim.topics:
            lines += [t.format(q=topic) for t in QUESTION_TEMPLATES]
    return lines


def material(
    tools: Sequence[ToolDefinition],
    claims: Sequence[ClaimTopic],
    refused: Sequence[ToolDefinition] = (),
) -> tuple[list[str], list[str]]:
    """``refused``: the profile's prohibited tools, each its own class (:data:`REFUSED` + its
    name) learned from the same material as a tool's, so a request for what only it does is
    told apart from the allowed tools' (off-topic lines may share its words: both refuse)."""
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
        tool_words |= {w for line in own for w in _words(line) if w not in STOP}
    for tool in refused:
        lines = _tool_material(tool)
        texts += lines
        labels += [REFUSED + tool.name] * len(lines)
        name_words |= set(_words(tool.name))
    off_topic = [t.format(q=q) for q in OFF_TOPICS for t in QUESTION_TEMPLATES[1:]]
    for act, act_lines in (*ACT_LINES.items(), (OUT_OF_SCOPE, tuple(off_topic))):
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
