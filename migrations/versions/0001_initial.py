"""Initial schema: sessions and turns, governed actions, the append-only audit log, follow-ups,
the voice vault, approved claims and pinned tool definitions.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIGINT_KEY = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
"""A 64-bit surrogate key; SQLite needs ``INTEGER`` exactly for a rowid alias."""

APPEND_ONLY_MESSAGE = "audit_events is append-only"
SQLITE_APPEND_ONLY = [
    f"""CREATE TRIGGER audit_events_no_{verb.lower()} BEFORE {verb} ON audit_events
    BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END"""
    for verb in ("UPDATE", "DELETE")
]
POSTGRESQL_APPEND_ONLY = [
    f"""CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION '{APPEND_ONLY_MESSAGE}' USING ERRCODE = 'restrict_violation'; END
    $$""",
    """CREATE TRIGGER audit_events_no_change BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()""",
    """CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()""",
]
DROP_APPEND_ONLY = {
    "sqlite": [
        "DROP TRIGGER IF EXISTS audit_events_no_update",
        "DROP TRIGGER IF EXISTS audit_events_no_delete",
    ],
    "postgresql": [
        "DROP TRIGGER IF EXISTS audit_events_no_truncate ON audit_events",
        "DROP TRIGGER IF EXISTS audit_events_no_change ON audit_events",
        "DROP FUNCTION IF EXISTS audit_events_append_only()",
    ],
}


def upgrade() -> None:
    create_audit_tables()
    create_conversation_tables()
    create_action_tables()
    create_followup_tables()
    create_voice_tables()
    create_knowledge_tables()
    install_append_only_triggers()


def downgrade() -> None:
    for statement in DROP_APPEND_ONLY.get(op.get_context().dialect.name, []):
        op.execute(statement)
    for table in (
        "tool_pins",
        "approved_claims",
        "evidence_sources",
        "voice_approvals",
        "voice_versions",
        "voice_profiles",
        "followups",
        "outbox",
        "operations",
        "confirmations",
        "proposal_revisions",
        "evidence_steps",
        "proposals",
        "generations",
        "turns",
        "sessions",
        "audit_chain_heads",
        "audit_events",
    ):
        op.drop_table(table)


def id_column(name: str = "id", *, nullable: bool = False) -> sa.Column[str]:
    return sa.Column(name, sa.String(length=64), nullable=nullable)


def timestamp(name: str, *, nullable: bool = False) -> sa.Column[datetime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def create_audit_tables() -> None:
    op.create_table(
        "audit_events",
        sa.Column("seq", BIGINT_KEY, autoincrement=True, nullable=False),
        sa.Column("chain", sa.String(length=64), nullable=False),
        id_column("session_id", nullable=True),
        sa.Column("kind", sa.String(length=128), nullable=False),
        sa.Column("actor", sa.String(length=128), nullable=False),
        timestamp("at"),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("prev_hash", sa.String(length=64), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_audit_events")),
        sa.UniqueConstraint("chain", "prev_hash", name=op.f("uq_audit_events_chain_prev_hash")),
    )
    op.create_index(op.f("ix_audit_events_chain_seq"), "audit_events", ["chain", "seq"])
    op.create_index(op.f("ix_audit_events_session_id"), "audit_events", ["session_id"])
    op.create_table(
        "audit_chain_heads",
        sa.Column("chain", sa.String(length=64), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("last_hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("chain", name=op.f("pk_audit_chain_heads")),
    )


def create_conversation_tables() -> None:
    op.create_table(
        "sessions",
        id_column(),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("subject_ref", sa.String(length=128), nullable=False),
        sa.Column("profile_id", sa.String(length=128), nullable=False),
        sa.Column("profile_version", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("effective", sa.JSON(), nullable=False),
        sa.Column("resume_token_hash", sa.String(length=64), nullable=True),
        timestamp("created_at"),
        timestamp("closed_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sessions")),
    )
    op.create_index(op.f("ix_sessions_resume_token_hash"), "sessions", ["resume_token_hash"])
    op.create_index(
        op.f("ix_sessions_tenant_id_created_at"), "sessions", ["tenant_id", "created_at"]
    )
    op.create_table(
        "turns",
        id_column(),
        id_column("session_id"),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        timestamp("created_at"),
        sa.CheckConstraint("source IN ('audio', 'text')", name=op.f("ck_turns_source")),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"],
            name=op.f("fk_turns_session_id_sessions"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_turns")),
        sa.UniqueConstraint("session_id", "seq", name=op.f("uq_turns_session_id_seq")),
    )
    op.create_table(
        "generations",
        id_column(),
        id_column("session_id"),
        id_column("turn_id", nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("generated_text", sa.Text(), nullable=False),
        sa.Column("heard_text", sa.Text(), nullable=False),
        sa.Column("played_ms", sa.Integer(), nullable=False),
        sa.Column("sent_ms", sa.Integer(), nullable=False),
        timestamp("created_at"),
        timestamp("completed_at", nullable=True),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"],
            name=op.f("fk_generations_session_id_sessions"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_generations")),
    )
    op.create_index(op.f("ix_generations_session_id"), "generations", ["session_id"])
    op.create_index(op.f("ix_generations_turn_id"), "generations", ["turn_id"])


def create_action_tables() -> None:
    op.create_table(
        "proposals",
        id_column(),
        id_column("session_id"),
        id_column("turn_id"),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("server", sa.String(length=128), nullable=False),
        sa.Column("resolved_tool", sa.String(length=128), nullable=False),
        sa.Column("action_class", sa.String(length=24), nullable=False),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("current_revision", sa.Integer(), nullable=False),
        timestamp("created_at"),
        sa.CheckConstraint(
            "action_class IN ('read', 'reversible_write', 'irreversible', 'prohibited')",
            name=op.f("ck_proposals_action_class"),
        ),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_proposals_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_proposals")),
    )
    op.create_index(op.f("ix_proposals_session_id"), "proposals", ["session_id"])
    op.create_table(
        "evidence_steps",
        id_column(),
        id_column("session_id"),
        id_column("proposal_id", nullable=True),
        sa.Column("step", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("policy_version", sa.String(length=64), nullable=False),
        id_column("generation_id", nullable=True),
        timestamp("updated_at"),
        sa.CheckConstraint(
            "status IN ('missing', 'in_progress', 'satisfied', 'invalidated', 'unobservable')",
            name=op.f("ck_evidence_steps_status"),
        ),
        sa.ForeignKeyConstraint(
            ["proposal_id"], ["proposals.id"],
            name=op.f("fk_evidence_steps_proposal_id_proposals"), ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"],
            name=op.f("fk_evidence_steps_session_id_sessions"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evidence_steps")),
    )
    op.create_index(op.f("ix_evidence_steps_proposal_id"), "evidence_steps", ["proposal_id"])
    op.create_index(op.f("ix_evidence_steps_session_id"), "evidence_steps", ["session_id"])
    op.create_table(
        "proposal_revisions",
        id_column("proposal_id"),
        sa.Column("revision", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("canonical_arguments", sa.JSON(), nullable=False),
        sa.Column("target_resource", sa.String(length=256), nullable=False),
        sa.Column("object_version", sa.String(length=128), nullable=False),
        sa.Column("workflow_revision", sa.String(length=64), nullable=False),
        sa.Column("arguments_hash", sa.String(length=64), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        timestamp("expires_at", nullable=True),
        timestamp("invalidated_at", nullable=True),
        timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["proposal_id"], ["proposals.id"],
            name=op.f("fk_proposal_revisions_proposal_id_proposals"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("proposal_id", "revision", name=op.f("pk_proposal_revisions")),
    )
    op.create_table(
        "confirmations",
        id_column(),
        id_column("proposal_id"),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("binding_hash", sa.String(length=64), nullable=False),
        id_column("turn_id", nullable=True),
        sa.Column("decision", sa.String(length=16), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        timestamp("created_at"),
        timestamp("expires_at"),
        timestamp("used_at", nullable=True),
        sa.CheckConstraint(
            "decision IN ('confirm', 'reject')", name=op.f("ck_confirmations_decision")
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'used', 'expired', 'invalidated', 'rejected')",
            name=op.f("ck_confirmations_status"),
        ),
        sa.ForeignKeyConstraint(
            ["proposal_id", "revision"],
            ["proposal_revisions.proposal_id", "proposal_revisions.revision"],
            name=op.f("fk_confirmations_proposal_id_proposal_revisions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_confirmations")),
    )
    op.create_index(
        op.f("ix_confirmations_proposal_id_revision"),
        "confirmations",
        ["proposal_id", "revision"],
    )
    op.create_table(
        "operations",
        id_column(),
        id_column("proposal_id", nullable=True),
        sa.Column("revision", sa.Integer(), nullable=True),
        id_column("session_id"),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("server", sa.String(length=128), nullable=False),
        sa.Column("resolved_tool", sa.String(length=128), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("principal", sa.JSON(), nullable=False),
        sa.Column("idempotent", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=24), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("receipt", sa.JSON(), nullable=True),
        sa.Column("reason_code", sa.String(length=64), nullable=False),
        timestamp("created_at"),
        timestamp("updated_at"),
        sa.CheckConstraint(
            "status IN ('authorized', 'dispatch_pending', 'in_flight', 'committed', 'rejected',"
            " 'unknown')",
            name=op.f("ck_operations_status"),
        ),
        sa.ForeignKeyConstraint(
            ["proposal_id", "revision"],
            ["proposal_revisions.proposal_id", "proposal_revisions.revision"],
            name=op.f("fk_operations_proposal_id_proposal_revisions"),
        ),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_operations_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operations")),
        sa.UniqueConstraint(
            "proposal_id", "revision", name=op.f("uq_operations_proposal_id_revision")
        ),
    )
    op.create_index(op.f("ix_operations_session_id"), "operations", ["session_id"])
    op.create_index(
        op.f("ix_operations_status_updated_at"), "operations", ["status", "updated_at"]
    )
    op.create_table(
        "outbox",
        sa.Column("id", BIGINT_KEY, autoincrement=True, nullable=False),
        id_column("operation_id"),
        timestamp("available_at"),
        timestamp("claimed_at", nullable=True),
        sa.Column("claimed_by", sa.String(length=128), nullable=True),
        sa.Column("done", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"],
            name=op.f("fk_outbox_operation_id_operations"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox")),
        sa.UniqueConstraint("operation_id", name=op.f("uq_outbox_operation_id")),
    )
    op.create_index(op.f("ix_outbox_done_available_at"), "outbox", ["done", "available_at"])


def create_followup_tables() -> None:
    op.create_table(
        "followups",
        id_column(),
        id_column("session_id", nullable=True),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("subject_ref", sa.String(length=128), nullable=False),
        sa.Column("when_text", sa.String(length=256), nullable=False),
        timestamp("due_at"),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=24), nullable=False),
        id_column("operation_id", nullable=True),
        timestamp("created_at"),
        timestamp("updated_at"),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"],
            name=op.f("fk_followups_operation_id_operations"),
        ),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"],
            name=op.f("fk_followups_session_id_sessions"), ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_followups")),
    )
    op.create_index(op.f("ix_followups_session_id"), "followups", ["session_id"])
    op.create_index(op.f("ix_followups_status_due_at"), "followups", ["status", "due_at"])
    op.create_index(
        op.f("ix_followups_tenant_id_subject_ref"), "followups", ["tenant_id", "subject_ref"]
    )


def create_voice_tables() -> None:
    op.create_table(
        "voice_profiles",
        id_column("voice_id"),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("owner", sa.String(length=256), nullable=False),
        sa.Column("purpose", sa.Text(), nullable=False),
        sa.Column("languages", sa.JSON(), nullable=False),
        timestamp("usage_until"),
        sa.Column("consent_ref", sa.String(length=256), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        timestamp("created_at"),
        sa.PrimaryKeyConstraint("voice_id", name=op.f("pk_voice_profiles")),
    )
    op.create_index(op.f("ix_voice_profiles_tenant"), "voice_profiles", ["tenant"])
    op.create_table(
        "voice_versions",
        id_column("voice_id"),
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("audio_sha256", sa.String(length=64), nullable=False),
        sa.Column("text_sha256", sa.String(length=64), nullable=False),
        sa.Column("ref_audio", sa.LargeBinary(), nullable=False),
        sa.Column("ref_text", sa.Text(), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        timestamp("created_at"),
        timestamp("effective_at", nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'approved', 'revoked')", name=op.f("ck_voice_versions_status")
        ),
        sa.ForeignKeyConstraint(
            ["voice_id"], ["voice_profiles.voice_id"],
            name=op.f("fk_voice_versions_voice_id_voice_profiles"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("voice_id", "version", name=op.f("pk_voice_versions")),
    )
    op.create_table(
        "voice_approvals",
        id_column(),
        id_column("voice_id"),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("operator", sa.String(length=128), nullable=False),
        sa.Column("role", sa.String(length=64), nullable=False),
        timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["voice_id", "version"],
            ["voice_versions.voice_id", "voice_versions.version"],
            name=op.f("fk_voice_approvals_voice_id_voice_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_voice_approvals")),
        sa.UniqueConstraint(
            "voice_id", "version", "operator",
            name=op.f("uq_voice_approvals_voice_id_version_operator"),
        ),
    )


def create_knowledge_tables() -> None:
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
    op.create_table(
        "tool_pins",
        sa.Column("server", sa.String(length=128), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("definition_hash", sa.String(length=64), nullable=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        timestamp("pinned_at"),
        timestamp("changed_at", nullable=True),
        sa.CheckConstraint(
            "status IN ('approved', 'disabled')", name=op.f("ck_tool_pins_status")
        ),
        sa.PrimaryKeyConstraint("server", "tool", name=op.f("pk_tool_pins")),
    )


def install_append_only_triggers() -> None:
    """Make UPDATE and DELETE (and on PostgreSQL TRUNCATE) of ``audit_events`` fail."""
    dialect = op.get_context().dialect.name
    statements = {"sqlite": SQLITE_APPEND_ONLY, "postgresql": POSTGRESQL_APPEND_ONLY}
    if dialect not in statements:
        raise NotImplementedError(f"no append-only audit triggers for {dialect}")
    for statement in statements[dialect]:
        op.execute(statement)
