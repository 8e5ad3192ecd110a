"""The follow-up queue (SPEC §9): follow-ups know their profile, the time they were promised for,
their attempts and outcome; each attempt has its own operation id; review findings.

The recording operation id stays on the follow-up (unique: a repeat returns the same record) but
no longer references ``operations``: the follow-up plane keeps its own state. Statuses and
channels are the SPEC's: the old ``needs_review`` follow-ups become ``scheduled`` and non-phone
channels ``task``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STATUSES = ("scheduled", "awaiting_approval", "placed", "retry", "refused", "missed", "task")
CHANNELS = ("phone", "task")
ATTEMPT_STATUSES = ("pending", "placed", "line_not_ready", "refused", "unknown", "deferred")


def one_of(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    followups = sa.table("followups", sa.column("status"), sa.column("channel"),
                         sa.column("due_at"), sa.column("promised_at"))
    op.execute(followups.update().where(followups.c.status.not_in(STATUSES))
               .values(status="scheduled"))
    op.execute(followups.update().where(followups.c.channel.not_in(CHANNELS))
               .values(channel="task"))
    with op.batch_alter_table("followups") as batch:
        batch.drop_constraint(op.f("fk_followups_operation_id_operations"), type_="foreignkey")
        batch.add_column(sa.Column("profile_id", sa.String(128), nullable=False,
                                   server_default=""))
        batch.add_column(sa.Column("profile_version", sa.String(64), nullable=False,
                                   server_default=""))
        batch.add_column(sa.Column("promised_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("outcome_reason", sa.String(64), nullable=False,
                                   server_default=""))
        batch.add_column(sa.Column("attempt_operation_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("approved_by", sa.String(128), nullable=False,
                                   server_default=""))
        batch.create_unique_constraint(op.f("uq_followups_operation_id"), ["operation_id"])
        batch.create_check_constraint("status", one_of("status", STATUSES))
        batch.create_check_constraint("channel", one_of("channel", CHANNELS))
        batch.create_index(op.f("ix_followups_attempt_operation_id"), ["attempt_operation_id"])
    op.execute(followups.update().values(promised_at=followups.c.due_at))
    with op.batch_alter_table("followups") as batch:
        batch.alter_column("promised_at", existing_type=sa.DateTime(timezone=True),
                           nullable=False)
    create_attempts()
    create_findings()


def downgrade() -> None:
    op.drop_index(op.f("ix_findings_kind_at"), table_name="findings")
    op.drop_index(op.f("ix_findings_session_id"), table_name="findings")
    op.drop_table("findings")
    op.drop_index(op.f("ix_followup_attempts_tenant_id_subject_ref"),
                  table_name="followup_attempts")
    op.drop_index(op.f("ix_followup_attempts_tenant_id_created_at"),
                  table_name="followup_attempts")
    op.drop_table("followup_attempts")
    with op.batch_alter_table("followups") as batch:
        batch.drop_index(op.f("ix_followups_attempt_operation_id"))
        batch.drop_constraint(op.f("ck_followups_channel"), type_="check")
        batch.drop_constraint(op.f("ck_followups_status"), type_="check")
        batch.drop_constraint(op.f("uq_followups_operation_id"), type_="unique")
        for column in ("approved_by", "attempt_operation_id", "outcome_reason", "attempts",
                       "promised_at", "profile_version", "profile_id"):
            batch.drop_column(column)
        batch.create_foreign_key(op.f("fk_followups_operation_id_operations"), "operations",
                                 ["operation_id"], ["id"])


def id_column(name: str = "id", *, nullable: bool = False) -> sa.Column[str]:
    return sa.Column(name, sa.String(length=64), nullable=nullable)


def timestamp(name: str, *, nullable: bool = False) -> sa.Column[datetime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def create_attempts() -> None:
    op.create_table(
        "followup_attempts",
        id_column("operation_id"),
        id_column("followup_id"),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("subject_ref", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason_code", sa.String(length=64), nullable=False, server_default=""),
        timestamp("created_at"),
        timestamp("updated_at"),
        sa.CheckConstraint(one_of("status", ATTEMPT_STATUSES),
                           name=op.f("ck_followup_attempts_status")),
        sa.ForeignKeyConstraint(["followup_id"], ["followups.id"],
                                name=op.f("fk_followup_attempts_followup_id_followups"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("operation_id", name=op.f("pk_followup_attempts")),
        sa.UniqueConstraint("followup_id", "attempt",
                            name=op.f("uq_followup_attempts_followup_id_attempt")),
    )
    op.create_index(op.f("ix_followup_attempts_tenant_id_created_at"), "followup_attempts",
                    ["tenant_id", "created_at"])
    op.create_index(op.f("ix_followup_attempts_tenant_id_subject_ref"), "followup_attempts",
                    ["tenant_id", "subject_ref"])


def create_findings() -> None:
    op.create_table(
        "findings",
        id_column(),
        sa.Column("kind", sa.String(length=128), nullable=False),
        id_column("session_id"),
        sa.Column("tenant_id", sa.String(length=128), nullable=False),
        sa.Column("generation_id", sa.String(length=64), nullable=False, server_default=""),
        sa.Column("text", sa.Text(), nullable=False),
        timestamp("at"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"],
                                name=op.f("fk_findings_session_id_sessions"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_findings")),
    )
    op.create_index(op.f("ix_findings_kind_at"), "findings", ["kind", "at"])
    op.create_index(op.f("ix_findings_session_id"), "findings", ["session_id"])
