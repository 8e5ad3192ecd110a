"""PostgreSQL for the store-touching suites: the same tests run on SQLite and PostgreSQL.

``VOCERO_TEST_PG_URL`` names a database on a server the tests may use freely (``.ci/run``
starts one with ``scripts/pg.sh``; locally ``bash scripts/pg.sh start /tmp/vocero-pg`` prints
one). Without it the PostgreSQL variants are skipped, unless ``VOCERO_TEST_PG_REQUIRED=1``
(CI): then they fail, so a CI that lost its database cannot pass by skipping.

Each test process migrates one template database once (:func:`template_url`) and clones it
(``CREATE DATABASE ... TEMPLATE``, tens of milliseconds where migrating takes seconds) for the
databases it needs at head. The database the store suites share is the configured one in a plain
run, and a clone of the process's own under pytest-xdist (``<name>_gw0_<pid>``: workers never
share one). Before each test every table is emptied (a ``DELETE`` per table with triggers off:
the append-only audit trigger is the schema's, not the data's), sequences restart and user
triggers a test switched off are on again. Tests that need an empty database or a server of
their own get a fresh database (:func:`fresh_db`). What a process created is dropped at the end
of its session (:func:`drop_created`, called by ``tests/support/db.py``).
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

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
"""The pytest-xdist worker of this process (``gw0``, ``gw1``, ...); empty in a plain run."""

_shared: list[str] = []
_template: list[str] = []
_created: list[str] = []
"""Databases this process created, dropped at the end of its session."""


def pg_url() -> str:
    if not PG_URL:
        pytest.fail("VOCERO_TEST_PG_URL is not set but PostgreSQL tests are required")
    return PG_URL


def _named(name: str) -> str:
    return make_url(pg_url()).set(database=name).render_as_string(hide_password=False)


def _own_name(kind: str) -> str:
    """A database name of this process's own (``vocero_tpl_gw0_4242``)."""
    base = make_url(pg_url()).database or "vocero"
    return "_".join(part for part in (base, kind, WORKER, str(os.getpid())) if part)


def template_url() -> str:
    """This process's template: a database migrated to head once, cloned by :func:`fresh_db`
    and, under xdist, by the shared database."""
    if not _template:
        name = _own_name("tpl")
        _create(name)
        upgrade(_named(name))  # its engine is disposed: no connection is left to block a clone
        _template.append(name)
    return _named(_template[0])


def clean_pg() -> str:
    """The shared PostgreSQL database of this process at head with every table empty."""
    if not _shared:
        if WORKER:
            name = _own_name("")
            _create(name, template=_template_name())
            _shared.append(_named(name))
        else:
            upgrade(pg_url())
            _shared.append(pg_url())
    anyio.run(_empty, _shared[0])
    return _shared[0]


def _template_name() -> str:
    return str(make_url(template_url()).database)


def _create(name: str, *, template: str = "") -> None:
    base = make_url(pg_url())
    clone = f' TEMPLATE "{template}"' if template else ""
    anyio.run(_admin, base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    anyio.run(_admin, base, f'CREATE DATABASE "{name}"{clone}')
    _created.append(name)


def drop_created() -> None:
    """Drop every database this process created (at the end of its test session)."""
    base = make_url(pg_url())
    while _created:
        anyio.run(_admin, base, f'DROP DATABASE IF EXISTS "{_created.pop()}" WITH (FORCE)')
    _shared.clear()
    _template.clear()


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
    """A database of its own on the test server (empty, or at head: a clone of the template),
    dropped afterwards."""
    base = make_url(pg_url())
    name = f"vocero_t_{uuid.uuid4().hex[:12]}"
    clone = f' TEMPLATE "{_template_name()}"' if migrated else ""
    anyio.run(_admin, base, f'CREATE DATABASE "{name}"{clone}')
    url = base.set(database=name).render_as_string(hide_password=False)
    try:
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
