"""The unit planner (docs/grounding.md "Planning units"): every sentence Vocero speaks is planned
here first.

One :class:`UnitPlanner` per generation. It turns what the turn produced into immutable
:class:`~vocero.speech.model.PlannedUnit`\\ s, in order:

* :meth:`~UnitPlanner.claims`: the model picked approved claims. Each claim is one unit of its
  approved wording, conditions included (never split from them). With ``grounding: assisted`` a
  paraphrase citing claims may be spoken instead, if it passes the check; with ``strict`` it is
  recorded refused and the approved wording is spoken.
* :meth:`~UnitPlanner.feed` / :meth:`~UnitPlanner.flush`: the model's own streamed words, cut at
  sentence ends; each sentence is checked against this turn's evidence (``tool_fact`` when a
  tool result supports it, ``conversational`` otherwise, ``promise`` when it promises contact).
* :meth:`~UnitPlanner.tool_result`: a tool result read out (:mod:`vocero.speech.readout`), or,
  for ``knowledge.search``, the approved claims it found.
* :meth:`~UnitPlanner.say`: application wording (read-backs, denials, questions): trusted.

A unit that fails its check is planned with a ``refusal`` reason (to be recorded ``refused``)
and followed by a truthful ``fallback``; the same fallback is said at most once a generation.
The profile's ``word_budget`` bounds what the model's answer says: a unit that would go past it
is refused (``over_budget``), never cut, and the answer ends there.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from vocero.contracts.builtins import zone_of
from vocero.contracts.domain import AgentProfile, ToolSpec
from vocero.contracts.ports import ClaimAnswer, Clock
from vocero.speech.catalog import CatalogClaim, ClaimCatalog
from vocero.speech.forms import speech_text
from vocero.speech.grounding import (
    KNOWLEDGE_TOOL,
    TurnEvidence,
    Verdict,
    check_free,
    check_paraphrase,
    check_promise,
    is_promise,
)
from vocero.speech.model import EvidenceRef, GenerationRef, PlannedUnit, ToolEvidence, UnitKind
from vocero.speech.readout import ReadoutContext, read_out

Grounding = Literal["strict", "assisted"]

UNCONFIRMED = "I can't confirm that from the records I have."
FALLBACKS: dict[str, str] = {
    "unsupported_value": UNCONFIRMED,
    "restriction_changed": UNCONFIRMED,
    "condition_missing": UNCONFIRMED,
    "unknown_claim": UNCONFIRMED,
    "claim_expired": UNCONFIRMED,
    "no_claims": "I'm sorry, I don't have an approved answer to that.",
    "promise_unbacked": "I can't promise a call back until one is booked.",
    "over_budget": "That's more than I can say in one go. Which part would you like first?",
}
"""What is said instead of a refused unit: truthful, and never a guess."""

_SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*\s+")
_SPACE = re.compile(r"\s")
_ABBREVIATION = re.compile(
    r"(?:\b(?:a\.m|p\.m|e\.g|i\.e|etc|mr|mrs|ms|dr|st|no|approx|vs)|\b[A-Z])\.\s+$", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class PlannerSettings:
    grounding: Grounding = "strict"
    word_budget: int = 60
    locale: str = "en-US"
    timezone: str = "UTC"
    """The caller's timezone: "today" and "tomorrow" mean the caller's days."""

    @classmethod
    def of(
        cls, profile: AgentProfile, *, locale: str = "", timezone: str = "UTC"
    ) -> PlannerSettings:
        return cls(
            grounding=profile.grounding, word_budget=profile.word_budget,
            locale=locale or profile.locale, timezone=timezone,
        )


def new_unit_id() -> str:
    return "unt_" + secrets.token_hex(10)


class UnitPlanner:
    def __init__(
        self,
        generation: GenerationRef,
        *,
        catalog: ClaimCatalog,
        settings: PlannerSettings,
        clock: Clock,
        tools: Mapping[str, ToolSpec] | None = None,
        caller_lines: Iterable[str] = (),
        session_tools: Iterable[ToolEvidence] = (),
        new_id: Callable[[], str] = new_unit_id,
        caller_values: Iterable[tuple[str, str]] | None = None,
    ) -> None:
        """``caller_lines``: what the caller said this session, as heard. ``session_tools``:
        earlier tool calls of the session that may still back a unit (follow-up records back
        promises; their values count as evidence too). ``caller_values``: the critical values of
        ``caller_lines`` when the caller already read them (a session reads each line once)."""
        self.generation = generation
        self._catalog = catalog
        self._settings = settings
        self._clock = clock
        self._tools = dict(tools or {})
        self._new_id = new_id
        today = datetime.fromtimestamp(clock.now(), UTC).astimezone(zone_of(settings.timezone))
        self.evidence = TurnEvidence(today=today.date())
        lines = [line for line in caller_lines if line.strip()]
        self._caller_words = " ".join(lines)
        if caller_values is None:
            self.evidence.add_caller(*lines)
        else:
            self.evidence.caller |= set(caller_values)
        for call in session_tools:
            self.evidence.add_tool(call)
        self.units: list[PlannedUnit] = []
        self._buffer = ""
        self._model_words = 0
        self._spoken = 0
        self._fallbacks: set[str] = set()
        self.exhausted = False

    # ------------------------------------------------------------------------ inputs

    def add_caller(self, line: str) -> None:
        self._caller_words = f"{self._caller_words} {line}".strip()
        self.evidence.add_caller(line)

    def add_tool_result(self, call: ToolEvidence) -> None:
        """Make a tool result of this turn citable, without reading it out."""
        self.evidence.add_tool(call)

    def tool_result(self, call: ToolEvidence) -> list[PlannedUnit]:
        """A tool result of this turn: cited from now on, and said (a read-out, or the claims a
        knowledge search found)."""
        self.evidence.add_tool(call)
        if call.went_to(KNOWLEDGE_TOOL) and call.ok:
            return self.claims(best_claims(call))
        readout = read_out(self._tools.get(call.tool), call, self._readout_context())
        evidence = (EvidenceRef(tool_call_id=call.tool_call_id),)
        return [self._unit(readout.kind, readout.text, evidence=evidence)]

    def say(
        self, text: str, *, kind: UnitKind = "conversational", evidence: Sequence[EvidenceRef] = ()
    ) -> list[PlannedUnit]:
        """Application wording (read-backs, denials, clarifying questions): trusted, unchecked."""
        if not text.strip():
            return []
        return [self._unit(kind, text.strip(), evidence=tuple(evidence))]

    def again(self, unit: PlannedUnit) -> PlannedUnit:
        """A unit of a stopped answer, said again in this one (a false interruption resumed,
        ADR-0038): its words, kind, claims and evidence unchanged."""
        return self._unit(unit.kind, unit.text, keys=unit.claim_keys, evidence=unit.evidence)

    def answer(self, answer: ClaimAnswer) -> list[PlannedUnit]:
        return self.claims(answer.claim_keys, paraphrase=answer.paraphrase)

    def claims(self, keys: Sequence[str], *, paraphrase: str = "") -> list[PlannedUnit]:
        """Speak approved claims (or, in assisted grounding, a checked paraphrase of them)."""
        planned: list[PlannedUnit] = []
        chosen: list[CatalogClaim] = []
        seen: set[str] = set()
        now = datetime.fromtimestamp(self._clock.now(), UTC)
        for key in keys:
            claim = self._catalog.get(key)
            reason = _claim_problem(key, claim, seen, now)
            seen.add(key)
            if reason:
                planned.append(self._refused(reason, "", keys=(key,)))
                continue
            assert claim is not None
            chosen.append(claim)
        if not chosen:
            return planned + self._fallback("no_claims" if not keys else "unknown_claim")
        if paraphrase.strip():
            spoken, approved_instead = self._paraphrase(paraphrase.strip(), chosen)
            planned.extend(spoken)
            if not approved_instead:
                return planned
        for claim in chosen:
            planned.extend(self._claim_unit(claim))
        return planned

    def feed(self, text: str) -> list[PlannedUnit]:
        """Streamed model words; returns the units of every sentence completed."""
        if self.exhausted:
            return []
        tail = self._buffer[-8:]
        self._buffer += text
        planned: list[PlannedUnit] = []
        if _SENTENCE_END.search(tail + text):  # only this text can have ended a sentence
            while not self.exhausted and (cut := self._next_cut()) is not None:
                sentence, self._buffer = self._buffer[:cut], self._buffer[cut:]
                planned.extend(self._sentence(sentence))
        if not self.exhausted and _SPACE.search(text):
            planned.extend(self._over_budget(self._buffer))
        return planned

    def flush(self) -> list[PlannedUnit]:
        """The end of the model's words: the last sentence, even without a full stop."""
        rest, self._buffer = self._buffer, ""
        if self.exhausted or not rest.strip():
            return []
        return self._sentence(rest)

    # ------------------------------------------------------------------------ claims

    def _claim_unit(self, claim: CatalogClaim) -> list[PlannedUnit]:
        if refused := self._over_budget(claim.text, keys=(claim.key,)):
            return refused
        self._model_words += len(claim.text.split())
        return [self._unit("claim", claim.text, keys=(claim.key,), evidence=claim.evidence)]

    def _paraphrase(
        self, text: str, claims: list[CatalogClaim]
    ) -> tuple[list[PlannedUnit], bool]:
        """The units of a paraphrase, and whether the approved wording is spoken instead (strict
        grounding never speaks the model's wording of a policy)."""
        keys = tuple(c.key for c in claims)
        evidence = tuple(ref for c in claims for ref in c.evidence)
        if self._settings.grounding == "strict":
            return [self._refused("strict_grounding", text, keys=keys)], True
        if over := self._over_budget(text, keys=keys):
            return over, False
        verdict = check_paraphrase(text, claims, self.evidence)
        if not verdict.ok:
            refused = self._refused(verdict.reason, text, keys=keys)
            return [refused, *self._fallback(verdict.reason)], False
        self._model_words += len(text.split())
        tools = tuple(EvidenceRef(tool_call_id=t) for t in verdict.tools)
        return [self._unit("claim", text, keys=keys, evidence=evidence + tools)], False

    # ------------------------------------------------------------------------ model text

    def _next_cut(self) -> int | None:
        for match in _SENTENCE_END.finditer(self._buffer):
            if not _ABBREVIATION.search(self._buffer[: match.end()]):
                return match.end()
        return None

    def _sentence(self, sentence: str) -> list[PlannedUnit]:
        text = " ".join(sentence.split())
        if not text:
            return []
        if refused := self._over_budget(text):
            return refused
        verdict: Verdict
        kind: UnitKind
        if is_promise(text):
            verdict, kind = check_promise(text, self.evidence), "promise"
        else:
            verdict = check_free(text, self.evidence)
            kind = "tool_fact" if verdict.tools else "conversational"
        if not verdict.ok:
            return [self._refused(verdict.reason, text, kind=kind), *self._fallback(verdict.reason)]
        self._model_words += len(text.split())
        tools = tuple(EvidenceRef(tool_call_id=t) for t in verdict.tools)
        return [self._unit(kind, text, evidence=tools)]

    # ------------------------------------------------------------------------ budget

    def _over_budget(self, text: str, keys: tuple[str, ...] = ()) -> list[PlannedUnit]:
        """Nothing while ``text`` fits the answer's word budget; past it, the answer is
        exhausted and ``text`` refused: the refusal's units (and a fallback if nothing was
        said yet)."""
        if self._model_words + len(text.split()) <= self._settings.word_budget:
            return []
        self.exhausted = True
        self._buffer = ""
        refused = self._refused("over_budget", " ".join(text.split()), keys=keys)
        return [refused, *(self._fallback("over_budget") if not self._spoken else [])]

    # ------------------------------------------------------------------------ units

    def _fallback(self, reason: str) -> list[PlannedUnit]:
        text = FALLBACKS.get(reason, UNCONFIRMED)
        if text in self._fallbacks:
            return []
        self._fallbacks.add(text)
        return [self._unit("fallback", text)]

    def _refused(
        self, reason: str, text: str, *, keys: tuple[str, ...] = (),
        kind: UnitKind = "conversational",
    ) -> PlannedUnit:
        evidence: tuple[EvidenceRef, ...] = ()
        for key in keys:
            claim = self._catalog.get(key)
            evidence += claim.evidence if claim is not None else ()
        unit = self._make("claim" if keys else kind, text, keys, evidence, refusal=reason)
        self.units.append(unit)
        return unit

    def _unit(
        self, kind: UnitKind, text: str, *, keys: tuple[str, ...] = (),
        evidence: tuple[EvidenceRef, ...] = (),
    ) -> PlannedUnit:
        unit = self._make(kind, text, keys, evidence)
        self.units.append(unit)
        self._spoken += 1
        return unit

    def _make(
        self, kind: UnitKind, text: str, keys: tuple[str, ...],
        evidence: tuple[EvidenceRef, ...], *, refusal: str = "",
    ) -> PlannedUnit:
        generation = self.generation
        return PlannedUnit(
            unit_id=self._new_id(), index=len(self.units), kind=kind, text=text,
            speech=speech_text(text) if not refusal else "", claim_keys=keys,
            evidence=tuple(dict.fromkeys(evidence)), generation_id=generation.generation_id,
            turn_id=generation.turn_id, question_revision=generation.question_revision,
            planned_at=self._clock.now(), planned_mono=self._clock.monotonic(), refusal=refusal,
        )

    def _readout_context(self) -> ReadoutContext:
        settings = self._settings
        return ReadoutContext(
            now=datetime.fromtimestamp(self._clock.now(), UTC), timezone=settings.timezone,
            locale=settings.locale, caller_words=self._caller_words,
            word_budget=settings.word_budget,
        )


def best_claims(call: ToolEvidence, *, limit: int = 2) -> list[str]:
    """The keys a knowledge-search result recommends answering with: its ``best`` list, else
    its first claim."""
    result = dict(call.result or {})
    best = result.get("best")
    if isinstance(best, list) and all(isinstance(k, str) for k in best):
        return list(best)[:limit]
    claims = result.get("claims")
    if isinstance(claims, list) and claims and isinstance(claims[0], dict):
        key = claims[0].get("key")
        return [key] if isinstance(key, str) else []
    return []


def _claim_problem(
    key: str, claim: CatalogClaim | None, seen: set[str], now: datetime
) -> str:
    if key in seen:
        return "duplicate_claim"
    if claim is None:
        return "unknown_claim"
    if not claim.valid_at(now):
        return "claim_expired"
    return ""
