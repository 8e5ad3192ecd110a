"""Fixtures of the action-path tests.

The fixture MCP servers run once for the whole session over HTTP (a server takes about a second
to start; connecting to a running one takes a few milliseconds), recording every call and keeping
their receipts in files. Every test uses callers with subjects of their own, so what a server
received for a test is picked out of the shared record by ``subject_ref``. The store is a fresh
SQLite file per test, copied from one migrated template.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from policy_support import FixtureServers, fixture_servers, migrated_copy

from vocero.store import upgrade


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FixtureServers]:
    with fixture_servers(tmp_path_factory.mktemp("mcp")) as running:
        yield running


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def db_url(migrated_template: Path, tmp_path: Path) -> str:
    return migrated_copy(migrated_template, tmp_path / "vocero.db")
