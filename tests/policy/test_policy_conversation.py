"""The action path end to end through ``/v1/realtime`` with the simulators: scripted tool and
confirmation intents, the real gateway on the recording fixture servers, and the operator API."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from policy_support import FixtureServers
from starlette.testclient import TestClient

from tests.support.wsclient import ProtocolClient
from vocero.app.runtime import no_gateway
from vocero.app.server import create_app
from vocero.app.settings import REPO_ROOT, Settings
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import Caller
from vocero.policy import CoordinatorSettings

OPERATOR = {"authorization": "Bearer op-admin-token"}
SCRIPT: dict[str, Any] = {
    "tts": {"ms_per_char": 2},
    "llm": [
        {"match": r"^(yes|yeah|go ahead)\b", "intent": "confirm"},
        {"match": r"^(no|nope)\b", "intent": "reject"},
        {"match": r"^i think so", "intent": "uncertain"},
        {"match": r"list my appointments", "tool": "appointments.list",
         "reply": "I found your appointments."},
        {"match": r"move my appointment (?P<apt>[\w-]+) to (?P<day>\w+) at (?P<at>\w+)",
         "tool": "appointments.reschedule",
         "arguments": {"appointment_id": "{apt}", "new_date": "{day}", "new_time": "{at}"},
         "reply": "{result.summary}"},
        {"match": r"^(yes|yeah|go ahead)\b", "tool": "appointments.reschedule",
         "reply": "{result.summary}"},
        {"match": r"close my account", "tool": "account.close",
         "arguments": {"account_id": "ACC-1"}, "reply": "Done."},
        {"match": r"call me back (?P<when>.+) about (?P<why>.+)", "tool": "followups.record",
         "arguments": {"when": "{when}", "reason": "{why}"}, "reply": "{result.summary}"},
        {"match": ".*", "reply": "I can help with appointments."},
    ],
}


@dataclass
class App:
    client: TestClient
    servers: FixtureServers
    subjects: dict[str, str]
    clock: VirtualClock

    def advance(self, seconds: float) -> None:
        """Move the action path's clock on, in the server's own event loop."""
        assert self.client.portal is not None
        self.client.portal.call(self.clock.advance, seconds)

    def subject_ref(self, token: str) -> str:
        who = Caller(token=token, subject=self.subjects[token], tenant="acme")
        return who.subject_ref

    def reschedules(self, token: str) -> list[dict[str, Any]]:
        return self.servers.calls("appointments", self.subject_ref(token),
                                  "reschedule_appointment")

    def get(self, path: str) -> Any:
        response = self.client.get(path, headers=OPERATOR)
        assert response.status_code == 200, response.text
        return response.json()


def identities(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """fixtures/identities.yaml with subjects of this test's own."""
    data = yaml.safe_load((REPO_ROOT / "fixtures" / "identities.yaml").read_text())
    subjects = {}
    for entry in data["callers"]:
        entry["subject"] = f"{entry['subject']}-{uuid.uuid4().hex[:12]}"
        subjects[entry["token"]] = entry["subject"]
    path = tmp_path / "identities.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path), subjects


def profiles(tmp_path: Path, servers: FixtureServers) -> str:
    """fixtures/profiles/demo.yaml with its MCP servers at the running recording fixtures."""
    data = yaml.safe_load((REPO_ROOT / "fixtures" / "profiles" / "demo.yaml").read_text())
    data["mcp_servers"] = {name: {"url": servers.url(name)} for name in data["mcp_servers"]
                           if name in servers.ports}
    data["claims"] = str(REPO_ROOT / "fixtures" / "profiles" / data["claims"])
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "demo.yaml").write_text(yaml.safe_dump(data))
    return str(folder)


