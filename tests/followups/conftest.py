"""Fixtures of the follow-up tests: the call server runs once per test session over HTTP; every
test's callers have subjects and numbers of their own, so what the server received for a test
is picked out by ``subject_ref``. Each test gets a fresh SQLite file copied from one migrated
template."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from followup_support import CallsServer, calls_server, migrated_copy

from vocero.store import upgrade


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def calls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CallsServer]:
    with calls_server(tmp_path_factory.mktemp("calls")) as running:
        yield running


@pytest.fixture(scope="session")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def db_url(migrated: Path, tmp_path: Path) -> str:
    return migrated_copy(migrated, tmp_path / "vocero.db")
