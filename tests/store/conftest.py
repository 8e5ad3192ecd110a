"""Fixtures for the store plane: a migrated SQLite file per test (copied from one template, so
migrations run once per session) and the same tests against PostgreSQL
(``VOCERO_TEST_PG_URL``, see ``tests/support/pg.py``)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.pg import BACKENDS, clean_pg, fresh_db
from vocero.store import Store, upgrade


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiosqlite and asyncpg run on asyncio only


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database at head with no rows: a fresh SQLite file, or the PostgreSQL one emptied."""
    if request.param == "sqlite":
        target = tmp_path / "vocero.db"
        shutil.copyfile(request.getfixturevalue("migrated_template"), target)
        return f"sqlite:///{target}"
    return clean_pg()


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
