"""Versioned profiles and catalogs: ``profile_revisions`` and ``profile_heads``.

Every distinct content of a profile (its file and claim catalog) is kept with its hash, who
loaded it and when; ``profile_heads`` names the revision new sessions get, so an operator can
roll back without a restart (issue 32, docs/runbooks/rollback.md).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "profile_revisions",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("profile_id", sa.String(128), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(128), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("snapshot", sa.JSON(), nullable=False),
        sa.Column("loaded_by", sa.String(128), nullable=False),
        sa.Column("loaded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_profile_revisions")),
        sa.UniqueConstraint(
            "profile_id", "revision", name=op.f("uq_profile_revisions_profile_id_revision")
        ),
    )
    op.create_index("ix_profile_revisions_profile_id", "profile_revisions", ["profile_id"])
    op.create_table(
        "profile_heads",
        sa.Column("profile_id", sa.String(128), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("file_hash", sa.String(64), nullable=False),
        sa.Column("changed_by", sa.String(128), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.String(128), nullable=False),
        sa.PrimaryKeyConstraint("profile_id", name=op.f("pk_profile_heads")),
    )


def downgrade() -> None:
    op.drop_table("profile_heads")
    op.drop_index("ix_profile_revisions_profile_id", table_name="profile_revisions")
    op.drop_table("profile_revisions")
