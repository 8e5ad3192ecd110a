"""Async engines for SQLite (aiosqlite) and PostgreSQL (asyncpg), and the :class:`Store` that
bundles an engine with its session factories.

SQLite connections run in WAL mode with foreign keys on. The driver's own implicit transaction
handling is switched off and Vocero emits ``BEGIN`` itself, so reads happen inside the transaction
too and DDL is transactional. :meth:`Store.write` begins ``IMMEDIATE`` on SQLite: it takes the
database write lock up front, which serialises read-modify-write transactions (on PostgreSQL
lock the rows you will change with ``SELECT … FOR UPDATE``). :meth:`Store.batch` is one write
transaction that the reads and writes of this store inside it (in the same task) join, so many
small writes commit together. :meth:`Store.apply` runs a list of synchronous Core writes in one
write transaction: on a SQLite file in one call into a worker thread, on a plain (``sqlite3``)
connection, instead of a round trip to aiosqlite's thread for every statement (the recorder's
batches, docs/scaling.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from sqlalchemy import URL, event, make_url
from sqlalchemy import create_engine as _create_sync_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.ext.asyncio import create_async_engine as _create_async_engine

SQLITE_PRAGMAS = (
    "PRAGMA busy_timeout=15000",
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
)
BEGIN_MODE_OPTION = "vocero_sqlite_begin"
"""Execution option naming how a SQLite transaction begins (``DEFERRED`` or ``IMMEDIATE``)."""

_ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
}
_BEGIN_MODES = frozenset({"DEFERRED", "IMMEDIATE"})
_UNREACHABLE_CLASSES = ("08", "53", "57")
"""SQLSTATE classes of a server that is gone, starting, stopping or out of resources: connection
exception, insufficient resources, operator intervention (admin or crash shutdown, cannot connect
now)."""
_RETRYABLE_STATES = frozenset({"40001", "40P01"})
"""Serialization failure and deadlock: the transaction was rolled back and may simply be run
again."""
_SQLITE_UNREACHABLE = ("database is locked", "disk i/o error", "unable to open database file")
_BATCH: ContextVar[tuple[Store, AsyncSession] | None] = ContextVar("vocero_store_batch",
                                                                  default=None)
"""The store and session of the :meth:`Store.batch` the current task is inside, if any."""

CoreWrite = Callable[[Connection], object]
"""One write of :meth:`Store.apply`: Core statements on a synchronous connection, inside the
transaction it is given (it neither commits nor rolls back)."""
Offload = Callable[[Callable[[], None]], Awaitable[None]]
"""Runs a blocking call in a worker thread (default :func:`anyio.to_thread.run_sync`)."""


class WriteFailedError(Exception):
    """Write ``index`` of :meth:`Store.apply` raised (``__cause__``); nothing of it committed."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def async_url(url: str | URL) -> URL:
    """The async form of ``url``: ``sqlite:///x`` becomes ``sqlite+aiosqlite:///x`` and a
    driverless ``postgresql://`` becomes ``postgresql+asyncpg://``; explicit drivers stay."""
    parsed = make_url(url)
    driver = _ASYNC_DRIVERS.get(parsed.drivername)
    return parsed.set(drivername=driver) if driver else parsed


def sqlite_file(url: URL) -> Path | None:
    """The database file of a SQLite URL, or ``None`` for an in-memory database."""
    if url.get_backend_name() != "sqlite":
        return None
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def create_engine(url: str | URL, **kwargs: Any) -> AsyncEngine:
    """An async engine for ``url``; extra keyword arguments go to SQLAlchemy."""
    target = async_url(url)
    path = sqlite_file(target)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    if target.get_backend_name() == "postgresql":
        kwargs.setdefault("pool_pre_ping", True)
    engine = _create_async_engine(target, **kwargs)
    if target.get_backend_name() == "sqlite":
        _configure_sqlite(engine)
    return engine


