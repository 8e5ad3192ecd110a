"""A one-shot ``vocero`` command run in the test's own process (the console script's entry,
:func:`vocero.app.cli.main`, without a second interpreter's start-up), its exit status and
its JSON output (or, when it printed none, its standard error)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
from typing import Any

import structlog

from vocero.app.cli import main


def run_cli(*argv: str) -> tuple[int, dict[str, Any]]:
    """``vocero <argv>``. The command routes logging to standard error; the test's logging
    configuration is put back after it."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        structlog.configure(**saved)
        root.handlers[:] = handlers
        root.setLevel(level)
    printed = out.getvalue().strip()
    return code, json.loads(printed) if printed else {"stderr": err.getvalue()}
