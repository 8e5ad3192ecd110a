"""The records of grounded speech (docs/grounding.md): spoken units, their evidence, and the tool
results a turn may cite. All immutable: a planned unit is never edited, only admitted or refused."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

UnitKind = Literal[
    "conversational", "claim", "tool_fact", "readback", "outcome", "promise", "fallback"
]
FACT_KINDS = frozenset({"claim", "tool_fact", "readback", "outcome", "promise"})
"""Kinds that state a fact and must cite evidence."""


@dataclass(frozen=True, slots=True)
class EvidenceRef:
    """What a unit rests on: a claim's source version, or a tool call of this session."""

    source_id: str = ""
    version: str = ""
    tool_call_id: str = ""

    def __post_init__(self) -> None:
        if bool(self.tool_call_id) == bool(self.source_id):
            raise ValueError("evidence is a source version or a tool call, exactly one")
        if self.source_id and not self.version:
            raise ValueError("a source reference needs its version")

    def public(self) -> dict[str, str]:
        """The ``evidence`` item of ``GET /v1/units``."""
        if self.tool_call_id:
            return {"tool_call_id": self.tool_call_id}
        return {"source_id": self.source_id, "version": self.version}


@dataclass(frozen=True, slots=True)
class GenerationRef:
    """The response a unit belongs to, and the question revision it answers."""

    generation_id: str
    turn_id: str
    question_revision: int = 0


@dataclass(frozen=True, slots=True)
class PlannedUnit:
    """One spoken unit, planned before synthesis.

    ``text`` is what the caller is told (text deltas, transcripts, reviews); ``speech`` is what
    the TTS reads (identifiers spelled, markup neutralised). ``refusal`` is the reason code of a
    unit that must never be spoken (``unsupported_value``, ``over_budget``, ...): it is planned
    only to be recorded ``refused``; the unit after it is the fallback spoken instead.
    """

    unit_id: str
    index: int
    kind: UnitKind
    text: str
    speech: str
    claim_keys: tuple[str, ...]
    evidence: tuple[EvidenceRef, ...]
    generation_id: str
    turn_id: str
    question_revision: int
    planned_at: float
    """Wall-clock seconds since the epoch (for records)."""
    planned_mono: float
    """Monotonic seconds of the planner's clock (what admission ages the unit by)."""
    refusal: str = ""

    def __post_init__(self) -> None:
        if not self.refusal and self.kind in FACT_KINDS and not self.evidence:
            raise ValueError(f"a {self.kind} unit must cite its evidence")
        if not self.refusal and not self.text.strip():
            raise ValueError("a speakable unit needs words")

    @property
    def speakable(self) -> bool:
        return not self.refusal

    @property
    def words(self) -> int:
        return len(self.text.split())

    def public_evidence(self) -> list[dict[str, str]]:
        return [ref.public() for ref in self.evidence]


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True, slots=True)
class ToolEvidence:
    """A tool call of this session as the planner may cite it: what was asked, how it ended,
    what it returned."""

    tool_call_id: str
    tool: str
    """The profile's model-facing tool name."""
    status: str = "committed"
    result: Mapping[str, Any] | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)
    reason_code: str = ""
    builtin: str | None = None
    """The Vocero built-in the call went to (its ``resolves_to`` under ``server: vocero``),
    whatever the profile named it; ``""``: an MCP tool; ``None``: not known, ``tool`` is taken
    for it (records made without the profile at hand)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "arguments", _frozen(self.arguments))
        if self.result is not None:
            object.__setattr__(self, "result", _frozen(self.result))

    @property
    def ok(self) -> bool:
        return self.status == "committed" and not (self.result or {}).get("error")

    def went_to(self, builtin: str) -> bool:
        """Whether the call went to the built-in ``builtin`` (``followups.record`` ...)."""
        return (self.tool if self.builtin is None else self.builtin) == builtin

    @property
    def answer(self) -> Mapping[str, Any]:
        """What the service itself answered: a write's result wraps it as ``receipt`` (beside
        the operation's summary and id); a read's result is it."""
        result = self.result or {}
        receipt = result.get("receipt")
        return receipt if isinstance(receipt, Mapping) else result
