"""Spoken units (docs/grounding.md): every unit a session planned, with its evidence and
disposition, and the audio of admitted units as synthesized, for the listening review.

A unit is written when it is planned (``planned``) and again when its fate is decided
(``admitted``, ``stale``, ``canceled``, ``expired``, ``refused``). How much of it the caller heard
is not stored per unit: it follows from the generation's ``played_ms`` and the unit's place in
the generation's audio (``audio_offset_ms`` + ``audio_ms``).

Audio is kept per admitted unit as PCM16 mono at ``sample_rate``, bounded per unit and per
session (see :mod:`vocero.store.units`): a review needs what the voice said, not an archive.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import ID, NAME, Base, UtcDateTime, one_of

UnitDisposition = Literal["planned", "admitted", "stale", "canceled", "expired", "refused"]
UNIT_DISPOSITIONS: tuple[str, ...] = (
    "planned", "admitted", "stale", "canceled", "expired", "refused",
)  # fmt: skip
UNIT_KINDS: tuple[str, ...] = (
    "conversational", "claim", "tool_fact", "readback", "outcome", "promise", "fallback",
)  # fmt: skip


class SpokenUnitRow(Base):
    __tablename__ = "spoken_units"
    __table_args__ = (
        UniqueConstraint("session_id", "seq"),
        Index("ix_spoken_units_generation_id", "generation_id"),
        one_of("disposition", UNIT_DISPOSITIONS),
        one_of("kind", UNIT_KINDS),
    )

    unit_id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("sessions.id", ondelete="CASCADE")
    )
    seq: Mapped[int] = mapped_column(Integer)
    """Order of planning within the session."""
    generation_id: Mapped[str] = mapped_column(String(ID))
    turn_id: Mapped[str] = mapped_column(String(ID))
    question_revision: Mapped[int] = mapped_column(Integer)
    index: Mapped[int] = mapped_column(Integer)
    """Order within the generation."""
    kind: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    claim_keys: Mapped[list[str]] = mapped_column(JSON, default=list)
    evidence: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    """``[{"source_id", "version"} | {"tool_call_id"}]``."""
    disposition: Mapped[str] = mapped_column(String(16))
    reason_code: Mapped[str] = mapped_column(String(NAME), default="")
    planned_at: Mapped[datetime] = mapped_column(UtcDateTime)
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    admitted_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    audio_offset_ms: Mapped[float] = mapped_column(Float, default=0.0)
    audio_ms: Mapped[float] = mapped_column(Float, default=0.0)
    synthesis: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    """How it was synthesized: runner, voice profile and version, sample rate, spoken form."""


class UnitAudioRow(Base):
    __tablename__ = "unit_audio"

    unit_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("spoken_units.unit_id", ondelete="CASCADE"), primary_key=True
    )
    session_id: Mapped[str] = mapped_column(String(ID), index=True)
    sample_rate: Mapped[int] = mapped_column(Integer)
    pcm: Mapped[bytes] = mapped_column(LargeBinary)
    truncated: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
