"""``vocero backup`` / ``vocero restore`` refusals and schema handling (the drill with live
sessions is ``tests/policy/test_backup_restore.py``): a backup of an older schema is migrated to
head on restore; a newer schema or format, a backup of the other dialect, a file that is not a
backup, a missing source: exit 2 with the reason, and the target is never created."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from tests.support.commands import run_cli
from tests.support.db import migrated_copy
from tests.support.pg import fresh_db
from vocero.store import AuditLog, Store, upgrade
from vocero.store.backup_archive import write_archive
from vocero.store.backup_manifest import Manifest
from vocero.store.migrate import alembic_config

HEAD = str(ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head())


@contextmanager
def empty_like(url: str, path: Path) -> Iterator[str]:
    if url.startswith("sqlite"):
        yield f"sqlite:///{path}"
        return
    with fresh_db() as made:
        yield made


async def _append_and_head(url: str) -> str:
    store = Store.open(url)
    try:
        event = await AuditLog(store).append("drill.event", {"n": 1})
        return event.hash
    finally:
        await store.close()


async def _revision_and_chain(url: str) -> tuple[str, bool, int]:
    store = Store.open(url)
    try:
        async with store.read() as session:
            revision = await session.scalar(sa.text("SELECT version_num FROM alembic_version"))
        chain = await AuditLog(store).verify(full=True)
        return str(revision), chain.ok, chain.count
    finally:
        await store.close()


def test_a_backup_of_an_older_schema_is_migrated_to_head(
    empty_url: str, tmp_path: Path
) -> None:
    upgrade(empty_url, "0012")
    head_hash = anyio.run(_append_and_head, empty_url)
    code, made = run_cli("backup", "--out", str(tmp_path / "old.vbk"), "--db", empty_url)
    assert code == 0, made
    assert made["manifest"]["alembic_revision"] == "0012"
    assert (tmp_path / "old.vbk").stat().st_mode & 0o777 == 0o600  # the owner's only
    with empty_like(empty_url, tmp_path / "restored.db") as target:
        code, restored = run_cli("restore", str(tmp_path / "old.vbk"), "--db", target)
        assert code == 0, restored
        assert (restored["revision"], restored["migrated_from"]) == (HEAD, "0012")
        assert anyio.run(_revision_and_chain, target) == (HEAD, True, 1)
        store_head = anyio.run(_head_hash, target)
        assert store_head == head_hash


async def _head_hash(url: str) -> str:
    store = Store.open(url)
    try:
        [event] = await AuditLog(store).events()
        return event.hash
    finally:
        await store.close()


def _rewrite_manifest(source: Path, out: Path, **changes: object) -> None:
    """``source`` with its manifest changed (its payload, size and hash kept)."""
    with tarfile.open(source) as archive:
        fields = json.loads(archive.extractfile("manifest.json").read())  # type: ignore[union-attr]
        payload = out.with_suffix(".payload")
        payload.write_bytes(archive.extractfile("payload").read())  # type: ignore[union-attr]
    fields.update(changes)
    write_archive(out, Manifest(**fields), payload)


@pytest.mark.parametrize(("changes", "reason"), [
    ({"alembic_revision": "9999"}, "newer_schema"),
    ({"format_version": 2}, "newer_format"),
    ({"payload_sha256": "0" * 64}, "corrupt"),
    ({"payload_bytes": 1}, "corrupt"),
])
def test_a_file_this_version_cannot_restore_is_refused_before_anything_is_written(
    tmp_path: Path, changes: dict[str, object], reason: str
) -> None:
    source = migrated_copy(tmp_path / "source.db")
    assert run_cli("backup", "--out", str(tmp_path / "good.vbk"), "--db", source)[0] == 0
    _rewrite_manifest(tmp_path / "good.vbk", tmp_path / "bad.vbk", **changes)
    code, said = run_cli("restore", str(tmp_path / "bad.vbk"), "--db",
                         f"sqlite:///{tmp_path / 'target.db'}")
    assert code == 2
    assert said["stderr"].startswith(f"vocero: {reason}:")
    assert not (tmp_path / "target.db").exists()
    assert not list(tmp_path.glob(".target.db*"))  # no staged file left behind


def test_a_backup_restores_only_into_its_own_dialect(tmp_path: Path) -> None:
    source = migrated_copy(tmp_path / "source.db")
    assert run_cli("backup", "--out", str(tmp_path / "b.vbk"), "--db", source)[0] == 0
    # refused from the manifest alone: no server is asked
    code, said = run_cli("restore", str(tmp_path / "b.vbk"), "--db",
                         "postgresql://nobody@127.0.0.1:9/nowhere")
    assert code == 2
    assert said["stderr"].startswith("vocero: cross_dialect: a sqlite backup cannot be restored "
                                     "into postgresql")


def test_what_is_not_a_backup_or_not_a_store_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a backup\n" * 100)
    code, said = run_cli("restore", str(tmp_path / "notes.txt"), "--db",
                         f"sqlite:///{tmp_path / 'target.db'}")
    assert (code, said["stderr"].split(":")[1].strip()) == (2, "corrupt")
    code, said = run_cli("backup", "--out", str(tmp_path / "b.vbk"), "--db",
                         f"sqlite:///{tmp_path / 'missing.db'}")
    assert (code, said["stderr"].split(":")[1].strip()) == (2, "no_database")
    assert not (tmp_path / "missing.db").exists()
    assert not (tmp_path / "target.db").exists()
