"""Fixtures of the orchestrator tests: a migrated SQLite store for the ones that run the real
action path (a fresh copy of one migrated template per test)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vocero.store import upgrade


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def db_path(migrated_template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "vocero.db"
    shutil.copyfile(migrated_template, target)
    return target
