"""Voice-vault fixtures: a vault on a virtual clock over the migrated ``store`` of
``tests/support/db.py`` (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest

from tests.support.voices import KEY
from vocero.contracts.clock import VirtualClock
from vocero.store import Store
from vocero.voice_vault import VoiceVault


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiosqlite and asyncpg run on asyncio only


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def vault(store: Store, clock: VirtualClock) -> VoiceVault:
    return VoiceVault(store, key=KEY, clock=clock)

