"""The record of every unit a speaker planned: planned first, then exactly one final disposition
(admitted, or why it never played), with the metric of each (``GET /v1/units``,
docs/grounding.md)."""

from __future__ import annotations

from typing import Protocol

from vocero.contracts.ports import Timers
from vocero.orchestrator.context import SessionContext, SessionMetrics
from vocero.orchestrator.recording import SessionRecorder
from vocero.speech import Admission, Decision, PlannedUnit, decided_entry, unit_entry


class LedgerHost(Protocol):
    ctx: SessionContext
    metrics: SessionMetrics
    recorder: SessionRecorder
    admission: Admission
    clock: Timers


class UnitLedger:
    def __init__(self, host: LedgerHost) -> None:
        self._host = host
        self._unplayed: dict[str, PlannedUnit] = {}
        """Planned, speakable units without a final disposition yet."""

    def planned(self, unit: PlannedUnit) -> bool:
        """Record a planned unit; whether it may be spoken (a refused one never is)."""
        host = self._host
        host.recorder.unit(unit_entry(unit, session_id=host.ctx.session_id))
        if not unit.speakable:
            host.metrics.count("units", disposition="refused", reason_code=unit.refusal)
            return False
        self._unplayed[unit.unit_id] = unit
        return True

    def undecided(self, unit: PlannedUnit) -> bool:
        return unit.unit_id in self._unplayed

    def decided(self, unit: PlannedUnit, decision: Decision, **extra: object) -> None:
        """A unit's final disposition: recorded once (later calls for it are no-ops)."""
        if self._unplayed.pop(unit.unit_id, None) is None:
            return
        host = self._host
        host.recorder.unit(
            decided_entry(
                unit, decision, session_id=host.ctx.session_id, at=host.clock.now(), **extra
            )
        )
        disposition = "admitted" if decision.ready else decision.disposition
        host.metrics.count("units", disposition=disposition, reason_code=decision.reason_code)

    def played(self, unit: PlannedUnit, *, audio_offset_ms: float, audio_ms: float) -> None:
        """How much of an admitted unit's audio was sent (its record is completed)."""
        host = self._host
        host.recorder.unit(
            decided_entry(
                unit,
                Decision("ready"),
                session_id=host.ctx.session_id,
                at=host.clock.now(),
                audio_offset_ms=audio_offset_ms,
                audio_ms=audio_ms,
            )
        )

    def synthesis(self, runner: str, rate: int) -> dict[str, object]:
        """What synthesized a unit, recorded with its admission."""
        voice = self._host.ctx.voice
        return {
            "runner": runner,
            "sample_rate": rate,
            "voice_profile_id": voice.voice_profile_id,
            "voice_version": voice.voice_version,
        }

    def settle(self, now: float) -> None:
        """The generation ended with units that never played (it was stopped): record why."""
        for unit in list(self._unplayed.values()):
            decision = self._host.admission.check(unit, now)
            if decision.ready:  # the generation finished without getting to them
                decision = Decision("canceled", "generation_ended")
            self.decided(unit, decision)
