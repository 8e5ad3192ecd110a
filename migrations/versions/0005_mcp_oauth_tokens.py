"""The MCP gateway's OAuth records: one sealed row per server (tokens, expiry, client).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mcp_oauth_tokens",
        sa.Column("server", sa.String(128), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("server", name=op.f("pk_mcp_oauth_tokens")),
    )


def downgrade() -> None:
    op.drop_table("mcp_oauth_tokens")
