"""Engine setup: URL normalisation, the SQLite file and its pragmas, write transactions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg.exceptions as asyncpg_errors
import pytest
import sqlalchemy as sa

from vocero.store import Store, create_engine
from vocero.store.engine import async_url, conflicted, sqlite_file, unreachable
from vocero.store.repositories import SessionTakenOverError

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("sqlite:///var/vocero.db", "sqlite+aiosqlite:///var/vocero.db"),
        ("sqlite+aiosqlite:////abs/x.db", "sqlite+aiosqlite:////abs/x.db"),
        ("sqlite://", "sqlite+aiosqlite://"),
        ("postgresql://u:p@h/db", "postgresql+asyncpg://u:***@h/db"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
    ],
)
def test_urls_become_async(given: str, expected: str) -> None:
    assert str(async_url(given)) == expected


def test_sqlite_file_is_none_for_memory_and_other_backends() -> None:
    assert sqlite_file(async_url("sqlite://")) is None
    assert sqlite_file(async_url("sqlite:///:memory:")) is None
    assert sqlite_file(async_url("postgresql://h/db")) is None
    assert sqlite_file(async_url("sqlite:///a/b.db")) == Path("a/b.db")


async def pragma(store: Store, name: str) -> object:
    async with store.engine.connect() as connection:
        return (await connection.exec_driver_sql(f"PRAGMA {name}")).scalar()


async def test_file_database_runs_in_wal_mode_with_foreign_keys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'deep' / 'er' / 'vocero.db'}"
    store = Store(create_engine(url))
    try:
        assert await pragma(store, "journal_mode") == "wal"
        assert await pragma(store, "foreign_keys") == 1
        assert await pragma(store, "busy_timeout") == 15000
        assert await pragma(store, "synchronous") == 1  # NORMAL
    finally:
        await store.close()
    assert (tmp_path / "deep" / "er" / "vocero.db").is_file()


async def test_write_rolls_back_on_error_and_commits_otherwise(store: Store) -> None:
    insert = sa.text(
        "INSERT INTO tool_pins (server, tool, definition_hash, definition, status, pinned_at) "
        "VALUES (:tool, :tool, 'h', '{}', 'approved', '2026-01-01 00:00:00')"
    )

    async def fail_midway() -> None:
        async with store.write() as session:
            await session.execute(insert, {"tool": "lost"})
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await fail_midway()
    async with store.write() as session:
        await session.execute(insert, {"tool": "kept"})
    async with store.read() as session:
        tools = (await session.execute(sa.text("SELECT tool FROM tool_pins"))).scalars().all()
    assert tools == ["kept"]


async def test_foreign_keys_are_enforced(store: Store) -> None:
    insert = sa.text(
        "INSERT INTO turns (id, session_id, seq, source, text, created_at) "
        "VALUES ('t1', 'ses_missing', 1, 'text', 'hi', '2026-01-01 00:00:00')"
    )
    with pytest.raises(sa.exc.IntegrityError):
        async with store.write() as session:
            await session.execute(insert)


async def test_autocommit_connections_do_not_open_a_transaction(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        async with store.engine.connect() as connection:
            autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
            await autocommit.exec_driver_sql("CREATE TABLE t (x INTEGER)")
            await autocommit.exec_driver_sql("INSERT INTO t VALUES (1)")
        async with store.read() as session:
            assert (await session.execute(sa.text("SELECT count(*) FROM t"))).scalar() == 1
    finally:
        await store.close()


def _raised_from(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as cause:
            raise outer from cause
    except BaseException as chained:
        return chained


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        # PostgreSQL gone under a transaction: SQLAlchemy's wrapper over asyncpg's errors
        (_raised_from(
            sa.exc.DBAPIError("COMMIT", None, Exception("closed"), connection_invalidated=True),
            asyncpg_errors.ConnectionDoesNotExistError("closed")), True),
        (_raised_from(sa.exc.DBAPIError("SELECT", None, Exception("x")),
                      asyncpg_errors.AdminShutdownError("administrator command")), True),
        (asyncpg_errors.CannotConnectNowError("the database system is starting up"), True),
        (asyncpg_errors.DeadlockDetectedError("deadlock detected"), True),
        (asyncpg_errors.SerializationError("could not serialize access"), True),
        (ConnectionRefusedError(111, "Connect call failed"), True),
        (TimeoutError(), True),
        (_raised_from(sa.exc.OperationalError("BEGIN", None, Exception("x")),
                      sqlite3.OperationalError("database is locked")), True),
        # running these again fails again
        (asyncpg_errors.UniqueViolationError("duplicate key"), False),
        (_raised_from(sa.exc.OperationalError("SELECT", None, Exception("x")),
                      sqlite3.OperationalError("no such table: turns")), False),
        (sa.exc.IntegrityError("INSERT", None, Exception("UNIQUE constraint failed")), False),
        (SessionTakenOverError("ses_1", "node_b"), False),
        (ValueError("generation belongs to another session"), False),
    ],
)
def test_unreachable_tells_an_outage_from_a_write_that_cannot_succeed(
    error: BaseException, expected: bool
) -> None:
    assert unreachable(error) is expected


async def _failure_of(url: str, statement: str) -> BaseException:
    store = Store.open(url)
    try:
        with pytest.raises(Exception) as failed:
            async with store.write() as session:
                await session.execute(sa.text(statement))
    finally:
        await store.close()
    return failed.value


async def test_a_refused_connection_and_a_missing_table_are_told_apart(tmp_path: Path) -> None:
    """Real failures, not constructed ones: nothing listens on the PostgreSQL port, and a
    SQLite file without the schema."""
    assert unreachable(await _failure_of("postgresql://vocero@127.0.0.1:9/vocero", "SELECT 1"))
    missing = await _failure_of(f"sqlite:///{tmp_path / 'bare.db'}",
                                "INSERT INTO turns (id) VALUES ('t')")
    assert isinstance(missing, sa.exc.OperationalError) and "no such table" in str(missing)
    assert not unreachable(missing)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (_raised_from(sa.exc.DBAPIError("UPDATE", None, Exception("x")),
                      asyncpg_errors.DeadlockDetectedError("deadlock detected")), True),
        (asyncpg_errors.SerializationError("could not serialize access"), True),
        # the store is away, or the write is wrong: not a conflict to run again at once
        (ConnectionRefusedError(111, "Connect call failed"), False),
        (asyncpg_errors.AdminShutdownError("administrator command"), False),
        (asyncpg_errors.UniqueViolationError("duplicate key"), False),
    ],
)
def test_conflicted_is_only_a_transaction_rolled_back_for_another(
    error: BaseException, expected: bool
) -> None:
    assert conflicted(error) is expected
