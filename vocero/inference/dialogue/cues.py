"""Cues in a caller's line that the words of the profile itself give away.

Two questions the intent model answers poorly on a profile it was never tuned on, and that the
profile's own material answers well:

* **Does the line ask the catalog?** A claim topic that no tool's material uses ("fee",
  "emergency", "store credit") is the catalog's own word: a line that says one asks the catalog,
  unless it is about one of the caller's own records ("my order", "my visit"), which a tool
  holds. Topics that tools share ("cancel", "prescription", "move") prove nothing.
* **Which record does it name?** An identifier that a tool's pattern-checked identifier field
  accepts ("V X two zero four one" for ``^VX-[0-9]{4}$``) narrows the line to the tools that
  take it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from vocero.contracts import values
from vocero.contracts.builtins import KNOWLEDGE_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.lexicon.en import LEXICON
from vocero.contracts.ports import ClaimTopic
from vocero.inference.dialogue import router, schema

_WORD = re.compile(r"[a-z0-9]+")
_QUESTION = re.compile(
    r"\?|^\W*(?:can|could|may|what|when|where|which|who|how|why|is|are|do|does|will|would|"
    r"should|am)\b|\b(?:what|who|how) (?:do|should|can) (?:i|we)\b",
    re.I,
)
_DAYS = frozenset(LEXICON.calendar.weekdays)
_HYPOTHETICAL = re.compile(
    r"^\W*(?:(?:and|but|so|also|just wondering|quick question)\W+)?"
    r"(?:if (?:i|we)|what (?:happens|if)|what would happen if|suppose|say i)\b",
    re.I,
)
"""A question about what would happen ("If I cancel my booking, is there a fee?"): it asks the
terms, even about the caller's own record."""
_MINE = re.compile(r"\b(?:my|our|mine)\s+(?:\w+\s+){0,2}?(\w+)", re.I)


def stems(text: str) -> tuple[str, ...]:
    """The line's words, lower case, each reduced to a rough stem (plural and -ed, -ing)."""
    return tuple(_stem(w) for w in _WORD.findall(text.lower()))


@dataclass(frozen=True, slots=True)
class CatalogCues:
    """The claim topics no tool's material uses, and the nouns of the tools' domains."""

    topics: tuple[tuple[str, ...], ...]
    domains: frozenset[str]

    @classmethod
    def of(cls, tools: Sequence[ToolDefinition], claims: Sequence[ClaimTopic]) -> CatalogCues:
        business = [t for t in tools if t.builtin != KNOWLEDGE_TOOL]
        material: set[str] = set()
        domains: set[str] = set()
        for tool in business:
            concepts = router.tool_concepts(tool)
            domains.update(concepts[:-1])
            material.update(concepts)
            material.update(stems(tool.description))
            for name in schema.model_facing(tool).get("properties", {}):
                material.update(stems(name.replace("_", " ")))
        topics = {
            stems(topic)
            for claim in claims
            for topic in claim.topics
            if stems(topic) and not set(stems(topic)) & (material | _DAYS)
        }
        return cls(topics=tuple(sorted(topics)), domains=frozenset(domains))

    def asks_catalog(self, text: str) -> bool:
        """The line asks a question, says a topic only the catalog has, and is not about the
        caller's own record of a tool's domain ("Please close my account" asks no question;
        "Is my order going to arrive before the weekend?" is about an order)."""
        if not _QUESTION.search(text):
            return False
        said = stems(text)
        alike = [stems(w) for w in values.asked_alike(text)]
        if not any(_contains(said, t) or t in alike for t in self.topics):
            return False
        if _HYPOTHETICAL.search(text):
            return True  # "If I cancel my reservation, will I be charged?" asks the terms
        mine = {_stem(m.group(1).lower()) for m in _MINE.finditer(text)}
        return not mine & self.domains


_ACTION_ASKED = re.compile(
    r"^\W*(?:(?:hi|hello|hey|yes|ok(?:ay)?|so|and)\W+)*(?:(?:can|could|would|will) you"
    r"(?:\s+please)?|please)\s+(?!tell|let|explain|say|check|confirm|find out|remind)"
    r"[a-z]+\s+(?:me|us|my|our)\b",
    re.I,
)


_ADVICE = re.compile(
    r"\b(?:am i|are we|is it) (?:meant|supposed|allowed|required|ok|okay|alright) to\b"
    r"|\b(?:do|would|will) (?:i|we) (?:need|have) to\b"
    r"|\b(?:what|when|where|how|which) (?:should|must) (?:i|we)\b",
    re.I,
)


def asks_advice(text: str) -> bool:
    """The line asks what the caller should do ("what time am I meant to have the bin out
    by?", "do I need to be home?") or what would happen if they did ("If I need to change my
    tickets, is there a charge?"): the terms, not a request of the agent ("when can I come
    in?" asks for a time, and is no such question)."""
    supposes = bool(_HYPOTHETICAL.search(text)) and "?" in text  # "If I change it, is there a fee?"
    return supposes or bool(_ADVICE.search(text))


def asks_action(text: str) -> bool:
    """The line asks the agent to do something for the caller ("Can you book me a flight?",
    "Please order us a taxi"), not to tell them something: a catalog topic it happens to say
    ("... for Friday morning") makes it no catalog question."""
    return bool(_ACTION_ASKED.search(text))


def identified_tools(text: str, tools: Sequence[ToolDefinition]) -> list[ToolDefinition]:
    """The tools whose pattern-checked identifier field accepts an identifier the line says,
    as said: a number never takes another tool's prefix to fit ("glaze 5521" names no tool whose
    pattern is "^FR-[0-9]{4}$"); and those whose identifier field without a pattern the line
    names with its value ("glaze number 5521 D" for ``glaze_no``)."""
    found: list[ToolDefinition] = []
    for tool in tools:
        properties = schema.model_facing(tool).get("properties", {})
        for name, prop in properties.items():
            if not isinstance(prop, dict) or router.field_kind(name, prop) != "id":
                continue
            pattern = prop.get("pattern")
            if pattern:
                said = values.bare_identifier(text, pattern, borrow=False)
            else:
                said = values.identifier_in(text, router.id_noun(name.lower()))
            if said is not None:
                found.append(tool)
                break
    return found


_COMMON = frozenset(
    {
        "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "by", "for", "with",
        "from", "is", "are", "be", "it", "its", "their", "your", "our", "my", "this", "that",
        "what", "when", "where", "which", "who", "how", "can", "do", "does", "you", "we",
        "they", "caller", "customer", "patient",
    }
)  # fmt: skip


def described_tools(text: str, tools: Sequence[ToolDefinition]) -> list[ToolDefinition]:
    """The tools a line names by a word only their own name or description has ("can a
    technician come" names the tool whose description books a technician's visit)."""
    own: dict[str, set[str]] = {}
    for tool in tools:
        words = re.findall(r"[a-z]+", f"{tool.name} {tool.description}".lower())
        own[tool.name] = {_stem(w) for w in words if len(w) > 3 and w not in _COMMON}
    said = {_stem(w) for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}
    found: list[ToolDefinition] = []
    for tool in tools:
        others = set().union(*(v for k, v in own.items() if k != tool.name))
        if (own[tool.name] - others) & said:
            found.append(tool)
    return found


def _contains(words: tuple[str, ...], phrase: tuple[str, ...]) -> bool:
    size = len(phrase)
    return any(words[i : i + size] == phrase for i in range(len(words) - size + 1))


def _stem(word: str) -> str:
    for suffix in ("ies", "ing", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word
