"""Voice versions name how a remote TTS speaks them: ``voice_versions.engine_voice``.

A vault version is approved together with the serving engine's voice name it is spoken with on
a remote TTS (SPEC §3, ``POST /v1/voices/{voice_id}/versions``); versions created before this
have none ("") and cannot be spoken on a remote TTS.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("voice_versions") as batch:
        batch.add_column(
            sa.Column("engine_voice", sa.String(64), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("voice_versions") as batch:
        batch.drop_column("engine_voice")
