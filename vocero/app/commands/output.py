"""How every one-shot command talks to its caller: standard output carries one JSON document and
nothing else (log lines go to standard error), a refusal is ``vocero: <reason>`` on standard
error with exit status 2, and ``--now`` is read one way everywhere."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any


class CommandError(Exception):
    """A refusal of the command's input: printed as ``vocero: <message>``, exit status 2."""


def run_json_command(body: Callable[[], tuple[int, Any]]) -> int:
    """Run ``body`` (which returns its exit status and its JSON document) with logging routed to
    standard error, and print the document on one line, keys sorted."""
    from vocero.observability.logging import configure_logging

    configure_logging("console", "warning", route_stdlib=True)
    try:
        code, document = body()
    except CommandError as exc:
        print(f"vocero: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(document, sort_keys=True), flush=True)
    return code


def parse_now(text: str | None) -> datetime:
    """``--now``: an RFC 3339 instant with its offset, in UTC; absent, the current time."""
    if not text:
        return datetime.now(UTC)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise CommandError(f"bad --now: {exc}") from None
    if moment.tzinfo is None:
        raise CommandError(
            "bad --now: --now needs an offset (RFC3339), e.g. 2026-12-04T16:00:00Z")
    return moment.astimezone(UTC)
