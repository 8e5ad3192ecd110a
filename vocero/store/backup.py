"""``vocero backup`` and ``vocero restore`` (docs/operations.md "Backup and restore").

A backup is the database's own online copy, taken while servers write: SQLite's backup API
(one step under one read transaction: a consistent snapshot; WAL writers go on) or ``pg_dump``
(one repeatable-read snapshot). It is wrapped with a manifest (:mod:`.backup_manifest`).

A restore goes into an empty database only (no tables; a SQLite file that does not exist yet),
of the backup's own dialect, and refuses anything else before touching the target. SQLite is
restored to a file beside the target and renamed into place; PostgreSQL in one ``pg_restore``
transaction. A backup of an older schema is migrated to head. Last, the holds of the source's
processes are let go (their nodes ended, their outbox rows, sessions and named leases expired):
no process serves the restored store yet, so a server started on it takes them over at once
and recovers them as after a crash: an operation caught ``in_flight`` is reconciled by lookup
before anything is sent again, a committed one is done. The audit chain is not touched (no
event is added: its head is the source's).
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import URL, CursorResult, text, update

from vocero.store import backup_pg
from vocero.store.backup_archive import digest, extract_payload, read_manifest, write_archive
from vocero.store.backup_manifest import BackupError, Manifest, check_target
from vocero.store.engine import Store, async_url, sqlite_file
from vocero.store.migrate import alembic_config, upgrade
from vocero.store.models import LeaseRow, NodeRow, OutboxRow, SessionRow


@dataclass(frozen=True, slots=True)
class BackupReport:
    out: str
    bytes: int
    manifest: Manifest
    elapsed_s: float

    def public(self) -> dict[str, Any]:
        return {"out": self.out, "bytes": self.bytes, "manifest": self.manifest.public(),
                "elapsed_s": round(self.elapsed_s, 3)}


@dataclass(frozen=True, slots=True)
class RestoreReport:
    db: str
    manifest: Manifest
    revision: str
    migrated_from: str
    released: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0

    def public(self) -> dict[str, Any]:
        return {"db": self.db, "manifest": self.manifest.public(), "revision": self.revision,
                "migrated_from": self.migrated_from, "released": self.released,
                "elapsed_s": round(self.elapsed_s, 3)}


# ----------------------------------------------------------------------------- backup


def take_backup(url: str | URL, out: Path) -> BackupReport:
    """Copy the store at ``url`` into the backup file ``out`` (replaced if it exists)."""
    started = time.perf_counter()
    target = async_url(url)
    out = out.resolve()
    payload = out.with_name(f".{out.name}.payload")
    created_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    try:
        if target.get_backend_name() == "sqlite":
            revision = _sqlite_snapshot(_sqlite_path(target, must_exist=True), payload)
        elif target.get_backend_name() == "postgresql":
            revision = anyio.run(_pg_revision, target)
            backup_pg.dump(target, payload)
        else:
            raise BackupError("unsupported_url", f"no backup for {target.get_backend_name()}")
        size, sha = digest(payload)
        manifest = Manifest(dialect=target.get_backend_name(), alembic_revision=revision,
                            created_at=created_at, payload_sha256=sha, payload_bytes=size)
        written = write_archive(out, manifest, payload)
    finally:
        payload.unlink(missing_ok=True)
    return BackupReport(str(out), written, manifest, time.perf_counter() - started)


def _sqlite_snapshot(source: Path, dest: Path) -> str:
    """SQLite's online backup of ``source`` into ``dest`` (one self-contained file, rollback
    journal); the schema revision it holds."""
    dest.unlink(missing_ok=True)
    src = sqlite3.connect(source, timeout=15.0)
    try:
        copy = sqlite3.connect(dest)
        try:
            src.backup(copy)  # pages=-1: the whole database in one step, one snapshot
            revision = _sqlite_revision(copy)
            copy.execute("PRAGMA journal_mode=DELETE")
        finally:
            copy.close()
    finally:
        src.close()
    if revision is None:
        raise BackupError("no_database", f"{source} is not a Vocero store (no schema revision)")
    return revision


def _sqlite_revision(connection: sqlite3.Connection) -> str | None:
    try:
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.DatabaseError:
        return None
    return str(row[0]) if row else None


async def _pg_revision(url: URL) -> str:
    store = Store.open(url)
    try:
        async with store.read() as session:
            exists = await session.scalar(text("SELECT to_regclass('alembic_version')"))
            revision = await session.scalar(text(
                "SELECT version_num FROM alembic_version")) if exists else None
    except Exception as exc:
        raise BackupError("no_database", f"cannot read the database: {exc}") from None
    finally:
        await store.close()
    if revision is None:
        raise BackupError("no_database", "not a Vocero store (no schema revision)")
    return str(revision)


# ---------------------------------------------------------------------------- restore


def restore_backup(path: Path, url: str | URL) -> RestoreReport:
    """Restore the backup file ``path`` into the empty database at ``url``."""
    started = time.perf_counter()
    target = async_url(url)
    manifest = read_manifest(path)
    check_target(manifest, target.get_backend_name())
    _check_revision_known(manifest.alembic_revision, target)
    if target.get_backend_name() == "sqlite":
        revision = _restore_sqlite(path, manifest, target)
    else:
        revision = _restore_pg(path, manifest, target)
    released = anyio.run(_release_holds, target)
    return RestoreReport(target.render_as_string(hide_password=True), manifest,
                         _head(target), revision if revision != _head(target) else "",
                         released, time.perf_counter() - started)


def _head(url: URL) -> str:
    return str(ScriptDirectory.from_config(alembic_config(str(url))).get_current_head())


def _check_revision_known(revision: str, url: URL) -> None:
    """A backup of a schema this Vocero does not know (a newer one) is refused."""
    scripts = ScriptDirectory.from_config(alembic_config(str(url)))
    try:
        known = scripts.get_revision(revision)
    except CommandError:
        known = None
    if known is None:
        raise BackupError("newer_schema", f"the backup's schema revision {revision!r} is "
                          f"unknown here (head {scripts.get_current_head()}): restore it "
                          "with the Vocero version that took it, or a newer one")


def _restore_sqlite(path: Path, manifest: Manifest, target: URL) -> str:
    final = _sqlite_path(target, must_exist=False)
    _require_empty_sqlite(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    staged = final.with_name(f".{final.name}.restoring")
    for leftover in _with_journals(staged):
        leftover.unlink(missing_ok=True)
    try:
        extract_payload(path, manifest, staged)
        check = sqlite3.connect(staged)
        try:
            ok = check.execute("PRAGMA quick_check").fetchone()
            revision = _sqlite_revision(check)
        except sqlite3.DatabaseError as exc:
            raise BackupError("corrupt", f"the payload is not a SQLite database ({exc})") from None
        finally:
            check.close()
        if ok is None or ok[0] != "ok" or revision is None:
            raise BackupError("corrupt", "the payload fails SQLite's integrity check")
        upgrade(_plain(target.set(database=str(staged))))
        _require_empty_sqlite(final)  # still empty: nothing wrote it meanwhile
        for stale in _with_journals(final)[1:]:
            stale.unlink(missing_ok=True)
        staged.replace(final)
    finally:
        for leftover in _with_journals(staged):
            leftover.unlink(missing_ok=True)
    return revision


def _with_journals(path: Path) -> list[Path]:
    return [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]


def _require_empty_sqlite(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = connection.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
        finally:
            connection.close()
    except sqlite3.DatabaseError as exc:
        raise BackupError("not_empty", f"{path} exists and is not an empty SQLite database "
                          f"({exc})") from None
    if tables:
        raise BackupError("not_empty", f"{path} already holds {tables} tables; restore into "
                          "a new database (nothing was changed)")


def _sqlite_path(url: URL, *, must_exist: bool) -> Path:
    path = sqlite_file(url)
    if path is None:
        raise BackupError("unsupported_url", "an in-memory SQLite database has no file to copy")
    if must_exist and not path.is_file():
        raise BackupError("no_database", f"no SQLite database at {path}")
    return path


def _restore_pg(path: Path, manifest: Manifest, target: URL) -> str:
    anyio.run(_require_empty_pg, target)
    with tempfile.TemporaryDirectory(prefix="vocero-restore-") as folder:
        staged = Path(folder) / "payload.pgdump"  # checked before pg_restore reads it
        extract_payload(path, manifest, staged)
        backup_pg.restore(target, staged)
    revision = anyio.run(_pg_revision, target)
    upgrade(_plain(target))
    return revision


async def _require_empty_pg(url: URL) -> None:
    store = Store.open(url)
    try:
        async with store.read() as session:
            tables = await session.scalar(text(
                "SELECT count(*) FROM pg_tables "
                "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"))
    except Exception as exc:
        raise BackupError("no_database", f"cannot reach the target database (create it "
                          f"first): {exc}") from None
    finally:
        await store.close()
    if tables:
        raise BackupError("not_empty", f"the target database already holds {tables} tables; "
                          "restore into a new database (nothing was changed)")


async def _release_holds(url: URL) -> dict[str, int]:
    """End the source's nodes and expire what they held (see the module's docstring)."""
    now = datetime.now(UTC)
    store = Store.open(url)
    try:
        async with store.write() as session:
            statements = {
                "nodes": update(NodeRow).where(NodeRow.ended_at.is_(None)).values(
                    ended_at=now, ending="expired", expires_at=now),
                "outbox": update(OutboxRow).where(
                    OutboxRow.done.is_(False), OutboxRow.claimed_by.is_not(None)
                ).values(lease_expires_at=now, claimed_at=None),
                "sessions": update(SessionRow).where(
                    SessionRow.owner_id.is_not(None), SessionRow.closed_at.is_(None)
                ).values(lease_expires_at=now),
                "leases": update(LeaseRow).where(LeaseRow.owner_id.is_not(None)).values(
                    expires_at=now),
            }
            released: dict[str, int] = {}
            for name, statement in statements.items():
                result = await session.execute(statement)
                assert isinstance(result, CursorResult)
                released[name] = int(result.rowcount)
            return released
    finally:
        await store.close()


def _plain(url: URL) -> str:
    return url.render_as_string(hide_password=False)