def _configure_sqlite(engine: AsyncEngine) -> None:
    event.listen(engine.sync_engine, "connect", _on_sqlite_connect)
    event.listen(engine.sync_engine, "begin", _on_sqlite_begin)


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        for pragma in SQLITE_PRAGMAS:
            cursor.execute(pragma)
    finally:
        cursor.close()


def _on_sqlite_begin(connection: Connection) -> None:
    options = connection.get_execution_options()
    if options.get("isolation_level") == "AUTOCOMMIT":
        return
    mode = str(options.get(BEGIN_MODE_OPTION, "DEFERRED"))
    if mode not in _BEGIN_MODES:
        raise ValueError(f"unknown SQLite begin mode {mode!r}")
    connection.exec_driver_sql(f"BEGIN {mode}")


def _plain_sqlite_engine(url: URL) -> Engine:
    """A synchronous engine on the same SQLite file (``sqlite3``), its connections set up as
    the async engine's. Used from worker threads (:func:`_apply_plain`, whose transactions
    begin ``IMMEDIATE``), one transaction at a time."""
    engine = _create_sync_engine(
        url.set(drivername="sqlite"), connect_args={"check_same_thread": False},
        pool_size=1, max_overflow=1,
    )
    event.listen(engine, "connect", _on_sqlite_connect)
    event.listen(engine, "begin", _on_sqlite_begin)
    return engine


def _apply_all(connection: Connection, writes: Sequence[CoreWrite]) -> None:
    """``writes`` in order in one transaction on ``connection``; a write that raises rolls the
    transaction back and surfaces as :class:`WriteFailedError` naming it."""
    with connection.begin():
        for index, write in enumerate(writes):
            try:
                write(connection)
            except Exception as exc:
                raise WriteFailedError(index) from exc


def _apply_plain(engine: Engine, writes: Sequence[CoreWrite]) -> None:
    with engine.connect() as connection:
        connection.execution_options(**{BEGIN_MODE_OPTION: "IMMEDIATE"})
        _apply_all(connection, writes)


