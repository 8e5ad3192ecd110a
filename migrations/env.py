"""Alembic environment for Vocero's store.

The database URL comes from, in order: ``config.attributes["url"]`` (set by
``vocero.store.migrate``), ``alembic -x db=URL``, the ``VOCERO_DB`` environment variable, then
``sqlalchemy.url`` of ``alembic.ini``. Async URLs are fine: migrations run through
``AsyncConnection.run_sync``. A caller may also pass an open synchronous connection in
``config.attributes["connection"]``.
"""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig
from typing import Any

from alembic import context
from sqlalchemy.engine import Connection

from vocero.store.engine import async_url, create_engine
from vocero.store.models import metadata, schema_compared

config = context.config

if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def database_url() -> str:
    url = (
        config.attributes.get("url")
        or context.get_x_argument(as_dictionary=True).get("db")
        or os.environ.get("VOCERO_DB")
        or config.get_main_option("sqlalchemy.url")
    )
    if not url:
        raise RuntimeError("no database URL: pass -x db=URL or set VOCERO_DB")
    return str(url)


def configure(**options: Any) -> None:
    context.configure(
        target_metadata=metadata, render_as_batch=True, compare_type=True,
        include_name=schema_compared,  # the FTS5 index is not a modelled table
        **options,
    )


def run_migrations_offline() -> None:
    configure(url=async_url(database_url()), literal_binds=True,
              dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def run_with(connection: Connection) -> None:
    configure(connection=connection)
    with context.begin_transaction():
        context.run_migrations()


async def run_migrations_online() -> None:
    engine = create_engine(database_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_with)
            await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
elif isinstance(config.attributes.get("connection"), Connection):
    run_with(config.attributes["connection"])
else:
    asyncio.run(run_migrations_online())
