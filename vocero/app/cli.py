"""``vocero`` command line (README.md "Using it")."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence

from vocero.app.settings import (
    add_endpoint_arguments,
    add_serve_arguments,
    db_url,
    settings_from,
)
from vocero.contracts.errors import ConfigError

Command = Callable[[argparse.Namespace], int]
"""A command that runs outside the composition root, handed in by :mod:`vocero.__main__`."""


def main(argv: Sequence[str] | None = None, commands: Mapping[str, Command] | None = None) -> int:
    """Parse ``argv`` and run its command. ``commands`` runs those declared here but built above
    the composition root (``bench``); without it they are refused with a configuration error."""
    parser = build_parser()
    args = parser.parse_args(argv)
    arguments = list(sys.argv[1:] if argv is None else argv)
    args.serve_argv = arguments[arguments.index("serve") + 1:] if "serve" in arguments else []
    try:
        if args.command in (commands or {}):
            return (commands or {})[args.command](args)
        return _run(args)
    except ConfigError as exc:
        print(f"vocero: configuration error: {exc}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    """Every command and option of ``vocero`` (the README's list is checked against it)."""
    parser = argparse.ArgumentParser(
        prog="vocero", description="Local speech-to-speech voice agent"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the server")
    add_serve_arguments(serve)
    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_commands.add_parser("upgrade", help="apply migrations up to head")
    upgrade.add_argument("--db", default=None)
    review = commands.add_parser("review", help="write a listening-review bundle of a session")
    review.add_argument("session_id")
    review.add_argument("--out", required=True)
    review.add_argument("--db", default=None)
    schema = commands.add_parser("schema", help="write the JSON Schemas of every wire event")
    schema.add_argument("--out", default=None)
    schema.add_argument("--check", action="store_true", help="fail if the committed files differ")
    followups = commands.add_parser("followups", help="the follow-up queue (docs/followups.md)")
    followup_commands = followups.add_subparsers(dest="followups_command", required=True)
    from vocero.app.commands.followups import add_tick_arguments

    add_tick_arguments(followup_commands.add_parser("tick", help="one pass of the queue"))
    from vocero.app.commands.purge import add_purge_arguments

    add_purge_arguments(commands.add_parser("purge", help="erase what retention no longer "
                                            "allows; print what was erased as JSON"))
    from vocero.app.commands.profiles import add_profiles_arguments

    add_profiles_arguments(commands.add_parser("profiles", help="versioned profiles and "
                                               "catalogs: list, history, rollback (JSON)"))
    from vocero.app.commands.backup import add_backup_arguments, add_restore_arguments

    add_backup_arguments(commands.add_parser("backup", help="a consistent copy of the store, "
                                             "taken while serving (JSON)"))
    add_restore_arguments(commands.add_parser("restore", help="restore a backup into an empty "
                                              "database (JSON)"))
    from vocero.evals.options import add_eval_arguments

    add_eval_arguments(commands.add_parser("eval", help="run conversation scenarios against a "
                                           "real server (docs/eval.md)"))
    bench = commands.add_parser("bench", help="run a benchmark and print JSON")
    bench.add_argument("name")
    bench.add_argument("--json", dest="json_file", default=None)
    bench.add_argument("--runners", default="sim")
    bench.add_argument("--suite", default=None, help="ttfa: the scenario suite (fixtures/eval)")
    bench.add_argument("--n", type=int, default=50)
    bench.add_argument("--iterations", type=int, default=200)
    bench.add_argument("--events", type=int, default=20_000, help="audit: events in the chain")
    bench.add_argument("--duration", type=float, default=10.0)
    bench.add_argument("--limit", type=int, default=None, help="first N requests only (ttfs)")
    add_endpoint_arguments(bench)  # ttfs: a stage on a serving engine, as serve takes it
    bench.add_argument("--turn-rule", choices=["judge", "hangover"], default="judge",
                       help="ttfs: end turns with the end-of-turn judge or a fixed silence")
    bench.add_argument("--half", choices=["tuning", "heldout", "both", "dev"], default="tuning",
                       help="ttfs: which half of the turn corpus (fixtures/turns) to speak "
                       "(both: tuning and heldout; dev: the tuning half's development set); "
                       "the spoken requests run with the tuning half")
    bench.add_argument("--drafts", choices=["on", "off", "both"], default="on",
                       help="ttfs: sessions prepare the answer at a pause (on), do not (off), "
                       "or both runs back to back on the same clips (ADR-0037)")
    bench.add_argument("--workers", type=int, default=1,
                       help="server processes (sessions, actions); more than one: PostgreSQL")
    bench.add_argument("--db", default="", help="database URL (sessions, actions)")
    bench.add_argument("--search", action="store_true",
                       help="sessions: the most sessions held within limits")
    bench.add_argument("--minutes", type=float, default=5.0, help="soak: how long the load runs")
    bench.add_argument("--sessions", type=int, default=50, help="soak: callers kept live")
    bench.add_argument("--per-impairment", type=int, default=3,
                       help="network: sessions through each impaired path")
    bench.add_argument("--sample-s", type=float, default=5.0,
                       help="soak: seconds between samples of the server")
    bench.add_argument("--html", dest="html_file", default=None,
                       help="soak: write a self-contained HTML report here")
    bench.add_argument("--samples", dest="samples_file", default=None,
                       help="soak: append each sample here as a JSON line when it is taken")
    bench.add_argument("--turns", type=int, default=100, help="client: measured typed turns")
    bench.add_argument("--interruptions", type=int, default=50,
                       help="client: measured barge-ins")
    bench.add_argument("--pipecat", default="", metavar="PYTHON",
                       help="client: also run the Pipecat peer bench with this interpreter "
                       "(one with pipecat-ai), back to back, and report the ratios")
    bench.add_argument("--pipecat-script", default="",
                       help="client: the peer's bench_pipecat.py (default: "
                       "../shared/peers/pipecat/ beside the repository)")
    return parser


def _run(args: argparse.Namespace) -> int:
    if args.command == "serve" and args.print_config:
        from vocero.app.commands.print_config import print_config

        return print_config(settings_from(args), args.serve_argv)
    if args.command == "serve":
        from vocero.app.serve import serve

        return serve(settings_from(args), args.serve_argv)
    if args.command == "db":
        from vocero.app.settings import Settings
        from vocero.store.migrate import upgrade

        upgrade(db_url(args.db or _env_db() or Settings().db))
        print("database at head")
        return 0
    if args.command == "followups":
        from vocero.app.commands.followups import tick_command

        return tick_command(args)
    if args.command == "profiles":
        from vocero.app.commands.profiles import profiles_command

        return profiles_command(args)
    if args.command in ("backup", "restore"):
        from vocero.app.commands.backup import backup_command, restore_command

        return (backup_command if args.command == "backup" else restore_command)(args)
    if args.command == "purge":
        from vocero.app.commands.purge import purge_command

        return purge_command(args)
    if args.command == "review":
        from vocero.app.commands.review import review_command
        from vocero.app.settings import Settings

        return review_command(args, db_url(args.db or _env_db() or Settings().db))
    if args.command == "schema":
        from vocero.app.commands.schema import check_schemas, write_schemas

        return check_schemas(args.out) if args.check else write_schemas(args.out)
    if args.command == "eval":
        from vocero.evals.command import eval_command

        return eval_command(args)
    raise ConfigError("vocero", args.command, "runs only through the `vocero` command")


def _env_db() -> str:
    import os

    return os.environ.get("VOCERO_DB", "")
