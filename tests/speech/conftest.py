"""Fixtures for the speech plane: the demo profile. The migrated store per test (``db_url``,
``store``: SQLite and PostgreSQL) comes from ``tests/support/db.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from vocero.contracts.domain import AgentProfile
from vocero.identity.profiles import load_profiles

FIXTURES = Path(__file__).parents[2] / "fixtures"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def demo() -> AgentProfile:
    profile = load_profiles(FIXTURES / "profiles").get("demo")
    assert profile is not None
    return profile
