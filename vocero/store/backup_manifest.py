"""The backup file's format, sans IO: a tar archive of ``manifest.json`` then ``payload``.

The manifest says what the payload is (``vocero backup``; docs/operations.md "Backup and
restore"): the format version, the source dialect (``sqlite``: the database file as SQLite's
online backup API copied it; ``postgresql``: a ``pg_dump`` custom-format archive), the schema's
Alembic revision, when the copy was taken, and the payload's size and SHA-256. ``vocero restore``
reads the manifest before it touches anything and refuses (:class:`BackupError`, exit 2) a file
that is not one, is of a newer format, of the other dialect, or whose payload does not hash to
what the manifest says.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

FORMAT = "vocero-backup"
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
PAYLOAD_NAME = "payload"
DIALECTS = ("sqlite", "postgresql")


class BackupError(Exception):
    """A backup or restore refused, with a stable ``reason``: ``corrupt``, ``newer_format``,
    ``newer_schema``, ``cross_dialect``, ``not_empty``, ``no_database``, ``unsupported_url``,
    ``tool_missing``, ``tool_failed``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    dialect: str
    alembic_revision: str
    created_at: str
    """RFC 3339, UTC: when the copy's snapshot was taken."""
    payload_sha256: str
    payload_bytes: int
    format: str = FORMAT
    format_version: int = FORMAT_VERSION

    def public(self) -> dict[str, Any]:
        return asdict(self)

    def encode(self) -> bytes:
        return json.dumps(self.public(), sort_keys=True, indent=1).encode("utf-8")


def parse_manifest(raw: bytes) -> Manifest:
    """The manifest in ``raw``; :class:`BackupError` ``corrupt`` or ``newer_format`` if it is not
    one this version can read."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BackupError("corrupt", "the manifest is not JSON") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BackupError("corrupt", "not a Vocero backup (no vocero-backup manifest)")
    version = data.get("format_version")
    if not isinstance(version, int):
        raise BackupError("corrupt", "the manifest has no format_version")
    if version > FORMAT_VERSION:
        raise BackupError("newer_format", f"backup format {version} is newer than this "
                          f"Vocero reads ({FORMAT_VERSION}); restore it with a newer Vocero")
    fields = ("dialect", "alembic_revision", "created_at", "payload_sha256")
    if any(not isinstance(data.get(name), str) for name in fields) or not isinstance(
            data.get("payload_bytes"), int):
        raise BackupError("corrupt", "the manifest lacks a field: " + ", ".join(fields))
    if data["dialect"] not in DIALECTS:
        raise BackupError("corrupt", f"unknown source dialect {data['dialect']!r}")
    return Manifest(dialect=data["dialect"], alembic_revision=data["alembic_revision"],
                    created_at=data["created_at"], payload_sha256=data["payload_sha256"],
                    payload_bytes=data["payload_bytes"], format_version=version)


def check_payload(manifest: Manifest, size: int, sha256: str) -> None:
    """The payload read back is the one the manifest describes (a truncated or altered file is
    refused before anything is restored)."""
    if size != manifest.payload_bytes:
        raise BackupError("corrupt", f"payload is {size} bytes, the manifest says "
                          f"{manifest.payload_bytes} (truncated?)")
    if sha256 != manifest.payload_sha256:
        raise BackupError("corrupt", "payload SHA-256 differs from the manifest's")


def check_target(manifest: Manifest, target_dialect: str) -> None:
    """A backup restores into a database of its own dialect only (docs/operations.md)."""
    if manifest.dialect != target_dialect:
        raise BackupError("cross_dialect", f"a {manifest.dialect} backup cannot be restored "
                          f"into {target_dialect}; restore it into a {manifest.dialect} "
                          "database (cross-dialect copies are not supported)")
