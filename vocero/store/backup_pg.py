"""PostgreSQL's own tools for ``vocero backup`` / ``restore``: ``pg_dump --format=custom`` (one
consistent snapshot, taken while the server serves) and ``pg_restore --single-transaction``.

The tools are looked up on ``PATH``, then under ``/usr/lib/postgresql/<version>/bin`` (the
newest version first: ``pg_dump`` must be at least as new as the server). The password travels
in ``PGPASSWORD``, never on a command line other processes can read.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from sqlalchemy import URL

from vocero.store.backup_manifest import BackupError

_TIMEOUT_S = 6 * 3600


def find_tool(name: str) -> str:
    """The path of ``pg_dump`` or ``pg_restore``; :class:`BackupError` ``tool_missing``."""
    found = shutil.which(name)
    if found:
        return found
    candidates = glob.glob(f"/usr/lib/postgresql/*/bin/{name}")
    candidates.sort(key=_version_of, reverse=True)
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    raise BackupError("tool_missing", f"{name} not found on PATH or under "
                      "/usr/lib/postgresql/*/bin; install the PostgreSQL client tools")


def _version_of(path: str) -> int:
    match = re.search(r"/postgresql/(\d+)/", path)
    return int(match.group(1)) if match else 0


def libpq_args(url: URL) -> tuple[list[str], dict[str, str]]:
    """Connection options for the tools (``--dbname`` without the password) and the
    environment that carries the password."""
    plain = url.set(drivername="postgresql", password=None)
    env = dict(os.environ)
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    return [f"--dbname={plain.render_as_string(hide_password=False)}"], env


def dump(url: URL, out: Path) -> None:
    """``pg_dump`` of the database at ``url`` to ``out`` in custom format."""
    args, env = libpq_args(url)
    _run([find_tool("pg_dump"), "--format=custom", "--no-owner", "--no-privileges",
          f"--file={out}", *args], env)


def restore(url: URL, archive: Path) -> None:
    """``pg_restore`` of ``archive`` into the database at ``url``, all or nothing."""
    args, env = libpq_args(url)
    _run([find_tool("pg_restore"), "--single-transaction", "--exit-on-error", "--no-owner",
          "--no-privileges", *args, str(archive)], env)


def _run(command: list[str], env: dict[str, str]) -> None:
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackupError("tool_failed", f"{Path(command[0]).name}: {exc}") from None
    if done.returncode != 0:
        raise BackupError("tool_failed", f"{Path(command[0]).name} exited "
                          f"{done.returncode}: {done.stderr.strip()[-2000:]}")
