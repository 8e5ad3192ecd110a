"""Approved claims the assistant may state, each backed by versioned evidence sources.

A profile's catalog (docs/grounding.md) is loaded into these tables with versions: a claim whose
wording, conditions or evidence changed gets a new ``version`` and the old one is ``retired``, so a
unit spoken last week still names the wording and evidence it used. An evidence source is one
document version of a tenant (``source_key`` + ``version``); the passage a claim rests on is kept
on the link between the two, because claims cite different passages of one document. Source ids
and passages are never spoken and never sent to the browser.

Retrieval runs on the same database: SQLite through an FTS5 index (:data:`CLAIMS_FTS`, created
by the migration, kept in step by the repository), PostgreSQL through its own full-text search
on ``search_text``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import ID, NAME, Base, UtcDateTime, one_of

ClaimStatus = Literal["active", "retired"]

CLAIMS_FTS = "approved_claims_fts"
"""The SQLite FTS5 index of active claims (a virtual table, so not part of ``metadata``)."""


def is_search_index(name: str | None) -> bool:
    """True for the FTS5 index and its shadow tables, which schema comparison must skip."""
    return bool(name) and str(name).startswith(CLAIMS_FTS)


def schema_compared(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic ``include_name`` hook: compare everything but the full-text index tables."""
    return not (type_ == "table" and is_search_index(name))


class EvidenceSourceRow(Base):
    __tablename__ = "evidence_sources"
    __table_args__ = (UniqueConstraint("tenant_id", "source_key", "version"),)

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(NAME), index=True)
    source_key: Mapped[str] = mapped_column(String(NAME))
    """The catalog's source ``id``."""
    title: Mapped[str] = mapped_column(String(256))
    uri: Mapped[str] = mapped_column(String(1024))
    version: Mapped[str] = mapped_column(String(ID))
    sha256: Mapped[str] = mapped_column(String(ID))
    approved_by: Mapped[str] = mapped_column(String(NAME))
    approved_at: Mapped[datetime] = mapped_column(UtcDateTime)


class ApprovedClaimRow(Base):
    __tablename__ = "approved_claims"
    __table_args__ = (
        UniqueConstraint(
            "tenant_id", "profile_id", "profile_version", "claim_key", "version",
            name="uq_approved_claims_scope_key_version",
        ),
        Index("ix_approved_claims_scope", "tenant_id", "profile_id", "profile_version", "status"),
        one_of("status", ("active", "retired")),
    )

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(NAME))
    profile_id: Mapped[str] = mapped_column(String(NAME))
    profile_version: Mapped[str] = mapped_column(String(ID))
    claim_key: Mapped[str] = mapped_column(String(NAME))
    version: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    conditions: Mapped[list[str]] = mapped_column(JSON, default=list)
    topics: Mapped[list[str]] = mapped_column(JSON, default=list)
    locale: Mapped[str] = mapped_column(String(35))
    search_text: Mapped[str] = mapped_column(Text)
    """What retrieval matches: the text, the topics and the conditions."""
    content_hash: Mapped[str] = mapped_column(String(ID))
    """Digest of wording, conditions, topics, locale, validity and evidence: a change of any
    of them is a new version."""
    status: Mapped[ClaimStatus] = mapped_column(String(16))
    valid_from: Mapped[datetime] = mapped_column(UtcDateTime)
    valid_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
    retired_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class ClaimEvidenceRow(Base):
    """Which passage of which source version supports a claim version."""

    __tablename__ = "approved_claim_sources"

    claim_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("approved_claims.id", ondelete="CASCADE"), primary_key=True
    )
    evidence_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("evidence_sources.id"), primary_key=True, index=True
    )
    position: Mapped[int] = mapped_column(Integer)
    passage: Mapped[str] = mapped_column(Text)
    passage_sha256: Mapped[str] = mapped_column(String(ID))
