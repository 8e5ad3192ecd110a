"""Fixtures of the action-path tests.

The fixture MCP servers run once for the whole session over HTTP (a server takes about a second
to start; connecting to a running one takes a few milliseconds), recording every call and keeping
their receipts in files. Every test uses callers with subjects of their own, so what a server
received for a test is picked out of the shared record by ``subject_ref``. The store is a fresh
SQLite file per test, copied from one migrated template (``tests/support/db.py``), and the same
tests run on PostgreSQL (``VOCERO_TEST_PG_URL``, emptied before each test; see
``tests/support/pg.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from policy_support import FixtureServers, fixture_servers


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FixtureServers]:
    with fixture_servers(tmp_path_factory.mktemp("mcp")) as running:
        yield running


@pytest.fixture
def db_url(app_db_url: str) -> str:
    """A database at head with no rows, as the app names it (``tests/support/db.py``)."""
    return app_db_url
