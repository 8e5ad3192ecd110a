"""Writing and reading the backup file (:mod:`vocero.store.backup_manifest`): an uncompressed
tar of the manifest and the payload, written beside its destination (mode 0600) and renamed into
place, so a half-written file never carries the destination's name."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import time
from pathlib import Path

from vocero.store.backup_manifest import (
    MANIFEST_NAME,
    PAYLOAD_NAME,
    BackupError,
    Manifest,
    check_payload,
    parse_manifest,
)

_CHUNK = 1 << 20
_MANIFEST_MAX = 64 * 1024


def digest(path: Path) -> tuple[int, str]:
    """Size and SHA-256 (hex) of the file at ``path``."""
    sha, size = hashlib.sha256(), 0
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            sha.update(chunk)
            size += len(chunk)
    return size, sha.hexdigest()


def write_archive(out: Path, manifest: Manifest, payload: Path) -> int:
    """Write the backup file ``out``; its size in bytes."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    raw = manifest.encode()
    partial.touch(mode=0o600)  # records of callers: readable by the owner only
    partial.chmod(0o600)
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo(MANIFEST_NAME)
        info.size, info.mtime, info.mode = len(raw), int(time.time()), 0o600
        archive.addfile(info, io.BytesIO(raw))
        with payload.open("rb") as stream:
            info = tarfile.TarInfo(PAYLOAD_NAME)
            info.size, info.mtime, info.mode = manifest.payload_bytes, int(time.time()), 0o600
            archive.addfile(info, stream)
    with partial.open("rb") as written:
        os.fsync(written.fileno())
    os.replace(partial, out)
    return out.stat().st_size


def read_manifest(path: Path) -> Manifest:
    """The manifest of the backup file at ``path`` (nothing else is read)."""
    try:
        with tarfile.open(path, "r:") as archive:
            return parse_manifest(_member(archive, MANIFEST_NAME, _MANIFEST_MAX))
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise BackupError("corrupt", f"{path} is not a readable backup file ({exc})") from None


def extract_payload(path: Path, manifest: Manifest, dest: Path) -> None:
    """Copy the payload of ``path`` to ``dest``, checked against ``manifest`` (size, SHA-256);
    ``dest`` is removed when the check fails."""
    sha, size = hashlib.sha256(), 0
    try:
        with tarfile.open(path, "r:") as archive:
            member = archive.getmember(PAYLOAD_NAME)
            source = archive.extractfile(member)
            if source is None:
                raise BackupError("corrupt", "the payload is not a file")
            with source, dest.open("wb") as sink:
                while chunk := source.read(_CHUNK):
                    sha.update(chunk)
                    size += len(chunk)
                    sink.write(chunk)
        check_payload(manifest, size, sha.hexdigest())
    except (tarfile.TarError, EOFError, KeyError, OSError) as exc:
        dest.unlink(missing_ok=True)
        raise BackupError("corrupt", f"the payload of {path} cannot be read ({exc})") from None
    except BackupError:
        dest.unlink(missing_ok=True)
        raise


def _member(archive: tarfile.TarFile, name: str, limit: int) -> bytes:
    try:
        member = archive.getmember(name)
    except KeyError:
        raise BackupError("corrupt", f"no {name} in the backup file") from None
    source = archive.extractfile(member)
    if source is None or member.size > limit:
        raise BackupError("corrupt", f"{name} is not a small file")
    with source:
        return source.read()
