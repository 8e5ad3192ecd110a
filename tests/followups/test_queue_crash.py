"""Crash safety of the queue with a real process: SIGKILL right after each durable step of a
pass, restart on the same database, and prove the fixture call server rang the caller exactly
once, under the one operation id the first pass recorded for the attempt."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from followup_support import REPO, START, CallsServer, person, plant

WORKER = Path(__file__).with_name("tick_worker.py")


def run_worker(config: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(REPO), str(WORKER.parent), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, str(WORKER), json.dumps(config)],
                          env={**os.environ, "PYTHONPATH": path.rstrip(os.pathsep)},
                          capture_output=True, text=True, timeout=90, check=False)


def last_json(text: str) -> dict[str, Any]:
    lines = [line for line in text.splitlines() if line.startswith("{")]
    assert lines, text
    found: dict[str, Any] = json.loads(lines[-1])
    return found


def killed_then_restarted(config: dict[str, Any]) -> dict[str, Any]:
    """The worker SIGKILLed at ``config["crash_at"]``, then run again on the same database to
    the end of its pass: what the second run reported."""
    died = run_worker(config)
    assert died.returncode == -signal.SIGKILL, died.stderr[-3000:]
    assert last_json(died.stdout)["killed_at"] == config["crash_at"]
    restarted = run_worker({**config, "crash_at": ""})
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    return last_json(restarted.stdout)


@pytest.mark.slow
@pytest.mark.parametrize(("step", "lookups"), [
    ("attempt_recorded", 0),  # the operation id is on record, nothing submitted yet
    ("authorized", 0),  # operation and outbox row committed; the worker never claimed it
    ("in_flight", 1),  # marked in flight, never sent: the lookup finds nothing, send once
    ("sent", 1),  # the server rang; the receipt was never recorded: the lookup finds it
    ("committed", 0),  # the operation is settled; the follow-up was not updated yet
])
def test_sigkill_mid_tick_then_restart_rings_once(
    step: str, lookups: int, db_url: str, calls: CallsServer
) -> None:
    who = person()

    async def seed() -> str:
        async with plant(db_url, calls) as p:
            followup = await p.promise(who, due_at=START - timedelta(minutes=1))
            return followup.id

    followup_id = anyio.run(seed)
    caller = {f: getattr(who, f) for f in who.__struct_fields__} | {"token": "crash-token"}
    config = {"db": db_url, "url": calls.url, "caller": caller,
              "now": START.isoformat(), "followup_id": followup_id, "crash_at": step}
    report = killed_then_restarted(config)

    stored = report["followup"]
    assert (stored["status"], stored["attempts"], stored["attempt_operation_id"]) == (
        "placed", 1, None)
    [operation] = report["operations"]
    assert (operation["tool"], operation["status"]) == ("calls.place", "committed")
    placed = calls.placed(who.subject_ref)
    assert [c["operation_id"] for c in placed] == [operation["operation_id"]]  # rang once
    received = calls.received(who.subject_ref)
    assert {c["meta"]["io.vocero/operation_id"] for c in received} == {
        operation["operation_id"]}
    assert len(received) == 1
    assert len(calls.received(who.subject_ref, "lookup_call")) == lookups
    assert [o["status"] for o in report["outcomes"]] == ["placed"]
