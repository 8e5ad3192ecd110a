"""Follow-ups (seed 003): a dated commitment recorded only from the caller's own words."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import ID, NAME, Base, UtcDateTime, utcnow


class FollowupRow(Base):
    __tablename__ = "followups"
    __table_args__ = (
        Index("ix_followups_status_due_at", "status", "due_at"),
        Index("ix_followups_tenant_id_subject_ref", "tenant_id", "subject_ref"),
    )

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    session_id: Mapped[str | None] = mapped_column(
        String(ID), ForeignKey("sessions.id", ondelete="SET NULL"), index=True
    )
    tenant_id: Mapped[str] = mapped_column(String(NAME))
    subject_ref: Mapped[str] = mapped_column(String(NAME))
    when_text: Mapped[str] = mapped_column(String(256))
    due_at: Mapped[datetime] = mapped_column(UtcDateTime)
    timezone: Mapped[str] = mapped_column(String(64))
    channel: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(24))
    operation_id: Mapped[str | None] = mapped_column(String(ID), ForeignKey("operations.id"))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)
