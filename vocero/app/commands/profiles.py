"""``vocero profiles list|history ID|rollback ID VERSION [--db URL]``
(docs/operators.md "Profiles").

Each prints one JSON document on standard output. ``rollback`` takes a declared version (what
sessions report as ``profile_version``) or ``rN`` for one revision; a running server gives the
next session the rolled-back revision without a restart. Unknown profile or version: exit 2
with ``{"error": {"code", "field", "reason"}}`` on standard output.
"""

from __future__ import annotations

import argparse
import getpass
import os
from typing import Any

import anyio

from vocero.app.commands.output import run_json_command


def add_profiles_arguments(parser: argparse.ArgumentParser) -> None:
    from vocero.app.settings import Settings

    commands = parser.add_subparsers(dest="profiles_command", required=True)
    listing = commands.add_parser("list", help="every profile and its active version")
    history = commands.add_parser("history", help="every version of one profile")
    history.add_argument("profile_id")
    rollback = commands.add_parser("rollback", help="make an earlier version the active one")
    rollback.add_argument("profile_id")
    rollback.add_argument("version", help="declared version, or rN for revision N")
    rollback.add_argument("--reason", default="")
    for command in (listing, history, rollback):
        command.add_argument("--db", default=os.environ.get("VOCERO_DB", Settings().db))


def profiles_command(args: argparse.Namespace) -> int:
    from vocero.app.settings import db_url

    return run_json_command(lambda: anyio.run(_run, db_url(args.db), args))


async def _run(url: str, args: argparse.Namespace) -> tuple[int, Any]:
    from vocero.app.adapters import profile_versions as pv
    from vocero.store.engine import Store
    from vocero.store.migrate import upgrade_async

    await upgrade_async(url)
    store = Store.open(url)
    try:
        if args.profiles_command == "list":
            return 0, {"items": await pv.listing(store)}
        if args.profiles_command == "history":
            items = await pv.history(store, args.profile_id)
            if items is None:
                return 2, _error("profile_id", "unknown_profile")
            return 0, {"items": items}
        try:
            done = await pv.rollback(store, args.profile_id, args.version, actor=_actor(),
                                     via="cli", reason=args.reason)
        except pv.RollbackError as bad:
            return 2, _error(bad.field, bad.reason)
        return 0, done
    finally:
        await store.close()


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


def _error(field: str, reason: str) -> dict[str, Any]:
    return {"error": {"code": "invalid_request", "field": field, "reason": reason}}
