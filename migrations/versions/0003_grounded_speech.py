"""Grounded speech (SPEC §8): versioned claim catalogs per profile with their evidence passages,
a full-text index of claims (SQLite FTS5; PostgreSQL searches ``search_text`` directly), every
spoken unit with its evidence and disposition, and the audio of admitted units.

The claim tables of 0001 were never written to, so they are rebuilt rather than altered: a claim
belongs to a profile version and cites several sources, each through its own passage.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FTS = "approved_claims_fts"
CREATE_FTS = (
    f"CREATE VIRTUAL TABLE {FTS} USING fts5("
    "claim_id UNINDEXED, scope UNINDEXED, body, tokenize = 'porter unicode61')"
)
UNIT_DISPOSITIONS = "disposition IN ('planned', 'admitted', 'stale', 'canceled', 'expired', 'refused')"
UNIT_KINDS = (
    "kind IN ('conversational', 'claim', 'tool_fact', 'readback', 'outcome', 'promise', "
    "'fallback')"
)


def upgrade() -> None:
    op.drop_table("approved_claims")
    op.drop_index(op.f("ix_evidence_sources_tenant_id"), table_name="evidence_sources")
    op.drop_table("evidence_sources")
    create_evidence_sources()
    create_approved_claims()
    create_claim_sources()
    create_spoken_units()
    create_unit_audio()
    if op.get_context().dialect.name == "sqlite":
        op.execute(CREATE_FTS)


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute(f"DROP TABLE IF EXISTS {FTS}")
    op.drop_table("unit_audio")
    op.drop_table("spoken_units")
    op.drop_table("approved_claim_sources")
    op.drop_table("approved_claims")
    op.drop_table("evidence_sources")
    create_initial_knowledge_tables()


def id_column(name: str = "id", *, nullable: bool = False) -> sa.Column[str]:
    return sa.Column(name, sa.String(length=64), nullable=nullable)


def timestamp(name: str, *, nullable: bool = False) -> sa.Column[datetime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def create_evidence_sources() -> None:
    op.create_table(
        "evidence_sources",
        id_column(),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("source_key", sa.String(length=128), nullable=False),
        sa.Column("title", sa.String(length=256), nullable=False),
        sa.Column("uri", sa.String(length=1024), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("approved_by", sa.String(length=128), nullable=False),
        timestamp("approved_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evidence_sources")),
        sa.UniqueConstraint(
            "tenant_id", "source_key", "version",
            name=op.f("uq_evidence_sources_tenant_id_source_key_version"),
        ),
    )
    op.create_index(op.f("ix_evidence_sources_tenant_id"), "evidence_sources", ["tenant_id"])


def create_approved_claims() -> None:
    op.create_table(
        "approved_claims",
        id_column(),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("profile_id", sa.String(length=128), nullable=False),
        sa.Column("profile_version", sa.String(length=64), nullable=False),
        sa.Column("claim_key", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("conditions", sa.JSON(), nullable=False),
        sa.Column("topics", sa.JSON(), nullable=False),
        sa.Column("locale", sa.String(length=35), nullable=False),
        sa.Column("search_text", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        timestamp("valid_from"),
        timestamp("valid_until", nullable=True),
        timestamp("retired_at", nullable=True),
        sa.CheckConstraint(
            "status IN ('active', 'retired')", name=op.f("ck_approved_claims_status")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approved_claims")),
        sa.UniqueConstraint(
            "tenant_id", "profile_id", "profile_version", "claim_key", "version",
            name="uq_approved_claims_scope_key_version",
        ),
    )
    op.create_index(
        "ix_approved_claims_scope",
        "approved_claims",
        ["tenant_id", "profile_id", "profile_version", "status"],
    )


def create_claim_sources() -> None:
    op.create_table(
        "approved_claim_sources",
        id_column("claim_id"),
        id_column("evidence_id"),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("passage", sa.Text(), nullable=False),
        sa.Column("passage_sha256", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["claim_id"], ["approved_claims.id"],
            name=op.f("fk_approved_claim_sources_claim_id_approved_claims"), ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["evidence_id"], ["evidence_sources.id"],
            name=op.f("fk_approved_claim_sources_evidence_id_evidence_sources"),
        ),
        sa.PrimaryKeyConstraint("claim_id", "evidence_id", name=op.f("pk_approved_claim_sources")),
    )
    op.create_index(
        op.f("ix_approved_claim_sources_evidence_id"), "approved_claim_sources", ["evidence_id"]
    )


def create_spoken_units() -> None:
    op.create_table(
        "spoken_units",
        id_column("unit_id"),
        id_column("session_id"),
        sa.Column("seq", sa.Integer(), nullable=False),
        id_column("generation_id"),
        id_column("turn_id"),
        sa.Column("question_revision", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("claim_keys", sa.JSON(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("disposition", sa.String(length=16), nullable=False),
        sa.Column("reason_code", sa.String(length=128), nullable=False),
        timestamp("planned_at"),
        timestamp("decided_at", nullable=True),
        timestamp("admitted_at", nullable=True),
        sa.Column("audio_offset_ms", sa.Float(), nullable=False),
        sa.Column("audio_ms", sa.Float(), nullable=False),
        sa.Column("synthesis", sa.JSON(), nullable=False),
        sa.CheckConstraint(UNIT_DISPOSITIONS, name=op.f("ck_spoken_units_disposition")),
        sa.CheckConstraint(UNIT_KINDS, name=op.f("ck_spoken_units_kind")),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"],
            name=op.f("fk_spoken_units_session_id_sessions"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("unit_id", name=op.f("pk_spoken_units")),
        sa.UniqueConstraint("session_id", "seq", name=op.f("uq_spoken_units_session_id_seq")),
    )
    op.create_index("ix_spoken_units_generation_id", "spoken_units", ["generation_id"])


def create_unit_audio() -> None:
    op.create_table(
        "unit_audio",
        id_column("unit_id"),
        id_column("session_id"),
        sa.Column("sample_rate", sa.Integer(), nullable=False),
        sa.Column("pcm", sa.LargeBinary(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["unit_id"], ["spoken_units.unit_id"],
            name=op.f("fk_unit_audio_unit_id_spoken_units"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("unit_id", name=op.f("pk_unit_audio")),
    )
    op.create_index(op.f("ix_unit_audio_session_id"), "unit_audio", ["session_id"])


def create_initial_knowledge_tables() -> None:
    """The claim tables exactly as 0001 created them."""
    op.create_table(
        "evidence_sources",
        id_column(),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("title", sa.String(length=256), nullable=False),
        sa.Column("uri", sa.String(length=1024), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("approved_by", sa.String(length=128), nullable=False),
        timestamp("approved_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evidence_sources")),
    )
    op.create_index(op.f("ix_evidence_sources_tenant_id"), "evidence_sources", ["tenant_id"])
    op.create_table(
        "approved_claims",
        id_column(),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("claim_key", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("conditions", sa.JSON(), nullable=False),
        id_column("source_id"),
        sa.Column("status", sa.String(length=16), nullable=False),
        timestamp("valid_from"),
        timestamp("valid_until", nullable=True),
        sa.ForeignKeyConstraint(
            ["source_id"], ["evidence_sources.id"],
            name=op.f("fk_approved_claims_source_id_evidence_sources"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approved_claims")),
        sa.UniqueConstraint(
            "tenant_id", "claim_key", "version",
            name=op.f("uq_approved_claims_tenant_id_claim_key_version"),
        ),
    )
    op.create_index(op.f("ix_approved_claims_source_id"), "approved_claims", ["source_id"])