@contextmanager
def app(tmp_path: Path, servers: FixtureServers, *, gateway: bool = True,
        settings: CoordinatorSettings | None = None, db: str = "") -> Iterator[App]:
    """The real composition root (its own MCP connections, its outbox worker)."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    identities_file, subjects = identities(tmp_path)
    config = Settings(runners="sim", db=db or f"sqlite+aiosqlite:///{tmp_path}/vocero.db",
                      sim_script=str(script), operator_token="op-admin-token",
                      identities=identities_file, profiles=profiles(tmp_path, servers))
    with TestClient(create_app(config, gateway_for=None if gateway else no_gateway)) as client:
        runtime = client.app.state.runtime  # type: ignore[attr-defined]
        clock = VirtualClock(start=time.time())  # confirmation lifetimes pass when told to
        runtime.actions.clock = runtime.actions.repo.clock = clock
        if settings is not None:
            runtime.actions.settings = settings
        yield App(client, servers, subjects, clock)


def say(pc: ProtocolClient, text: str) -> dict[str, Any]:
    """Send a typed turn; the payload of the response.completed of its last generation."""
    pc.send("input.text.v1", {"text": text})
    return pc.expect("response.completed.v1")["data"]["payload"]


def spoken(pc: ProtocolClient, since: int) -> str:
    return "".join(f["data"]["payload"]["text"] for f in pc.frames[since:]
                   if f["type"] == "vocero.response.text_delta.v1")


def statuses(pc: ProtocolClient) -> list[tuple[str, str]]:
    return [(p["status"], p["reason_code"]) for p in pc.of_type("tool.status.v1")]


@contextmanager
def connect(a: App, token: str = "demo-token") -> Iterator[ProtocolClient]:
    with a.client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect(token)
        yield pc


def ask_to_move(pc: ProtocolClient, day: str = "friday") -> dict[str, Any]:
    pc.send("input.text.v1", {"text": f"move my appointment APT-1001 to {day} at 3pm"})
    question = pc.expect("tool.confirmation_required.v1")["data"]["payload"]
    pc.expect("response.completed.v1")
    return dict(question)


def until_settled(pc: ProtocolClient) -> str:
    status = pc.expect("tool.status.v1", lambda p: p["status"] in (
        "committed", "rejected", "unknown"))["data"]["payload"]
    if status["status"] != "committed":
        return f"{status['status']}:{status['reason_code']}"
    return str(status["status"])


# ------------------------------------------------------------------------------------ cases


def test_spoken_confirmation_end_to_end(
    tmp_path: Path, db_url: str, servers: FixtureServers
) -> None:
    with app(tmp_path, servers, db=db_url) as a:
        with connect(a) as pc:
            say(pc, "list my appointments")
            question = ask_to_move(pc)
            assert question["tool"] == "appointments.reschedule"
            assert question["fields"]["appointment_id"] == "APT-1001"
            assert question["fields"]["timezone"] == "Europe/Madrid"
            assert "3 PM" in question["summary"]
            assert question["expires_at"].endswith("Z")
            mark = len(pc.frames)
            pc.send("input.text.v1", {"text": "yes"})
            assert until_settled(pc) == "committed"
            pc.expect("response.completed.v1")
            assert spoken(pc, mark).startswith("Done: your appointment APT-1001 is rescheduled")
            assert [s for s, _ in statuses(pc)][-4:] == [
                "authorized", "dispatch_pending", "in_flight", "committed"]
        [call] = a.reschedules("demo-token")
        ops = a.get(f"/v1/operations?session_id={pc.session_id}")["items"]
        [write] = [op for op in ops if op["proposal_id"]]
        assert (write["tool"], write["status"], write["attempts"], write["revision"]) == (
            "appointments.reschedule", "committed", 1, question["revision"])
        assert write["proposal_id"] == question["proposal_id"]
        assert write["receipt"]["content"]["status"] == "rescheduled"
        assert call["meta"]["io.vocero/operation_id"] == write["operation_id"]
        audit = a.get(f"/v1/audit?session_id={pc.session_id}")
        assert audit["chain"]["ok"]
        kinds = [item["kind"] for item in audit["items"]]
        assert "confirmation.confirmed" in kinds
        assert "operation.committed" in kinds


def test_ambiguous_answer_and_yes_without_question(tmp_path: Path, db_url: str,
                                                   servers: FixtureServers) -> None:
    with app(tmp_path, servers, db=db_url) as a:
        with connect(a) as pc:
            say(pc, "yes")  # nothing was asked: the model answers, nothing is authorized
            assert not pc.of_type("tool.confirmation_required.v1")
            say(pc, "list my appointments")
            ask_to_move(pc)
            mark = len(pc.frames)
            say(pc, "I think so")
            assert spoken(pc, mark).startswith("Sorry, I didn't catch that. To confirm: move")
            assert "authorized" not in [s for s, _ in statuses(pc)]
            assert a.reschedules("demo-token") == []
            pc.send("input.text.v1", {"text": "yes"})
            assert until_settled(pc) == "committed"
        assert len(a.reschedules("demo-token")) == 1


def test_interrupted_read_back_does_not_bind(
    tmp_path: Path, db_url: str, servers: FixtureServers
) -> None:
    with app(tmp_path, servers, db=db_url) as a:
        with connect(a) as pc:
            say(pc, "list my appointments")
            pc.auto_playout = False
            pc.send("input.text.v1", {"text": "move my appointment APT-1001 to friday at 3pm"})
            pc.expect("tool.confirmation_required.v1")
            pc.send("input.speech_started.v1")  # the caller talks over the read-back
            completed = pc.expect("response.completed.v1")["data"]["payload"]
            assert completed["status"] == "interrupted"
            pc.auto_playout = True
            mark = len(pc.frames)
            say(pc, "yes")  # before the values were heard: not consent, asked again briefly
            assert spoken(pc, mark).startswith("Let me finish first. To confirm: move")
            assert a.reschedules("demo-token") == []
            pc.send("input.text.v1", {"text": "yes"})  # after hearing it in full
            assert until_settled(pc) == "committed"
        assert len(a.reschedules("demo-token")) == 1


def test_duplicate_button_confirmations_make_one_effect(tmp_path: Path, db_url: str,
                                                        servers: FixtureServers) -> None:
    with app(tmp_path, servers, db=db_url) as a:
        with connect(a) as pc:
            say(pc, "list my appointments")
            question = ask_to_move(pc)
            button = {"proposal_id": question["proposal_id"], "revision": question["revision"],
                      "decision": "confirm"}
            pc.send("tool.confirmation_submitted.v1", button)
            pc.send("tool.confirmation_submitted.v1", button)
            assert until_settled(pc) == "committed"
            error = pc.expect("error.v1")["data"]["payload"]
            assert error["code"] == "CONFIRMATION_INVALID"
            assert ("rejected", "confirmation_used") in statuses(pc)
        assert len(a.reschedules("demo-token")) == 1
        ops = a.get(f"/v1/operations?session_id={pc.session_id}")["items"]
        assert len([op for op in ops if op["proposal_id"]]) == 1


def test_button_for_an_old_revision_is_refused(
    tmp_path: Path, db_url: str, servers: FixtureServers
) -> None:
    with app(tmp_path, servers, settings=CoordinatorSettings(confirmation_ttl_s=1.5),
             db=db_url) as a:
        with connect(a) as pc:
            say(pc, "list my appointments")
            first = ask_to_move(pc, "friday")
            a.advance(1.6)
            mark = len(pc.frames)
            say(pc, "yes")  # too late: the question expired
            assert "expired" in spoken(pc, mark)
            second = ask_to_move(pc, "saturday")
            assert (second["proposal_id"], second["revision"]) == (first["proposal_id"], 2)
            pc.send("tool.confirmation_submitted.v1", {
                "proposal_id": first["proposal_id"], "revision": 1, "decision": "confirm"})
            assert pc.expect("error.v1")["data"]["payload"]["code"] == "PROPOSAL_CHANGED"
            assert ("rejected", "proposal_changed") in statuses(pc)
            assert a.reschedules("demo-token") == []
            pc.send("tool.confirmation_submitted.v1", {
                "proposal_id": second["proposal_id"], "revision": 2, "decision": "confirm"})
            assert until_settled(pc) == "committed"
        [call] = a.reschedules("demo-token")
        assert call["arguments"]["new_date"] == second["fields"]["new_date"]


def test_denials_are_explained_and_counted(
    tmp_path: Path, db_url: str, servers: FixtureServers
) -> None:
    with app(tmp_path, servers, db=db_url) as a:
        with connect(a) as pc:
            mark = len(pc.frames)
            say(pc, "close my account")
            assert spoken(pc, mark) == "I'm not able to do that over the phone."
            assert statuses(pc) == [("rejected", "prohibited")]
        with connect(a, "readonly-token") as readonly:
            say(readonly, "move my appointment APT-1001 to friday at 3pm")
            assert statuses(readonly) == [("rejected", "scope_missing")]
        assert a.servers.calls("admin", a.subject_ref("demo-token")) == []
        assert a.reschedules("readonly-token") == []
        metrics = a.client.get("/metrics").text
        assert 'vocero_denials_total{reason_code="prohibited"} 1.0' in metrics
        assert 'vocero_denials_total{reason_code="scope_missing"} 1.0' in metrics


def test_without_a_gateway_mcp_tools_are_unavailable(tmp_path: Path, db_url: str,
                                                     servers: FixtureServers) -> None:
    with app(tmp_path, servers, gateway=False, db=db_url) as a:
        with connect(a) as pc:
            say(pc, "list my appointments")
            assert statuses(pc) == [("rejected", "authorization_unavailable")]
            # Vocero's own tools do not need MCP
            mark = len(pc.frames)
            say(pc, "call me back tomorrow at 10am about the invoice")
            assert statuses(pc)[-1] == ("committed", "")
            assert spoken(pc, mark).startswith("Done: your call-back is recorded")
        ops = a.get(f"/v1/operations?session_id={pc.session_id}")["items"]
        assert [(op["tool"], op["status"]) for op in ops] == [("followups.record", "committed")]
        assert a.client.get("/v1/operations").status_code == 401


def test_a_correction_during_the_read_back_black_box(tmp_path: Path, db_url: str,
                                                     servers: FixtureServers) -> None:
    """SPEC §2: a changed value said over the read-back is a new revision with its own prompt
    and read-back; the old revision can no longer be confirmed; the "yes" runs the new one."""
    with app(tmp_path, servers, db=db_url) as a:
        with connect(a) as pc:
            say(pc, "list my appointments")
            pc.auto_playout = False
            pc.send("input.text.v1", {"text": "move my appointment APT-1001 to sunday at 3pm"})
            first = pc.expect("tool.confirmation_required.v1")["data"]["payload"]
            pc.expect("response.audio_delta.v1")  # the read-back is being spoken
            pc.auto_playout = True
            mark = len(pc.frames)
            pc.send("input.text.v1",
                    {"text": "actually, move my appointment APT-1001 to friday at 3pm"})
            stop = pc.expect("output.stop_and_flush.v1")["data"]["payload"]
            assert stop["reason"] == "new_input"
            second = pc.expect("tool.confirmation_required.v1")["data"]["payload"]
            pc.expect("response.completed.v1", lambda p: p["status"] == "completed")
            assert (second["proposal_id"], second["revision"]) == (first["proposal_id"], 2)
            assert second["fields"]["new_date"] != first["fields"]["new_date"]
            assert "Friday" in spoken(pc, mark) and "Sunday" not in spoken(pc, mark)
            pc.send("tool.confirmation_submitted.v1", {
                "proposal_id": first["proposal_id"], "revision": 1, "decision": "confirm"})
            assert pc.expect("error.v1")["data"]["payload"]["code"] == "PROPOSAL_CHANGED"
            pc.send("input.text.v1", {"text": "yes"})
            assert until_settled(pc) == "committed"
        [call] = a.reschedules("demo-token")
        assert call["arguments"]["new_date"] == second["fields"]["new_date"]
        ops = a.get(f"/v1/operations?session_id={pc.session_id}")["items"]
        [write] = [op for op in ops if op["proposal_id"]]
        assert (write["revision"], write["status"]) == (2, "committed")
