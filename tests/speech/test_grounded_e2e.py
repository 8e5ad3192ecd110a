"""Grounded speech end to end over ``/v1/realtime`` with the simulators and the demo profile:
what the caller hears is approved wording or checked against its evidence, every unit is listed
with its evidence and disposition, and ``vocero review`` writes the bundle of the call."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import REPO_ROOT, Settings

ADMIN = {"authorization": "Bearer op-admin-token"}
SATURDAY = "On Saturdays our stores are open from 10 AM to 2 PM."
SCRIPT: dict[str, Any] = {
    "tts": {"ms_per_char": 2},
    "llm": [
        {"match": "saturday", "claims": ["hours.saturday"]},
        {"match": "opened", "tool": "knowledge.search", "arguments": {"query": "{last_user}"},
         "claims": "auto"},
        {"match": "when will it arrive",
         "reply": "It will arrive on Friday, March 13. Anything else?"},
        {"match": "status of order (?P<order>\\w+)", "tool": "orders.status",
         "arguments": {"order_id": "{order}"}},
        {"match": "call me", "reply": "Someone will call you tomorrow at 4 pm."},
        {"match": ".*", "reply": "I can help with orders and appointments."},
    ],
}


def spoken(pc: ProtocolClient, since: int = 0) -> str:
    return "".join(f["data"]["payload"]["text"] for f in pc.frames[since:]
                   if f["type"] == "vocero.response.text_delta.v1")


def turn(pc: ProtocolClient, text: str) -> str:
    mark = len(pc.frames)
    pc.send("input.text.v1", {"text": text})
    pc.expect("response.completed.v1")
    return spoken(pc, mark)


@pytest.fixture
def grounded(sim_settings: Settings, tmp_path: Path) -> Settings:
    script = tmp_path / "grounded.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    return replace(sim_settings, sim_script=str(script))


def test_a_demo_call_is_spoken_in_grounded_units(grounded: Settings, tmp_path: Path) -> None:
    with TestClient(create_app(grounded)) as client:
        with client.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            pc.connect()
            assert turn(pc, "What time do you open on Saturdays?") == SATURDAY
            opened = turn(pc, "Can I return an opened item?")
            assert opened.startswith("Opened items can only be returned within 14 days"), opened
            invented = turn(pc, "when will it arrive")
            assert "March 13" not in invented and "Friday" not in invented
            assert invented.startswith("I can't confirm that from the records I have.")
            assert "Anything else?" in invented, "the sentence without a fact still goes"
            status = turn(pc, "what is the status of order A123")
            assert "A123" in status and "version" not in status.lower()
            promise = turn(pc, "will you call me")
            assert "Someone will call you" not in promise, "no record backs that promise"
            assert promise == "I can't promise a call back until one is booked."
            session_id = pc.session_id
        units = client.get("/v1/units", params={"session_id": session_id},
                           headers=ADMIN).json()["items"]
        operations = client.get("/v1/operations", params={"session_id": session_id},
                                headers=ADMIN).json()["items"]
        metrics = client.get("/metrics").text

    by_text = {u["text"]: u for u in units}
    saturday = by_text[SATURDAY]
    assert (saturday["kind"], saturday["claim_keys"], saturday["disposition"]) == (
        "claim", ["hours.saturday"], "admitted")
    assert saturday["evidence"] == [{"source_id": "acme-store-hours", "version": "2026-11"}]
    assert "passage" not in json.dumps(units), "source passages never leave the store"
    refused = [u for u in units if u["disposition"] == "refused"]
    assert {u["reason_code"] for u in refused} >= {"unsupported_value", "promise_unbacked"}
    assert any("March 13" in u["text"] for u in refused)
    read_out = next(u for u in units if "A123" in u["text"])
    lookup = next(o for o in operations if o["tool"] == "orders.status")
    assert read_out["kind"] == "tool_fact"
    assert read_out["evidence"] == [{"tool_call_id": read_out["evidence"][0]["tool_call_id"]}]
    assert lookup["status"] == "committed"
    assert {u["disposition"] for u in units} <= {"admitted", "refused"}, "nothing left planned"
    assert all(u["planned_at"] for u in units)
    refusals = 'vocero_units_total{disposition="refused",reason_code="unsupported_value"} 1.0'
    assert refusals in metrics

    out = tmp_path / "review"
    done = subprocess.run(
        [sys.executable, "-m", "vocero", "review", session_id, "--out", str(out),
         "--db", grounded.db], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    bundle = json.loads((out / "bundle.json").read_text())
    assert {u["unit_id"] for u in bundle["units"]} == {u["unit_id"] for u in units}
    wavs = sorted((out / "units").glob("*.wav"))
    admitted = [u for u in units if u["disposition"] == "admitted"]
    assert len(wavs) == len(admitted) and wavs
    with (out / "rubric.csv").open() as handle:
        header = next(csv.reader(handle))
    for column in ("accuracy", "referent_clarity", "critical_value_pronunciation",
                   "recovery_after_interruption"):
        assert column in header, header
