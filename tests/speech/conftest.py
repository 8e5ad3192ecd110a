"""Fixtures for the speech plane: the demo profile, and a migrated store per test (SQLite, and
PostgreSQL too, like ``tests/store``: see ``tests/support/pg.py``)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.pg import BACKENDS, clean_pg
from vocero.contracts.domain import AgentProfile
from vocero.identity.profiles import load_profiles
from vocero.store import Store, upgrade

FIXTURES = Path(__file__).parents[2] / "fixtures"


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
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        target = tmp_path / "vocero.db"
        shutil.copyfile(request.getfixturevalue("migrated_template"), target)
        return f"sqlite:///{target}"
    return clean_pg()


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    opened = Store.open(db_url)
    try:
        yield opened
    finally:
        await opened.close()
