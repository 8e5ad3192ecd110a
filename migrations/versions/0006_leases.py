"""Leases for several processes on one store: nodes, named leases, session and outbox holders.

Sessions still open when this runs were held by a process that is gone (an upgrade runs before
a process serves): their lease is set to their creation time, already past, so the next process
to start takes them over as ended by a crash.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _at(name: str, *, nullable: bool = True) -> sa.Column[sa.DateTime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "nodes",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("host", sa.String(256), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        _at("started_at", nullable=False),
        _at("renewed_at", nullable=False),
        _at("expires_at", nullable=False),
        _at("ended_at"),
        sa.Column("ending", sa.String(16), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_nodes")),
    )
    op.create_index(op.f("ix_nodes_expires_at"), "nodes", ["expires_at"])
    op.create_table(
        "leases",
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=True),
        _at("acquired_at"),
        _at("expires_at"),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leases")),
    )
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("owner_id", sa.String(64), nullable=True))
        batch.add_column(_at("lease_expires_at"))
        batch.create_index(batch.f("ix_sessions_lease_expires_at"), ["lease_expires_at"])
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(_at("lease_expires_at"))
    sessions = sa.table("sessions", sa.column("closed_at"), sa.column("created_at"),
                        sa.column("lease_expires_at"))
    op.execute(sessions.update().where(sessions.c.closed_at.is_(None))
               .values(lease_expires_at=sessions.c.created_at))


def downgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("lease_expires_at")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_index(batch.f("ix_sessions_lease_expires_at"))
        batch.drop_column("lease_expires_at")
        batch.drop_column("owner_id")
    op.drop_table("leases")
    op.drop_index(op.f("ix_nodes_expires_at"), table_name="nodes")
    op.drop_table("nodes")
