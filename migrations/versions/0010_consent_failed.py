"""A consent whose answer the authorization server refused is ``failed``, not ``granted``.

The token exchange of an operator's answer can fail (a bogus ``code``, a wrong ``iss``): the
consent then ends ``failed`` (issue 26, finding 3). The status check of ``mcp_oauth_consents``
admits it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BEFORE = ("pending", "answered", "granted", "refused", "expired", "superseded")
AFTER = (*BEFORE, "failed")
NAME = "ck_mcp_oauth_consents_status"


def _check(statuses: Sequence[str]) -> str:
    return "status IN (" + ", ".join(f"'{s}'" for s in statuses) + ")"


def _replace(statuses: Sequence[str]) -> None:
    with op.batch_alter_table("mcp_oauth_consents") as batch:
        batch.drop_constraint(op.f(NAME), type_="check")
        batch.create_check_constraint(op.f(NAME), _check(statuses))


def upgrade() -> None:
    _replace(AFTER)


def downgrade() -> None:
    op.execute("UPDATE mcp_oauth_consents SET status = 'refused' WHERE status = 'failed'")
    _replace(BEFORE)
