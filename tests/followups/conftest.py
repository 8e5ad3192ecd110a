"""Fixtures of the follow-up tests: the call server runs once per test session over HTTP; every
test's callers have subjects and numbers of their own, so what the server received for a test
is picked out by ``subject_ref``. Each test gets a fresh SQLite file copied from one migrated
template (``tests/support/db.py``), and the same tests run on PostgreSQL (``VOCERO_TEST_PG_URL``,
emptied before each test; see ``tests/support/pg.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from followup_support import CallsServer, calls_server

from tests.support.db import migrated_copy
from tests.support.pg import BACKENDS, clean_pg


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def calls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CallsServer]:
    with calls_server(tmp_path_factory.mktemp("calls")) as running:
        yield running


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database at head with no rows: a fresh SQLite file (as the app names it), or the
    PostgreSQL one emptied."""
    if request.param == "sqlite":
        return migrated_copy(tmp_path / "vocero.db", driver="sqlite+aiosqlite")
    return clean_pg()
