"""Tool pins remember what a server listed after a change and who approved the pin, and carry
the gateway's full set of pin states (a changed definition is ``changed`` until re-approved).

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


OLD_STATES = "status IN ('approved', 'disabled')"
NEW_STATES = "status IN ('approved', 'changed', 'missing', 'pending', 'rejected')"


def upgrade() -> None:
    with op.batch_alter_table("tool_pins") as batch:
        batch.drop_constraint(op.f("ck_tool_pins_status"), type_="check")
        batch.create_check_constraint("status", NEW_STATES)
        batch.add_column(sa.Column("observed_hash", sa.String(64), nullable=False, server_default=""))
        batch.add_column(sa.Column("observed_definition", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("approved_by", sa.String(128), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("tool_pins") as batch:
        batch.drop_column("approved_by")
        batch.drop_column("observed_definition")
        batch.drop_column("observed_hash")
        batch.drop_constraint(op.f("ck_tool_pins_status"), type_="check")
        batch.create_check_constraint("status", OLD_STATES)
