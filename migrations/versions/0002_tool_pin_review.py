"""Tool pins remember what a server listed after a change and who approved the pin.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tool_pins") as batch:
        batch.add_column(sa.Column("observed_hash", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("observed_definition", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("approved_by", sa.String(128), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("tool_pins") as batch:
        batch.drop_column("approved_by")
        batch.drop_column("observed_definition")
        batch.drop_column("observed_hash")
