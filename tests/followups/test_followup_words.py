"""What the caller hears of a call-back comes from the record the store holds (issue #25,
item 2), on the simulator path: the sim model calls the tool and leaves the wording to the
read-out, as the CPU runners do. A new record, a duplicate, a task and a refused ``when``, each
held against the rows of ``/v1/followups``. The built-in is given another model-facing name:
nothing may hang on the demo's."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.apps import sim_app
from tests.support.wsclient import ProtocolClient
from vocero.app.settings import REPO_ROOT

pytestmark = pytest.mark.process

ADMIN = {"authorization": "Bearer op-admin-token"}
SCRIPT: dict[str, Any] = {
    "tts": {"ms_per_char": 1},
    "llm": [
        {"match": r"ring me sometime", "tool": "callbacks.book",
         "arguments": {"when": "Friday 3pm", "reason": "a question about my order"}},
        {"match": r"call me back (?P<when>.+?) about (?P<why>.+)", "tool": "callbacks.book",
         "arguments": {"when": "{when}", "reason": "{why}"}},
        {"match": ".*", "reply": "I can help with call-backs."},
    ],
}


def profile() -> dict[str, Any]:
    demo = yaml.safe_load((REPO_ROOT / "fixtures" / "profiles" / "demo.yaml").read_text())
    [builtin] = [t for t in demo["tools"] if t["resolves_to"] == "followups.record"]
    builtin["name"] = "callbacks.book"
    builtin.pop("readout")
    demo["tools"], demo["mcp_servers"] = [builtin], {}
    for key in ("claims", "followups"):
        demo.pop(key)
    return dict(demo)


def caller() -> dict[str, Any]:
    people = yaml.safe_load((REPO_ROOT / "fixtures" / "identities.yaml").read_text())
    return dict(next(p for p in people["callers"] if p["token"] == "demo-token"))


def said(pc: ProtocolClient, text: str) -> str:
    pc.send("input.text.v1", {"text": text})
    return str(pc.expect("response.completed.v1")["data"]["payload"]["heard_text"])


def test_the_words_of_a_call_back_are_those_of_its_record(tmp_path: Path) -> None:
    with sim_app(tmp_path, profile(), [caller()], SCRIPT, operator_token="op-admin-token") as app:
        with app.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            pc.connect("demo-token")
            booked = said(pc, "call me back tomorrow at 4pm about my refund")
            again = said(pc, "call me back tomorrow at 4pm about my refund")
            task = said(pc, "call me back tomorrow at 10am about sending the quotation")
            refused = said(pc, "ring me sometime")
            session_id = pc.session_id
        rows = app.get("/v1/followups", params={"session_id": session_id},
                       headers=ADMIN).json()["items"]
    by_channel = {r["channel"]: r for r in rows}
    assert sorted(by_channel) == ["phone", "task"] and len(rows) == 2, rows
    phone, work = by_channel["phone"], by_channel["task"]
    due = datetime.fromisoformat(phone["due_at"])
    assert (due.hour, phone["status"], phone["reason"]) == (16, "scheduled", "my refund")
    assert booked == f"I've booked a call back for tomorrow, {due:%B} {due.day} at 4 PM."
    assert again == f"You already have a call back booked for tomorrow, {due:%B} {due.day} at " \
                    "4 PM."
    work_due = datetime.fromisoformat(work["due_at"])
    assert work["status"] == "task"
    assert task == f"I've passed that on to the team, due tomorrow, {work_due:%B} " \
                   f"{work_due.day} at 10 AM."
    assert "booked" not in refused and "passed that on" not in refused, refused
    assert "Friday" not in refused or "?" in refused, "a time nobody said is asked, not booked"
