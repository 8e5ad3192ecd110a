"""Voice-vault fixtures: a migrated store per test (a SQLite file copied from one template, or
the PostgreSQL test database emptied, see ``tests/support/pg.py``) and a vault on a virtual
clock."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.pg import BACKENDS, clean_pg
from tests.support.voices import KEY
from vocero.contracts.clock import VirtualClock
from vocero.store import Store, upgrade
from vocero.voice_vault import VoiceVault


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiosqlite and asyncpg run on asyncio only


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vault-template") / "template.db"
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


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def vault(store: Store, clock: VirtualClock) -> VoiceVault:
    return VoiceVault(store, key=KEY, clock=clock)

