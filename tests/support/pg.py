"""PostgreSQL for the store-touching suites: the same tests run on SQLite and PostgreSQL.

``VOCERO_TEST_PG_URL`` names a database on a server the tests may use freely (``.ci/run``
starts one with ``scripts/pg.sh``; locally ``bash scripts/pg.sh start /tmp/vocero-pg`` prints
one). Without it the PostgreSQL variants are skipped, unless ``VOCERO_TEST_PG_REQUIRED=1``
(CI): then they fail, so a CI that lost its database cannot pass by skipping.

The database is migrated once per test session; before each test every table is emptied (a
``DELETE`` per table with triggers off: the append-only audit trigger is the schema's, not the
data's), sequences restart and user triggers a test switched off are on again. That takes
milliseconds where a downgrade and upgrade take most of a second. Tests that need an empty
database or a server of their own get a fresh database (:func:`fresh_db`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest
import sqlalchemy as sa
from sqlalchemy import make_url

from vocero.store import Store, upgrade

PG_URL = os.environ.get("VOCERO_TEST_PG_URL", "")
REQUIRED = os.environ.get("VOCERO_TEST_PG_REQUIRED", "") == "1"

requires_pg = pytest.mark.skipif(
    not PG_URL and not REQUIRED, reason="VOCERO_TEST_PG_URL is not set"
)
"""Skip without a PostgreSQL server, except in CI (``VOCERO_TEST_PG_REQUIRED=1``)."""

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=requires_pg),
]

_migrated: set[str] = set()


def pg_url() -> str:
    if not PG_URL:
        pytest.fail("VOCERO_TEST_PG_URL is not set but PostgreSQL tests are required")
    return PG_URL


def clean_pg() -> str:
    """The shared PostgreSQL database at head with every table empty."""
    url = pg_url()
    if url not in _migrated:
        upgrade(url)
        _migrated.add(url)
    anyio.run(_empty, url)
    return url


async def _empty(url: str) -> None:
    store = Store.open(url)
    try:
        async with store.engine.begin() as connection:
            tables = (await connection.execute(sa.text(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "AND tablename <> 'alembic_version'"))).scalars().all()
            await connection.execute(sa.text("SET LOCAL session_replication_role = replica"))
            for table in tables:
                await connection.execute(sa.text(f'DELETE FROM "{table}"'))
                # a test may have switched a trigger off to tamper with rows (test_store_audit)
                await connection.execute(sa.text(f'ALTER TABLE "{table}" ENABLE TRIGGER USER'))
            sequences = (await connection.execute(sa.text(
                "SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema()"
            ))).scalars().all()
            for sequence in sequences:  # ids and audit sequence numbers start at 1 again
                await connection.execute(sa.text(f'ALTER SEQUENCE "{sequence}" RESTART'))
    finally:
        await store.close()


@contextmanager
def fresh_db(*, migrated: bool = False) -> Iterator[str]:
    """A database of its own on the test server (empty, or at head), dropped afterwards."""
    base = make_url(pg_url())
    name = f"vocero_t_{uuid.uuid4().hex[:12]}"
    anyio.run(_admin, base, f'CREATE DATABASE "{name}"')
    url = base.set(database=name).render_as_string(hide_password=False)
    try:
        if migrated:
            upgrade(url)
        yield url
    finally:
        anyio.run(_admin, base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _admin(base: sa.URL, statement: str) -> None:
    store = Store.open(base.set(database="postgres"))
    try:
        async with store.engine.connect() as connection:
            autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
            await autocommit.execute(sa.text(statement))
    finally:
        await store.close()
