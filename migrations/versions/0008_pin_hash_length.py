"""Tool pin hashes fit: ``sha256:`` and 64 hex digits are 71 characters, over ``VARCHAR(64)``.

SQLite never enforced the length; PostgreSQL refused every first pin (``value too long``), so no
MCP tool could be pinned there. Both columns become ``VARCHAR(128)``.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("definition_hash", "observed_hash")


def upgrade() -> None:
    with op.batch_alter_table("tool_pins") as batch:
        for column in COLUMNS:
            batch.alter_column(column, existing_type=sa.String(64), type_=sa.String(128),
                               existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("tool_pins") as batch:
        for column in COLUMNS:
            batch.alter_column(column, existing_type=sa.String(128), type_=sa.String(64),
                               existing_nullable=False)
