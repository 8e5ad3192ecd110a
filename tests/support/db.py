"""The database fixtures of every suite: a pytest plugin (``pytest_plugins`` in
``tests/conftest.py``).

Migrating a database takes a third of a second on SQLite and seconds on PostgreSQL, so each test
process migrates one template once and every test gets a copy: on SQLite a file copied from
:func:`sqlite_template`; on PostgreSQL (``VOCERO_TEST_PG_URL``) a clone of the process's template
database or the shared database emptied (``tests/support/pg.py``). An app started on a copy finds
its schema at head, and its own upgrade on start has nothing to do.

``db_url`` runs a test on both backends (the PostgreSQL variant skipped without a server, except
in CI), ``app_db_url`` likewise with the app's SQLite driver; ``empty_url`` is a database with no
tables at all; ``store`` is a :class:`Store` opened on ``db_url``. A suite's conftest only adds
what is its own (a store wired to a vault, servers).
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support import pg
from tests.support.pg import BACKENDS, clean_pg, fresh_db
from vocero.store import Store, upgrade


@functools.cache
def sqlite_template() -> Path:
    """A SQLite file at head, migrated once per test process (also for tests that cannot take
    fixtures, such as Hypothesis state machines)."""
    path = Path(tempfile.mkdtemp(prefix="vocero-template-")) / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


def migrated_copy(target: Path, *, driver: str = "sqlite") -> str:
    """A copy of the template at ``target``; its URL with ``driver`` (``sqlite+aiosqlite`` for
    an app's settings)."""
    shutil.copyfile(sqlite_template(), target)
    return f"{driver}:///{target}"


def pytest_sessionfinish(session: pytest.Session) -> None:
    if sqlite_template.cache_info().currsize:
        shutil.rmtree(sqlite_template().parent, ignore_errors=True)
    if pg.PG_URL:
        pg.drop_created()


@pytest.fixture(scope="session")
def migrated_template() -> Path:
    return sqlite_template()


def fresh_url(backend: str, folder: Path, *, driver: str = "sqlite") -> str:
    """A database at head with no rows: a fresh SQLite file in ``folder`` (its URL with
    ``driver``), or the PostgreSQL one emptied."""
    if backend == "sqlite":
        return migrated_copy(folder / "vocero.db", driver=driver)
    return clean_pg()


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database at head with no rows: a fresh SQLite file, or the PostgreSQL one emptied."""
    return fresh_url(request.param, tmp_path)


@pytest.fixture(params=BACKENDS)
def app_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """``db_url`` as the app names it (``sqlite+aiosqlite``): for suites that run the app or
    its workers on it."""
    return fresh_url(request.param, tmp_path, driver="sqlite+aiosqlite")


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with no tables at all."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    with fresh_db() as url:
        yield url


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    opened = Store.open(db_url)
    try:
        yield opened
    finally:
        await opened.close()
