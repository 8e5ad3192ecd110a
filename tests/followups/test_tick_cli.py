"""``vocero followups tick --now``: one pass of the queue from the command line, JSON out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import anyio
import yaml
from followup_support import REPO, START, CallsServer

from vocero.app.settings import REPO_ROOT
from vocero.contracts.domain import Caller
from vocero.followups.records import FollowupDraft, new_id
from vocero.followups.sql import SqlFollowupStore
from vocero.store import Store
from vocero.store.repositories import Conversations


def tick(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("VOCERO_DB", None)
    return subprocess.run([sys.executable, "-m", "vocero", "followups", "tick", *args],
                          env=env, capture_output=True, text=True, timeout=90, check=False)


def test_one_pass_places_what_is_due_and_prints_the_outcomes(
    tmp_path: Path, db_url: str, calls: CallsServer
) -> None:
    db = db_url
    demo = yaml.safe_load((REPO_ROOT / "fixtures" / "profiles" / "demo.yaml").read_text())
    demo["mcp_servers"] = {"calls": {"url": calls.url}}
    demo["tools"] = [t for t in demo["tools"] if t["server"] == "calls"
                     or t["resolves_to"] == "followups.record"]
    demo.pop("claims", None)
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "demo.yaml").write_text(yaml.safe_dump(demo))
    subject = f"cli-{uuid.uuid4().hex}"
    who = Caller(token="cli-token", subject=subject, tenant="acme", roles=["customer"],
                 scopes=["followups:write"], timezone="Europe/Madrid", phone="+34611111111")
    (tmp_path / "identities.yaml").write_text(yaml.safe_dump({"callers": [{
        "token": "cli-token", "subject": subject, "tenant": "acme", "roles": ["customer"],
        "scopes": ["followups:write"], "locale": "en-US", "timezone": "Europe/Madrid",
        "phone": "+34611111111"}]}))

    async def seed() -> str:
        store = Store.open(db)
        try:
            session_id = new_id("ses")
            await Conversations(store).create_session(
                session_id=session_id, tenant_id="acme", subject_ref=who.subject_ref,
                profile_id="demo", profile_version=str(demo["version"]))
            record, _ = await SqlFollowupStore(store).record(FollowupDraft(
                session_id=session_id, tenant_id="acme", subject_ref=who.subject_ref,
                when_text="tomorrow at 9", due_at=START + timedelta(hours=1),
                timezone="Europe/Madrid", channel="phone", reason="the invoice",
                operation_id=new_id("op")), START)
            return record.id
        finally:
            await store.close()

    followup_id = anyio.run(seed)
    flags = ["--db", db, "--profiles", str(tmp_path / "profiles"),
             "--identities", str(tmp_path / "identities.yaml")]
    early = tick(*flags, "--now", START.isoformat())
    assert early.returncode == 0, early.stderr[-3000:]
    assert json.loads(early.stdout) == {"now": START.isoformat(), "outcomes": []}  # JSON only
    due = tick(*flags, "--now", (START + timedelta(hours=1, minutes=1)).isoformat())
    assert due.returncode == 0, due.stderr[-3000:]
    report = json.loads(due.stdout)
    [outcome] = report["outcomes"]
    assert (outcome["followup_id"], outcome["status"], outcome["attempts"]) == (
        followup_id, "placed", 1)
    [call] = calls.placed(who.subject_ref)
    assert (call["phone"], call["operation_id"]) == ("+34611111111", outcome["operation_id"])
    refused = tick(*flags, "--now", "tomorrow")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert "--now" in refused.stderr
