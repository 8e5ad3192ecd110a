"""Audit retention: the append-only triggers allow one change, a payload's tombstone.

``audit_events`` stays append-only: DELETE (and TRUNCATE) are refused as before, and so is any
UPDATE except replacing the ``data`` of an intact event by ``{"$tombstone": S}`` with every
other column unchanged (vocero/store/tombstones.py says why the chain still verifies).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MESSAGE = "audit_events is append-only"
SQLITE_SAME_ROW = """NEW.seq = OLD.seq AND NEW.chain = OLD.chain
    AND NEW.session_id IS OLD.session_id AND NEW.kind = OLD.kind AND NEW.actor = OLD.actor
    AND NEW.at = OLD.at AND NEW.prev_hash = OLD.prev_hash AND NEW.hash = OLD.hash"""
# ``IS``, not ``=``: a NULL (a missing key) must make the condition false, not NULL, or the
# trigger would not fire at all.
SQLITE_TOMBSTONE = f"""CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
    WHEN NOT ({SQLITE_SAME_ROW}
        AND json_extract(OLD.data, '$."$tombstone"') IS NULL
        AND json_type(NEW.data) IS 'object'
        AND json_type(NEW.data, '$."$tombstone"') IS 'integer'
        AND (SELECT count(*) FROM json_each(NEW.data)) IS 1)
    BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"""
SQLITE_ORIGINAL = f"""CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
    BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"""

POSTGRESQL_TOMBSTONE = f"""CREATE OR REPLACE FUNCTION audit_events_append_only()
    RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE'
            AND NEW.seq = OLD.seq AND NEW.chain = OLD.chain
            AND NEW.session_id IS NOT DISTINCT FROM OLD.session_id
            AND NEW.kind = OLD.kind AND NEW.actor = OLD.actor AND NEW.at = OLD.at
            AND NEW.prev_hash = OLD.prev_hash AND NEW.hash = OLD.hash
            AND NOT (OLD.data::jsonb ? '$tombstone')
            AND jsonb_typeof(NEW.data::jsonb) = 'object'
            AND jsonb_typeof(NEW.data::jsonb -> '$tombstone') = 'number'
            AND (SELECT count(*) FROM jsonb_object_keys(NEW.data::jsonb)) = 1
        THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'restrict_violation';
    END
    $$"""
POSTGRESQL_ORIGINAL = f"""CREATE OR REPLACE FUNCTION audit_events_append_only()
    RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'restrict_violation'; END
    $$"""


def upgrade() -> None:
    _install(SQLITE_TOMBSTONE, POSTGRESQL_TOMBSTONE)


def downgrade() -> None:
    _install(SQLITE_ORIGINAL, POSTGRESQL_ORIGINAL)


def _install(sqlite: str, postgresql: str) -> None:
    dialect = op.get_context().dialect.name
    if dialect == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS audit_events_no_update")
        op.execute(sqlite)
    elif dialect == "postgresql":
        op.execute(postgresql)
    else:
        raise NotImplementedError(f"no append-only audit triggers for {dialect}")
