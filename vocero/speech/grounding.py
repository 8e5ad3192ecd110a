"""The grounding check (docs/grounding.md): is a proposed unit supported by its evidence?

A unit's evidence is its claims' text, the tool results of this turn and the caller's own words
(as heard). :class:`TurnEvidence` holds their canonical critical values, computed once when each
piece arrives, so a check costs one extraction of the unit's own text.

* Free model wording (``conversational`` / ``tool_fact``): every critical value must be in the
  tool results or the caller's words (claims are not cited, so they support nothing).
* A paraphrase of claims (``grounding: assisted``): every critical value in the claims, the tool
  results or the caller's words; exactly the claims' restriction words, none dropped, none
  added; every condition of every claim present.
* A promise ("someone will call you"): backed by a follow-up record of this session, and its
  values found in that record or the caller's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from vocero.contracts import builtins
from vocero.speech.catalog import CatalogClaim
from vocero.speech.model import ToolEvidence
from vocero.speech.values import (
    Value,
    critical_values,
    evidence_values,
    restriction_words,
    supported,
    text_values,
)

KNOWLEDGE_TOOL = builtins.KNOWLEDGE_TOOL
FOLLOWUP_TOOL = builtins.FOLLOWUPS_TOOL

_PROMISE = re.compile(
    r"\b(?:some(?:one|body)|an?\s+(?:agent|colleague|advisor|person|representative|technician|"
    r"specialist)|(?:our|the)\s+(?:team|store|agent|office)|we|i|they|he|she)\b[^.?!]{0,40}?"
    r"(?:\bwill\b|'ll\b|\b(?:is|are|am)\s+going\s+to\b|\bshall\b)[^.?!]{0,30}?"
    r"\b(?:call|ring|phone|contact|reach|get\s+back|text|email|follow\s+up)\b"
    r"|\byou(?:'ll|\s+will)\s+(?:get|receive|have)\s+(?:a|an|our)\s+(?:call|callback|call\s+back"
    r"|phone\s+call|message)\b|\bexpect\s+(?:a|our)\s+call\b",
    re.IGNORECASE,
)


def is_promise(sentence: str) -> bool:
    """A commitment to contact the caller later. A question ("Shall I have someone call you?")
    is an offer, not a promise."""
    stripped = sentence.strip()
    return not stripped.endswith("?") and _PROMISE.search(stripped) is not None


def squash(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    reason: str = ""
    """``unsupported_value``, ``restriction_changed``, ``condition_missing``,
    ``promise_unbacked``."""
    unsupported: tuple[Value, ...] = ()
    tools: tuple[str, ...] = ()
    """Tool calls whose results support at least one value of the unit."""


OK = Verdict(ok=True)


@dataclass
class TurnEvidence:
    """What this turn's units may rest on, as canonical values."""

    today: date | None = None
    caller: set[tuple[str, str]] = field(default_factory=set)
    tools: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    followups: list[ToolEvidence] = field(default_factory=list)

    def add_caller(self, *lines: str) -> None:
        self.caller |= text_values(lines, today=self.today)

    def add_tool(self, result: ToolEvidence) -> None:
        """A tool call of this turn. Knowledge-search results are not evidence for values:
        what they found is cited as claims. A follow-up record also backs promises."""
        if result.went_to(FOLLOWUP_TOOL) and recorded(result):
            self.followups.append(result)
        if result.went_to(KNOWLEDGE_TOOL) or not result.ok:
            return
        data = {"arguments": dict(result.arguments), "result": dict(result.result or {})}
        self.tools[result.tool_call_id] = evidence_values(data, today=self.today)

    def all_tools(self) -> set[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        for values in self.tools.values():
            found |= values
        return found


def recorded(result: ToolEvidence) -> bool:
    """A follow-up record was made: committed, with its id, and not refused."""
    content = dict(result.answer)
    if result.status != "committed" or content.get("error") or (result.result or {}).get("error"):
        return False
    if content.get("recorded") is False:
        return False
    if any(isinstance(v, str) and "not recorded" in v.casefold() for v in content.values()):
        return False
    return bool(content.get("followup_id") or content.get("recorded") is True)


def check_free(text: str, evidence: TurnEvidence) -> Verdict:
    """Model wording that cites no claim."""
    values = critical_values(text, today=evidence.today)
    missing = _missing(values, evidence.all_tools() | evidence.caller)
    if missing:
        return Verdict(ok=False, reason="unsupported_value", unsupported=missing)
    return Verdict(ok=True, tools=_supporting(values, evidence))


def check_paraphrase(text: str, claims: list[CatalogClaim], evidence: TurnEvidence) -> Verdict:
    """The model's own wording of ``claims`` (assisted grounding)."""
    claim_values: set[tuple[str, str]] = set()
    restrictions: set[str] = set()
    for claim in claims:
        claim_values |= claim.values
        restrictions |= claim.restrictions
    values = critical_values(text, today=evidence.today)
    missing = _missing(values, claim_values | evidence.all_tools() | evidence.caller)
    if missing:
        return Verdict(ok=False, reason="unsupported_value", unsupported=missing)
    if restriction_words(text) != restrictions:
        return Verdict(ok=False, reason="restriction_changed")
    said = squash(text)
    if any(squash(c) not in said for claim in claims for c in claim.claim.conditions):
        return Verdict(ok=False, reason="condition_missing")
    return Verdict(ok=True, tools=_supporting(values, evidence))


def check_promise(text: str, evidence: TurnEvidence) -> Verdict:
    """A promise needs a follow-up record of this session whose values it matches."""
    if not evidence.followups:
        return Verdict(ok=False, reason="promise_unbacked")
    values = critical_values(text, today=evidence.today)
    for record in reversed(evidence.followups):
        data = {"arguments": dict(record.arguments), "result": dict(record.result or {})}
        support = evidence_values(data, today=evidence.today) | evidence.caller
        if not _missing(values, support):
            return Verdict(ok=True, tools=(record.tool_call_id,))
    return Verdict(ok=False, reason="unsupported_value")


def _missing(values: list[Value], support: set[tuple[str, str]]) -> tuple[Value, ...]:
    return tuple(v for v in values if not supported(v, support))


def _supporting(values: list[Value], evidence: TurnEvidence) -> tuple[str, ...]:
    return tuple(
        call for call, found in evidence.tools.items() if any(supported(v, found) for v in values)
    )
