"""Spoken units as the store keeps them: the bridge from a planned unit and its disposition to
a :class:`~vocero.store.units.UnitEntry` the recorder writes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vocero.speech.admission import Decision
from vocero.speech.model import PlannedUnit
from vocero.store.units import UnitEntry


def unit_entry(
    unit: PlannedUnit,
    *,
    session_id: str,
    disposition: str = "",
    reason_code: str = "",
    at: float | None = None,
    audio_offset_ms: float = 0.0,
    audio_ms: float = 0.0,
    synthesis: dict[str, Any] | None = None,
) -> UnitEntry:
    """The row of ``unit``. Without a disposition: ``refused`` for a refused unit (with its
    reason), else ``planned``. ``at`` (wall-clock seconds) is when it was decided; an
    ``admitted`` unit is admitted then."""
    if not disposition:
        disposition = "refused" if unit.refusal else "planned"
        reason_code = reason_code or unit.refusal
    decided = _utc(at) if at is not None and disposition != "planned" else None
    if unit.refusal and decided is None:
        decided = _utc(unit.planned_at)
    return UnitEntry(
        unit_id=unit.unit_id, session_id=session_id, generation_id=unit.generation_id,
        turn_id=unit.turn_id, question_revision=unit.question_revision, index=unit.index,
        kind=unit.kind, text=unit.text, claim_keys=list(unit.claim_keys),
        evidence=unit.public_evidence(), disposition=disposition, reason_code=reason_code,
        planned_at=_utc(unit.planned_at), decided_at=decided,
        admitted_at=decided if disposition == "admitted" else None,
        audio_offset_ms=audio_offset_ms, audio_ms=audio_ms, synthesis=dict(synthesis or {}),
    )


def decided_entry(
    unit: PlannedUnit, decision: Decision, *, session_id: str, at: float, **extra: Any
) -> UnitEntry:
    """The row of a unit admission decided: ``admitted`` for ``ready``, else the decision."""
    disposition = "admitted" if decision.ready else decision.disposition
    return unit_entry(
        unit, session_id=session_id, disposition=disposition,
        reason_code=decision.reason_code, at=at, **extra,
    )


def _utc(epoch_s: float) -> datetime:
    return datetime.fromtimestamp(epoch_s, UTC)
