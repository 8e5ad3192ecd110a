"""``vocero backup --out FILE [--db URL]`` and ``vocero restore FILE --db URL``
(docs/operations.md "Backup and restore"; the work is :mod:`vocero.store.backup`).

Each prints one JSON document (what was written or restored, its manifest, the time it took).
A refusal (a non-empty target, a corrupted or truncated file, a newer schema, a backup of the
other dialect) is ``vocero: <reason>: <detail>`` on standard error, exit 2, nothing changed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from vocero.app.commands.output import CommandError, run_json_command


def add_backup_arguments(parser: argparse.ArgumentParser) -> None:
    from vocero.app.settings import Settings

    parser.add_argument("--out", required=True, help="the backup file to write")
    parser.add_argument("--db", default=os.environ.get("VOCERO_DB", Settings().db))


def add_restore_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a file written by `vocero backup`")
    env = os.environ.get("VOCERO_DB")
    parser.add_argument("--db", default=env, required=not env,
                        help="an empty database of the backup's dialect")


def backup_command(args: argparse.Namespace) -> int:
    from vocero.app.settings import db_url
    from vocero.store.backup import take_backup

    return _refusing(lambda: take_backup(db_url(args.db), Path(args.out)).public())


def restore_command(args: argparse.Namespace) -> int:
    from vocero.app.settings import db_url
    from vocero.store.backup import restore_backup

    return _refusing(lambda: restore_backup(Path(args.file), db_url(args.db)).public())


def _refusing(body: Any) -> int:
    from vocero.store.backup_manifest import BackupError

    def run() -> tuple[int, Any]:
        try:
            return 0, body()
        except BackupError as refused:
            raise CommandError(str(refused)) from None

    return run_json_command(run)
