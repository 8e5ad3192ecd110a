"""Crash safety with a real process: SIGKILL at every durable step, restart, and prove exactly
one effect per authorized operation, none for unauthorized ones, and nothing lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from policy_support import REPO, FixtureServers

from vocero.contracts.domain import Caller
from vocero.store import AuditLog, Store

WORKER = Path(__file__).with_name("crash_worker.py")


def run_worker(config: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get(
        "PYTHONPATH", "")]).rstrip(os.pathsep)}
    return subprocess.run([sys.executable, str(WORKER), json.dumps(config)], env=env,
                          capture_output=True, text=True, timeout=90, check=False)


def last_json(text: str) -> dict[str, Any]:
    lines = [line for line in text.splitlines() if line.startswith("{")]
    assert lines, text
    result: dict[str, Any] = json.loads(lines[-1])
    return result


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "lookups", "attempts", "reason"),
    [
        ("authorized", 0, 1, ""),  # committed with its outbox row; the worker never claimed it
        ("dispatch_pending", 0, 1, ""),  # claimed by the worker that died
        ("in_flight", 1, 2, ""),  # marked in flight, never sent: lookup finds nothing, send
        ("sent", 1, 1, "reconciled"),  # the server committed; the receipt was never recorded
        ("committed", 0, 1, ""),  # fully recorded: nothing left to do
    ],
)
def test_sigkill_at_every_durable_step(
    step: str, lookups: int, attempts: int, reason: str, db_url: str,
    servers: FixtureServers,
) -> None:
    db = db_url
    subject = f"crash-{uuid.uuid4().hex}"
    config = {"db": db, "urls": {name: servers.url(name) for name in servers.ports},
              "subject": subject, "session_id": f"ses_{uuid.uuid4().hex[:16]}",
              "crash_at": step}

    died = run_worker({**config, "mode": "act"})
    assert died.returncode == -signal.SIGKILL, died.stderr[-3000:]
    killed = last_json(died.stdout)
    assert killed["killed_at"] == step
    operation_id = killed["operation_id"]

    restarted = run_worker({**config, "mode": "recover"})
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    report = last_json(restarted.stdout)

    subject_ref = Caller(token="crash", subject=subject, tenant="acme").subject_ref
    calls = servers.calls("appointments", subject_ref)
    sent = [c for c in calls if c["tool"] == "reschedule_appointment"]
    assert len(sent) == 1
    assert {c["arguments"]["appointment_id"] for c in sent} == {"APT-1001"}  # never APT-1002
    assert {c["meta"]["io.vocero/operation_id"] for c in sent} == {operation_id}
    assert len([c for c in calls if c["tool"] == "lookup_operation"]) == lookups
    # exactly one effect at the owning service
    assert set(servers.receipts("appointments", {operation_id})) == {operation_id}

    [write] = [op for op in report["operations"] if op["proposal_id"]]
    assert write["operation_id"] == operation_id
    assert (write["status"], write["reason_code"], write["attempts"]) == (
        "committed", reason, attempts)
    assert write["receipt"] is not None
    states = sorted(report["proposals"].values())
    assert states == ["authorized", "open"]  # the unanswered one was never authorized

    import anyio

    async def chain() -> tuple[bool, list[str]]:
        store = Store.open(db)
        try:
            log = AuditLog(store)
            kinds = [e.kind for e in await log.events(session_id=config["session_id"])]
            return (await log.verify()).ok, kinds
        finally:
            await store.close()

    ok, kinds = anyio.run(chain)
    assert ok
    assert kinds.count("operation.authorized") == 1
    assert kinds.count("operation.committed") == 1
    if step in ("in_flight", "sent"):
        assert "operation.unknown" in kinds
