"""Follow-ups (docs/followups.md): a dated commitment recorded only from the caller's own words, the
attempts the queue made to place it (one operation id each), and review findings."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import ID, NAME, Base, UtcDateTime, one_of, utcnow

FOLLOWUP_STATUSES = ("scheduled", "awaiting_approval", "placed", "retry", "refused", "missed",
                     "task")
FOLLOWUP_CHANNELS = ("phone", "task")
ATTEMPT_STATUSES = ("pending", "placed", "line_not_ready", "refused", "unknown", "deferred")


class FollowupRow(Base):
    __tablename__ = "followups"
    __table_args__ = (
        Index("ix_followups_status_due_at", "status", "due_at"),
        Index("ix_followups_tenant_id_subject_ref", "tenant_id", "subject_ref"),
        one_of("status", FOLLOWUP_STATUSES),
        one_of("channel", FOLLOWUP_CHANNELS),
    )

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    session_id: Mapped[str | None] = mapped_column(
        String(ID), ForeignKey("sessions.id", ondelete="SET NULL"), index=True
    )
    tenant_id: Mapped[str] = mapped_column(String(NAME))
    subject_ref: Mapped[str] = mapped_column(String(NAME))
    profile_id: Mapped[str] = mapped_column(String(NAME), default="", server_default="")
    profile_version: Mapped[str] = mapped_column(String(ID), default="", server_default="")
    when_text: Mapped[str] = mapped_column(String(256))
    due_at: Mapped[datetime] = mapped_column(UtcDateTime)
    """When the queue next considers it (a retry moves it an hour on)."""
    promised_at: Mapped[datetime] = mapped_column(UtcDateTime)
    """The time it was promised for; lateness (``missed``) counts from here."""
    timezone: Mapped[str] = mapped_column(String(64))
    channel: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(24))
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    outcome_reason: Mapped[str] = mapped_column(String(ID), default="", server_default="")
    attempt_operation_id: Mapped[str | None] = mapped_column(String(ID), index=True)
    """The operation of the attempt in flight; ``None`` when none is."""
    approved_by: Mapped[str] = mapped_column(String(NAME), default="", server_default="")
    operation_id: Mapped[str | None] = mapped_column(String(ID), unique=True)
    """The operation that recorded it (``followups.record``): a repeat returns this row."""
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    """Set by every change, from the caller's clock (a virtual one in tests)."""


class FollowupAttemptRow(Base):
    """One try at placing a phone follow-up. ``operation_id`` is written before the operation
    is submitted, so a restart submits that same id again instead of a new call."""

    __tablename__ = "followup_attempts"
    __table_args__ = (
        UniqueConstraint("followup_id", "attempt"),
        Index("ix_followup_attempts_tenant_id_created_at", "tenant_id", "created_at"),
        Index("ix_followup_attempts_tenant_id_subject_ref", "tenant_id", "subject_ref"),
        one_of("status", ATTEMPT_STATUSES),
    )

    operation_id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    followup_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("followups.id", ondelete="CASCADE")
    )
    attempt: Mapped[int] = mapped_column(Integer)
    tenant_id: Mapped[str] = mapped_column(String(NAME))
    subject_ref: Mapped[str] = mapped_column(String(NAME))
    status: Mapped[str] = mapped_column(String(16))
    reason_code: Mapped[str] = mapped_column(String(ID), default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    """Set by every change, from the caller's clock (a virtual one in tests)."""


class FindingRow(Base):
    """A review finding (``promised_unbooked``: a promise heard with no record behind it).
    ``id`` is derived from what it is about, so reviewing a session twice stores it once."""

    __tablename__ = "findings"
    __table_args__ = (Index("ix_findings_kind_at", "kind", "at"),)

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    kind: Mapped[str] = mapped_column(String(NAME))
    session_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("sessions.id", ondelete="CASCADE"), index=True
    )
    tenant_id: Mapped[str] = mapped_column(String(NAME))
    generation_id: Mapped[str] = mapped_column(String(ID), default="", server_default="")
    text: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
