"""Run the Alembic migrations from code: ``vocero db upgrade`` and ``serve`` on start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio.to_thread
from alembic import command
from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


class MigrationsNotFoundError(RuntimeError):
    """The ``migrations/`` directory is not beside the package (a non-editable install)."""


def alembic_config(url: str) -> Config:
    """An Alembic config for ``url`` built in code; it touches no logging configuration."""
    if not (MIGRATIONS_DIR / "env.py").is_file():
        raise MigrationsNotFoundError(
            f"Alembic migrations not found at {MIGRATIONS_DIR}; install Vocero from its source "
            "tree (pip install -e .) so migrations/ sits beside the vocero package"
        )
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` up to ``revision``. Call it from synchronous code;
    inside an event loop use :func:`upgrade_async`."""
    _require_no_running_loop()
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    _require_no_running_loop()
    command.downgrade(alembic_config(url), revision)


def _require_no_running_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError("migrations block; from inside an event loop await upgrade_async()")


async def upgrade_async(url: str, revision: str = "head") -> None:
    """:func:`upgrade` from inside an event loop, in a worker thread."""
    await anyio.to_thread.run_sync(upgrade, url, revision)
