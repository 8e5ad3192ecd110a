"""Fixtures for the store plane: ``db_url`` (a migrated SQLite file per test, copied from one
template, and the same tests against PostgreSQL), ``empty_url`` and ``store`` come from
``tests/support/db.py``."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiosqlite and asyncpg run on asyncio only
