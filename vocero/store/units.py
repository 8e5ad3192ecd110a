"""Spoken units in the store (docs/grounding.md): what a session planned, what became of each unit,
and the audio of admitted units as synthesized, for ``GET /v1/units`` and ``vocero review``.

Writes come from the session recorder, off the hot path; :meth:`UnitRepository.record` is an
upsert by ``unit_id`` (the first write fixes the unit's place in the session), so the planned
row and the decided row are the same row. Audio is bounded twice: a unit keeps at most
:data:`MAX_UNIT_AUDIO_BYTES` (the rest is cut and the take marked ``truncated``) and a session at
most :data:`MAX_SESSION_AUDIO_BYTES` (later takes are not kept; their units still are). Old audio
can be dropped with :meth:`UnitRepository.prune_audio` while the unit rows stay.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.contracts.clock import SystemClock
from vocero.contracts.ports import Clock
from vocero.store.engine import Store
from vocero.store.models import GenerationRow, SessionRow, SpokenUnitRow, UnitAudioRow

MAX_UNIT_AUDIO_BYTES = 4 * 1024 * 1024
"""About 87 s of 24 kHz PCM16: far longer than any unit a word budget allows."""
MAX_SESSION_AUDIO_BYTES = 64 * 1024 * 1024
DECIDED = frozenset({"admitted", "stale", "canceled", "expired", "refused"})


class UnitEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One unit as the recorder writes it. ``disposition`` is ``planned`` until decided."""

    unit_id: str
    session_id: str
    generation_id: str
    turn_id: str
    question_revision: int
    index: int
    kind: str
    text: str
    claim_keys: list[str] = []
    evidence: list[dict[str, Any]] = []
    disposition: str = "planned"
    reason_code: str = ""
    planned_at: datetime
    decided_at: datetime | None = None
    admitted_at: datetime | None = None
    audio_offset_ms: float = 0.0
    audio_ms: float = 0.0
    synthesis: dict[str, Any] = {}


class UnitView(msgspec.Struct, frozen=True, kw_only=True):
    """A unit as the operator API and the review read it."""

    unit_id: str
    session_id: str
    seq: int
    generation_id: str
    turn_id: str
    question_revision: int
    index: int
    kind: str
    text: str
    claim_keys: list[str]
    evidence: list[dict[str, Any]]
    disposition: str
    reason_code: str
    planned_at: datetime
    decided_at: datetime | None
    admitted_at: datetime | None
    audio_offset_ms: float
    audio_ms: float
    played_ms: int
    """How much of this unit's audio the caller played (from the generation's playout)."""
    synthesis: dict[str, Any]
    has_audio: bool

    def public(self) -> dict[str, Any]:
        """The ``GET /v1/units`` item (docs/grounding.md), nothing more."""
        return {
            "unit_id": self.unit_id, "generation_id": self.generation_id,
            "turn_id": self.turn_id, "question_revision": self.question_revision,
            "kind": self.kind, "text": self.text, "claim_keys": list(self.claim_keys),
            "evidence": [dict(e) for e in self.evidence], "disposition": self.disposition,
            "reason_code": self.reason_code, "planned_at": self.planned_at,
            "admitted_at": self.admitted_at, "played_ms": self.played_ms,
        }


class UnitAudio(msgspec.Struct, frozen=True, kw_only=True):
    unit_id: str
    sample_rate: int
    pcm: bytes
    truncated: bool


class UnitAudioBuffer:
    """Collects one unit's PCM chunks in memory, up to ``limit`` bytes (the rest is dropped and
    the take marked truncated). No I/O: the recorder saves it once the unit is done."""

    def __init__(self, unit_id: str, *, sample_rate: int, limit: int = MAX_UNIT_AUDIO_BYTES):
        self.unit_id = unit_id
        self.sample_rate = sample_rate
        self._limit = limit
        self._chunks: list[bytes] = []
        self._size = 0
        self.truncated = False

    def write(self, chunk: bytes) -> None:
        room = self._limit - self._size
        if len(chunk) > room:
            chunk = chunk[: room - room % 2]  # whole samples only
            self.truncated = True
        if chunk:
            self._chunks.append(chunk)
            self._size += len(chunk)

    @property
    def size(self) -> int:
        return self._size

    def pcm(self) -> bytes:
        return b"".join(self._chunks)


