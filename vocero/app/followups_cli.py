"""``vocero followups tick``'s flags (SPEC §1), kept light: the wiring loads only when it runs."""

from __future__ import annotations

import argparse
import os


def add_tick_arguments(parser: argparse.ArgumentParser) -> None:
    """SPEC §1: ``vocero followups tick [--db URL] [--now RFC3339] [--profiles DIR]
    [--identities FILE]`` (each flag also reads ``VOCERO_<FLAG>``)."""
    from vocero.app.settings import Settings

    defaults = Settings()
    env = os.environ.get
    parser.add_argument("--db", default=env("VOCERO_DB", defaults.db))
    parser.add_argument("--now", default=env("VOCERO_NOW") or None,
                        help="RFC3339 instant the pass runs at (default: now)")
    parser.add_argument("--profiles", default=env("VOCERO_PROFILES", defaults.profiles))
    parser.add_argument("--identities", default=env("VOCERO_IDENTITIES", defaults.identities))
    parser.add_argument("--settle-s", dest="settle_s", type=float, default=20.0,
                        help="how long to wait for placed calls to settle")
