"""Fixtures for the store plane: a migrated SQLite file per test (copied from one template, so
migrations run once per session) and, when ``VOCERO_TEST_PG_URL`` is set, the same tests against
PostgreSQL."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from vocero.store import Store, downgrade, upgrade

PG_URL = os.environ.get("VOCERO_TEST_PG_URL", "")

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgresql",
        id="postgresql",
        marks=pytest.mark.skipif(not PG_URL, reason="VOCERO_TEST_PG_URL is not set"),
    ),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiosqlite and asyncpg run on asyncio only


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database at head: a fresh SQLite file, or the PostgreSQL database rebuilt."""
    if request.param == "sqlite":
        target = tmp_path / "vocero.db"
        shutil.copyfile(request.getfixturevalue("migrated_template"), target)
        yield f"sqlite:///{target}"
        return
    downgrade(PG_URL)
    upgrade(PG_URL)
    yield PG_URL
    downgrade(PG_URL)


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with no tables at all."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    downgrade(PG_URL)
    yield PG_URL
    downgrade(PG_URL)


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    opened = Store.open(db_url)
    try:
        yield opened
    finally:
        await opened.close()