class UnitRepository:
    def __init__(self, store: Store, *, clock: Clock | None = None) -> None:
        self._store = store
        self._clock = clock or SystemClock()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), UTC)

    async def record(self, entry: UnitEntry) -> None:
        """Insert the unit, or update it. The first decision is final: a decided unit keeps its
        disposition, reason and times whatever arrives later (an admitted unit later cut off is
        still admitted; its ``played_ms`` shows the cut); later writes only add its audio length
        and synthesis settings."""
        async with self._store.write() as session:
            row = await session.get(SpokenUnitRow, entry.unit_id)
            if row is None:
                session.add(await _new_row(session, entry, self._store.dialect))
            elif row.disposition in DECIDED:
                _add_audio(row, entry)
            else:
                _apply(row, entry)

    async def save_audio(
        self, session_id: str, buffer: UnitAudioBuffer, *,
        session_limit: int = MAX_SESSION_AUDIO_BYTES,
    ) -> bool:
        """Keep a unit's audio; False when the session's audio budget is spent or the unit is
        unknown."""
        pcm = buffer.pcm()
        async with self._store.write() as session:
            if await session.get(SpokenUnitRow, buffer.unit_id) is None:
                return False
            used = await session.scalar(
                select(func.coalesce(func.sum(func.length(UnitAudioRow.pcm)), 0)).where(
                    UnitAudioRow.session_id == session_id,
                    UnitAudioRow.unit_id != buffer.unit_id,
                )
            )
            if int(used or 0) + len(pcm) > session_limit:
                return False
            await session.merge(UnitAudioRow(
                unit_id=buffer.unit_id, session_id=session_id, sample_rate=buffer.sample_rate,
                pcm=pcm, truncated=buffer.truncated, created_at=self._now(),
            ))
        return True

    async def units(self, session_id: str) -> list[UnitView]:
        """Every unit of the session in planning order, with what the caller played of it."""
        query = (
            select(SpokenUnitRow, GenerationRow.played_ms, UnitAudioRow.unit_id)
            .outerjoin(GenerationRow, GenerationRow.id == SpokenUnitRow.generation_id)
            .outerjoin(UnitAudioRow, UnitAudioRow.unit_id == SpokenUnitRow.unit_id)
            .where(SpokenUnitRow.session_id == session_id)
            .order_by(SpokenUnitRow.seq)
        )
        async with self._store.read() as session:
            rows = (await session.execute(query)).all()
        return [_view(found[0], found[1], found[2] is not None) for found in rows]

    async def audio(self, unit_id: str) -> UnitAudio | None:
        async with self._store.read() as session:
            row = await session.get(UnitAudioRow, unit_id)
            if row is None:
                return None
            return UnitAudio(
                unit_id=row.unit_id, sample_rate=row.sample_rate, pcm=bytes(row.pcm),
                truncated=row.truncated,
            )

    async def prune_audio(self, before: datetime) -> int:
        """Drop audio kept before ``before``; the units themselves stay. Returns how many."""
        async with self._store.write() as session:
            result = await session.execute(
                delete(UnitAudioRow).where(UnitAudioRow.created_at < before)
            )
            return int(getattr(result, "rowcount", 0) or 0)


async def _new_row(session: AsyncSession, entry: UnitEntry, dialect: str) -> SpokenUnitRow:
    if dialect == "postgresql":  # SQLite has one writer at a time: its transaction is the lock
        lock = select(SessionRow.id).where(SessionRow.id == entry.session_id).with_for_update()
        await session.execute(lock)
    last = await session.scalar(
        select(func.max(SpokenUnitRow.seq)).where(SpokenUnitRow.session_id == entry.session_id)
    )
    row = SpokenUnitRow(
        unit_id=entry.unit_id, session_id=entry.session_id, seq=int(last or 0) + 1,
        generation_id=entry.generation_id, turn_id=entry.turn_id,
        question_revision=entry.question_revision, index=entry.index, kind=entry.kind,
        text=entry.text, claim_keys=list(entry.claim_keys),
        evidence=[dict(e) for e in entry.evidence], planned_at=entry.planned_at,
        disposition="planned", reason_code="", decided_at=None, admitted_at=None,
        audio_offset_ms=0.0, audio_ms=0.0, synthesis={},
    )
    _apply(row, entry)
    return row


def _apply(row: SpokenUnitRow, entry: UnitEntry) -> None:
    row.disposition = entry.disposition
    row.reason_code = entry.reason_code
    row.decided_at = entry.decided_at
    row.admitted_at = entry.admitted_at
    row.audio_offset_ms = entry.audio_offset_ms
    _add_audio(row, entry)


def _add_audio(row: SpokenUnitRow, entry: UnitEntry) -> None:
    row.audio_ms = max(entry.audio_ms, row.audio_ms or 0.0)
    if entry.synthesis:
        row.synthesis = dict(entry.synthesis)


def _view(row: SpokenUnitRow, generation_played: int | None, has_audio: bool) -> UnitView:
    played = 0.0
    if row.disposition == "admitted" and generation_played is not None:
        played = min(max(generation_played - row.audio_offset_ms, 0.0), row.audio_ms)
    return UnitView(
        unit_id=row.unit_id, session_id=row.session_id, seq=row.seq,
        generation_id=row.generation_id, turn_id=row.turn_id,
        question_revision=row.question_revision, index=row.index, kind=row.kind, text=row.text,
        claim_keys=list(row.claim_keys), evidence=[dict(e) for e in row.evidence],
        disposition=row.disposition, reason_code=row.reason_code, planned_at=row.planned_at,
        decided_at=row.decided_at, admitted_at=row.admitted_at,
        audio_offset_ms=row.audio_offset_ms, audio_ms=row.audio_ms, played_ms=round(played),
        synthesis=dict(row.synthesis), has_audio=has_audio,
    )


__all__ = [
    "MAX_SESSION_AUDIO_BYTES",
    "MAX_UNIT_AUDIO_BYTES",
    "UnitAudio",
    "UnitAudioBuffer",
    "UnitEntry",
    "UnitRepository",
    "UnitView",
]
