"""Fixtures for the speech plane: the demo profile, and a migrated store per test (SQLite, and
PostgreSQL too when ``VOCERO_TEST_PG_URL`` is set, like ``tests/store``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from vocero.contracts.domain import AgentProfile
from vocero.identity.profiles import load_profiles
from vocero.store import Store, downgrade, upgrade

PG_URL = os.environ.get("VOCERO_TEST_PG_URL", "")
FIXTURES = Path(__file__).parents[2] / "fixtures"

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
    return "asyncio"


@pytest.fixture(scope="session")
def demo() -> AgentProfile:
    profile = load_profiles(FIXTURES / "profiles").get("demo")
    assert profile is not None
    return profile


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        target = tmp_path / "vocero.db"
        shutil.copyfile(request.getfixturevalue("migrated_template"), target)
        yield f"sqlite:///{target}"
        return
    downgrade(PG_URL)
    upgrade(PG_URL)
    yield PG_URL
    downgrade(PG_URL)


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    opened = Store.open(db_url)
    try:
        yield opened
    finally:
        await opened.close()
