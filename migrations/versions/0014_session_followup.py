"""Sessions say which follow-up they answer: ``sessions.followup_id``.

A call-back placed through the carrier (docs/followups.md "Call-backs through the carrier")
is answered as a phone session that opens with the follow-up's reason; its record names the
follow-up. Every other session has an empty ``followup_id``.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("followup_id", sa.String(64), nullable=False,
                                   server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("followup_id")
