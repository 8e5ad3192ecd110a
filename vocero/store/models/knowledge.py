"""Approved claims the assistant may state, each backed by an approved evidence source."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import ID, NAME, Base, UtcDateTime


class EvidenceSourceRow(Base):
    __tablename__ = "evidence_sources"

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(NAME), index=True)
    title: Mapped[str] = mapped_column(String(256))
    uri: Mapped[str] = mapped_column(String(1024))
    version: Mapped[str] = mapped_column(String(ID))
    sha256: Mapped[str] = mapped_column(String(ID))
    approved_by: Mapped[str] = mapped_column(String(NAME))
    approved_at: Mapped[datetime] = mapped_column(UtcDateTime)


class ApprovedClaimRow(Base):
    __tablename__ = "approved_claims"
    __table_args__ = (UniqueConstraint("tenant_id", "claim_key", "version"),)

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(NAME))
    claim_key: Mapped[str] = mapped_column(String(NAME))
    version: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    conditions: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    source_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("evidence_sources.id"), index=True
    )
    status: Mapped[str] = mapped_column(String(16))
    valid_from: Mapped[datetime] = mapped_column(UtcDateTime)
    valid_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
