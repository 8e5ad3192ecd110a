"""Voice-vault fixtures: a migrated SQLite store per test (copied from one template) and a
vault on a virtual clock."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.voices import KEY
from vocero.contracts.clock import VirtualClock
from vocero.store import Store, upgrade
from vocero.voice_vault import VoiceVault


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiosqlite runs on asyncio only


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vault-template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
async def store(migrated_template: Path, tmp_path: Path) -> AsyncIterator[Store]:
    target = tmp_path / "vocero.db"
    shutil.copyfile(migrated_template, target)
    opened = Store.open(f"sqlite:///{target}")
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

