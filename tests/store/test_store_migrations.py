"""Alembic migrations: up and down on an empty database, no drift from the models, async use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from vocero.store import MigrationsNotFoundError, Store, downgrade, migrate, upgrade, upgrade_async
from vocero.store.models import metadata, schema_compared

pytestmark = pytest.mark.anyio

APP_TABLES = set(metadata.tables)


async def table_names(url: str) -> set[str]:
    store = Store.open(url)
    try:
        async with store.engine.connect() as connection:
            names = await connection.run_sync(lambda c: sa.inspect(c).get_table_names())
    finally:
        await store.close()
    return set(names)


async def drift(url: str, target: sa.MetaData) -> list[Any]:
    store = Store.open(url)

    def compare(connection: sa.Connection) -> list[Any]:
        opts = {"compare_type": True, "include_name": schema_compared}
        context = MigrationContext.configure(connection, opts=opts)
        return list(compare_metadata(context, target))

    try:
        async with store.engine.connect() as connection:
            return await connection.run_sync(compare)
    finally:
        await store.close()


def test_upgrade_then_downgrade_creates_and_drops_every_table(empty_url: str) -> None:
    upgrade(empty_url)
    assert APP_TABLES | {"alembic_version"} <= anyio.run(table_names, empty_url)
    downgrade(empty_url)
    assert anyio.run(table_names, empty_url) & APP_TABLES == set()


async def test_migrated_schema_matches_the_models(db_url: str) -> None:
    assert await drift(db_url, metadata) == []


async def test_drift_check_notices_a_column_without_a_migration(db_url: str) -> None:
    changed = sa.MetaData(naming_convention=metadata.naming_convention)
    for table in metadata.tables.values():
        table.to_metadata(changed)
    changed.tables["sessions"].append_column(sa.Column("nickname", sa.String(32)))
    differences = await drift(db_url, changed)
    assert [(d[0], d[3].name) for d in differences] == [("add_column", "nickname")]


async def test_upgrade_async_runs_from_inside_an_event_loop(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'nested' / 'dir' / 'vocero.db'}"
    await upgrade_async(url)
    await upgrade_async(url)  # idempotent at head
    assert "audit_events" in await table_names(url)


async def test_blocking_upgrade_inside_an_event_loop_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="upgrade_async"):
        upgrade(f"sqlite:///{tmp_path / 'x.db'}")


def test_missing_migrations_directory_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(migrate, "MIGRATIONS_DIR", tmp_path / "nowhere")
    with pytest.raises(MigrationsNotFoundError, match="carries them"):
        upgrade(f"sqlite:///{tmp_path / 'x.db'}")