async def _to_thread(call: Callable[[], None]) -> None:
    await anyio.to_thread.run_sync(call)


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions whose objects stay readable after commit (no lazy reloads across awaits)."""
    return async_sessionmaker(engine, expire_on_commit=False)


def unreachable(exc: BaseException) -> bool:
    """Whether a failed transaction may succeed unchanged later: the database could not be
    reached (connection refused or lost, the server shutting down or starting up, a timeout),
    or it rolled the transaction back for a conflict (deadlock, serialization). A constraint,
    a missing table or bad data is not: running it again fails again.

    The whole cause chain is read: SQLAlchemy wraps asyncpg's ``ConnectionDoesNotExistError``,
    itself raised from ``AdminShutdownError``, and a refused connection surfaces as the bare
    ``OSError`` of the connect call."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError):  # TimeoutError included
            return True
        if isinstance(cause, DBAPIError) and cause.connection_invalidated:
            return True
        state = str(getattr(cause, "sqlstate", "") or "")
        if state[:2] in _UNREACHABLE_CLASSES or state in _RETRYABLE_STATES:
            return True
        if isinstance(cause, sqlite3.OperationalError) and str(cause).lower().startswith(
            _SQLITE_UNREACHABLE
        ):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def conflicted(exc: BaseException) -> bool:
    """Whether the database rolled a transaction back for a conflict with another one
    (deadlock, serialization failure): the store answers, and running it again may succeed."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if str(getattr(cause, "sqlstate", "") or "") in _RETRYABLE_STATES:
            return True
        cause = cause.__cause__ or cause.__context__
    return False


class Store:
    """The engine and its session factories; one per process, closed on shutdown."""

    def __init__(self, engine: AsyncEngine, *, offload: Offload | None = None) -> None:
        self.engine = engine
        self._offload = offload or _to_thread
        path = sqlite_file(engine.url)
        self.plain: Engine | None = _plain_sqlite_engine(engine.url) if path else None
        """The synchronous engine :meth:`apply` runs on (a SQLite file); ``None`` elsewhere."""
        self.sessions = session_factory(engine)
        self._writers = session_factory(
            engine.execution_options(**{BEGIN_MODE_OPTION: "IMMEDIATE"})
        )
        # SQLite has one writer at a time. Queueing writers of this process on a lock keeps them
        # in order instead of polling the file lock until ``busy_timeout`` gives up under load;
        # other processes (a second server, a restarted one) still wait on the file lock.
        self._write_turn: anyio.Lock | None = anyio.Lock() if self.dialect == "sqlite" else None
        self._open = 0
        self._quiet: anyio.Event | None = None

    @classmethod
    def open(cls, url: str | URL, *, offload: Offload | None = None, **kwargs: Any) -> Store:
        return cls(create_engine(url, **kwargs), offload=offload)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A session in one transaction, for reads; it commits on exit.

        Transactions are shielded from cancellation: they are short and touch only the database,
        and a transaction cancelled half-way leaves its pooled connection (aiosqlite's worker
        thread) in a state the event loop cannot shut down cleanly."""
        joined = self._joined()
        if joined is not None:
            yield joined
            return
        with anyio.CancelScope(shield=True), self._counted():
            async with self.sessions() as session, session.begin():
                yield session

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """A session in one write transaction: commits on normal exit, rolls back on error.
        Keep it short and await nothing but the database inside it. Inside :meth:`batch` it is
        the batch's transaction: what it wrote commits (or rolls back) with the batch."""
        joined = self._joined()
        if joined is not None:
            yield joined
            return
        with anyio.CancelScope(shield=True), self._counted():
            if self._write_turn is None:
                async with self._writers() as session, session.begin():
                    yield session
                return
            async with self._write_turn, self._writers() as session, session.begin():
                yield session

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[AsyncSession]:
        """One write transaction that every :meth:`write` and :meth:`read` of this store made
        inside it, in this task, joins: they commit together on exit, or all roll back on an
        error (whichever raised). For many small writes in a row (the recorder's): one
        ``BEGIN``/``COMMIT`` and one turn of SQLite's write lock instead of one per write."""
        if self._joined() is not None:
            raise RuntimeError("a store batch does not nest")
        async with self.write() as session:
            token = _BATCH.set((self, session))
            try:
                yield session
            finally:
                _BATCH.reset(token)

    async def apply(self, writes: Sequence[CoreWrite]) -> None:
        """Run ``writes`` in order in one write transaction: all commit, or none does. A write
        that raises surfaces as :class:`WriteFailedError` naming it (its error the cause);
        what fails otherwise (connecting, the commit) surfaces as it is.

        On a SQLite file the whole transaction is one call into a worker thread on a plain
        connection (the event loop waits once, not a round trip per statement); elsewhere (an
        in-memory SQLite, PostgreSQL) the same writes run on the async engine's connection."""
        if not writes:
            return
        with anyio.CancelScope(shield=True), self._counted():
            if self._write_turn is None:
                async with self.engine.connect() as connection:
                    await connection.run_sync(_apply_all, writes)
                return
            async with self._write_turn:
                if self.plain is not None:
                    await self._offload(partial(_apply_plain, self.plain, writes))
                    return
                immediate = self.engine.execution_options(**{BEGIN_MODE_OPTION: "IMMEDIATE"})
                async with immediate.connect() as connection:
                    await connection.run_sync(_apply_all, writes)

    def _joined(self) -> AsyncSession | None:
        current = _BATCH.get()
        return current[1] if current is not None and current[0] is self else None

    @contextmanager
    def _counted(self) -> Iterator[None]:
        self._open += 1
        try:
            yield
        finally:
            self._open -= 1
            if self._open == 0 and self._quiet is not None:
                self._quiet.set()
                self._quiet = None

    @property
    def busy(self) -> bool:
        """A transaction of this process is open (its work runs in a database thread)."""
        return self._open > 0

    async def quiet(self) -> None:
        """Return once no transaction of this process is open."""
        while self._open:
            if self._quiet is None:
                self._quiet = anyio.Event()
            await self._quiet.wait()

    async def close(self) -> None:
        if self.plain is not None:
            self.plain.dispose()
        await self.engine.dispose()
