"""Run the Alembic migrations from code: ``vocero db upgrade`` and ``serve`` on start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio.to_thread
from alembic import command
from alembic.config import Config


def _migrations_dir() -> Path:
    """``migrations/`` of the source checkout, else the copy a wheel carries (``setup.py``)."""
    package = Path(__file__).resolve().parents[1]
    in_checkout = package.parent / "migrations"
    return in_checkout if in_checkout.is_dir() else package / "_data" / "migrations"


MIGRATIONS_DIR = _migrations_dir()


class MigrationsNotFoundError(RuntimeError):
    """Neither the checkout's ``migrations/`` nor a wheel's copy of it is there."""


def alembic_config(url: str) -> Config:
    """An Alembic config for ``url`` built in code; it touches no logging configuration."""
    if not (MIGRATIONS_DIR / "env.py").is_file():
        raise MigrationsNotFoundError(
            f"Alembic migrations not found at {MIGRATIONS_DIR}; install Vocero from its source "
            "tree or from a wheel built by its setup.py, which carries them"
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
