"""Fixtures of the orchestrator tests: a migrated SQLite store for the ones that run the real
action path (a fresh copy of the one migrated template, ``tests/support/db.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.db import migrated_copy


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    target = tmp_path / "vocero.db"
    migrated_copy(target)
    return target
