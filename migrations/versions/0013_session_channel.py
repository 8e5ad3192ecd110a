"""Sessions say how the caller came: ``sessions.channel`` and ``sessions.call_sid``.

A caller on the phone (SPEC §10, docs/telephony.md) has a session like a browser caller's; its
record carries the channel (``web`` | ``twilio``) and, for the phone, the carrier's call id.
Sessions created before this were all ``web``.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("channel", sa.String(16), nullable=False, server_default="web"))
        batch.add_column(sa.Column("call_sid", sa.String(64), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("call_sid")
        batch.drop_column("channel")
