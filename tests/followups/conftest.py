"""Fixtures of the follow-up tests: the call server runs once per test session over HTTP; every
test's callers have subjects and numbers of their own, so what the server received for a test
is picked out by ``subject_ref``. Each test gets a fresh SQLite file copied from one migrated
template (``tests/support/db.py``), and the same tests run on PostgreSQL (``VOCERO_TEST_PG_URL``,
emptied before each test; see ``tests/support/pg.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from followup_support import CallsServer, calls_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def calls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CallsServer]:
    with calls_server(tmp_path_factory.mktemp("calls")) as running:
        yield running


@pytest.fixture
def db_url(app_db_url: str) -> str:
    """A database at head with no rows, as the app names it (``tests/support/db.py``)."""
    return app_db_url
