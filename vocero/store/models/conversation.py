"""Sessions, the caller's turns and the assistant's generations (what was said and heard)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from vocero.contracts.events import CompletionStatus
from vocero.store.models.base import ID, NAME, Base, UtcDateTime, one_of, utcnow

TurnSource = Literal["audio", "text"]
GenerationStatus = Literal["in_progress"] | CompletionStatus
"""A generation is ``in_progress`` until ``response.completed.v1`` names its final status."""

TURN_SOURCES: tuple[str, ...] = get_args(TurnSource)


class SessionRow(Base):
    """A conversational session. While live it is held by one Vocero process (``owner_id``, a
    row of ``nodes``) under a lease the process renews; a session whose lease ran out is taken
    over (closed as ended by a crash, resumable) by any other process."""

    __tablename__ = "sessions"
    __table_args__ = (
        Index("ix_sessions_tenant_id_created_at", "tenant_id", "created_at"),
        Index("ix_sessions_lease_expires_at", "lease_expires_at"),
    )

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(NAME))
    subject_ref: Mapped[str] = mapped_column(String(NAME))
    profile_id: Mapped[str] = mapped_column(String(NAME))
    profile_version: Mapped[str] = mapped_column(String(ID))
    state: Mapped[str] = mapped_column(String(32))
    effective: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    resume_token_hash: Mapped[str | None] = mapped_column(String(ID), index=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    closed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    owner_id: Mapped[str | None] = mapped_column(String(ID))
    """The process holding the session (``None``: none ever did, e.g. a tool's own row)."""
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    """Until when the owner's hold is good; ``None`` once closed. An open session whose lease
    is past is no longer held by anyone."""
    channel: Mapped[str] = mapped_column(String(16), default="web", server_default="web")
    """How the caller reached Vocero: ``web`` (``/v1/realtime``) or a carrier (``twilio``)."""
    call_sid: Mapped[str] = mapped_column(String(64), default="", server_default="")
    """The carrier's id of the phone call (empty for ``web``)."""
    followup_id: Mapped[str] = mapped_column(String(64), default="", server_default="")
    """The follow-up a call-back session answers (empty for every other session)."""


class TurnRow(Base):
    __tablename__ = "turns"
    __table_args__ = (UniqueConstraint("session_id", "seq"), one_of("source", TURN_SOURCES))

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("sessions.id", ondelete="CASCADE")
    )
    seq: Mapped[int] = mapped_column(Integer)
    source: Mapped[TurnSource] = mapped_column(String(8))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class GenerationRow(Base):
    __tablename__ = "generations"

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("sessions.id", ondelete="CASCADE"), index=True
    )
    turn_id: Mapped[str | None] = mapped_column(String(ID), index=True)
    status: Mapped[GenerationStatus] = mapped_column(String(16))
    generated_text: Mapped[str] = mapped_column(Text, default="")
    heard_text: Mapped[str] = mapped_column(Text, default="")
    played_ms: Mapped[int] = mapped_column(Integer, default=0)
    sent_ms: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
