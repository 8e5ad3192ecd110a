"""Operators' consents the MCP gateway waits for (the OAuth authorization-code grant).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STATUSES = ("pending", "answered", "granted", "refused", "expired", "superseded")


def upgrade() -> None:
    op.create_table(
        "mcp_oauth_consents",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("server", sa.String(128), nullable=False),
        sa.Column("node_id", sa.String(128), server_default="", nullable=False),
        sa.Column("state_sha256", sa.String(64), nullable=False),
        sa.Column("authorization_url", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("answer_sealed", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN (" + ", ".join(f"'{s}'" for s in STATUSES) + ")",
            name=op.f("ck_mcp_oauth_consents_status"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mcp_oauth_consents")),
    )
    op.create_index(
        "ix_mcp_oauth_consents_state_sha256", "mcp_oauth_consents", ["state_sha256"], unique=True
    )
    op.create_index("ix_mcp_oauth_consents_status", "mcp_oauth_consents", ["status"])


def downgrade() -> None:
    op.drop_index("ix_mcp_oauth_consents_status", table_name="mcp_oauth_consents")
    op.drop_index("ix_mcp_oauth_consents_state_sha256", table_name="mcp_oauth_consents")
    op.drop_table("mcp_oauth_consents")
