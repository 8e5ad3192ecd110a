"""Follow-ups end to end through ``/v1/realtime`` with the simulators and the real composition
root: a model that invents a time records nothing and promises nothing aloud; a promise that
slips through as plain words becomes a ``promised_unbooked`` finding; a time the caller said is
booked, listed, held for approval and placed through the fixture call server when due."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from followup_support import CallsServer
from starlette.testclient import TestClient

from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import REPO_ROOT, Settings
from vocero.contracts.domain import Caller
from vocero.followups.promises import promises

ADMIN = {"authorization": "Bearer op-admin-token"}
SECURITY = {"authorization": "Bearer sec-token"}
OWNER = {"authorization": "Bearer biz-token"}
SCRIPT: dict[str, Any] = {
    "tts": {"ms_per_char": 1},
    "llm": [
        {"match": r"ring me sometime", "tool": "followups.record",
         "arguments": {"when": "Friday 3pm", "reason": "a question about my order"},
         "reply": "{result.summary}"},
        {"match": r"call me back (?P<when>.+) about (?P<why>.+)", "tool": "followups.record",
         "arguments": {"when": "{when}", "reason": "{why}"}, "reply": "{result.summary}"},
        {"match": r"^thanks", "reply": "Hum aapko call karenge."},
        {"match": ".*", "reply": "I can help with orders and appointments."},
    ],
}


@dataclass
class App:
    client: TestClient
    calls: CallsServer
    subjects: dict[str, str]

    @property
    def runtime(self) -> Any:
        return self.client.app.state.runtime  # type: ignore[attr-defined]

    def subject_ref(self, token: str = "demo-token") -> str:
        return Caller(token=token, subject=self.subjects[token], tenant="acme").subject_ref

    def get(self, path: str, headers: dict[str, str] = ADMIN) -> Any:
        response = self.client.get(path, headers=headers)
        assert response.status_code == 200, response.text
        return response.json()

    def tick(self, at: datetime) -> list[Any]:
        assert self.client.portal is not None
        return self.client.portal.call(self.runtime.followups.queue.tick, at)  # type: ignore[no-any-return]


def write_config(tmp_path: Path, calls: CallsServer, autonomy: str,
                 followups: dict[str, Any] | None = None) -> tuple[str, str, dict[str, str]]:
    demo = yaml.safe_load((REPO_ROOT / "fixtures" / "profiles" / "demo.yaml").read_text())
    demo["mcp_servers"] = {"calls": {"url": calls.url}}
    demo["tools"] = [t for t in demo["tools"] if t["server"] == "calls"
                     or t["resolves_to"] == "followups.record"]
    demo.pop("claims", None)
    demo["followups"] |= {"autonomy": autonomy, **(followups or {})}
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "demo.yaml").write_text(yaml.safe_dump(demo))
    people = yaml.safe_load((REPO_ROOT / "fixtures" / "identities.yaml").read_text())
    subjects = {}
    for entry in people["callers"]:
        entry["subject"] = f"{entry['subject']}-{uuid.uuid4().hex[:12]}"
        subjects[entry["token"]] = entry["subject"]
    identities = tmp_path / "identities.yaml"
    identities.write_text(yaml.safe_dump(people))
    return str(folder), str(identities), subjects


@contextmanager
def app(tmp_path: Path, calls: CallsServer, *, autonomy: str = "auto",
        db: str = "", followups: dict[str, Any] | None = None) -> Iterator[App]:
    """The server on the demo profile's follow-up parts; ``followups`` overrides its block."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    operators = tmp_path / "operators.yaml"
    operators.write_text("- {token: sec-token, name: sam, roles: [security]}\n"
                         "- {token: biz-token, name: bea, roles: [business_owner]}\n")
    profiles, identities, subjects = write_config(tmp_path, calls, autonomy, followups)
    settings = Settings(runners="sim", db=db or f"sqlite+aiosqlite:///{tmp_path}/vocero.db",
                        sim_script=str(script), operator_token="op-admin-token",
                        operators=str(operators), identities=identities, profiles=profiles,
                        followups_tick_s=0)
    with TestClient(create_app(settings)) as client:
        assert client.portal is not None
        client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
        yield App(client, calls, subjects)


def say(pc: ProtocolClient, text: str) -> str:
    """Send a typed turn; what the caller heard of the reply."""
    pc.send("input.text.v1", {"text": text})
    return str(pc.expect("response.completed.v1")["data"]["payload"]["heard_text"])


@contextmanager
def connect(a: App, token: str = "demo-token") -> Iterator[ProtocolClient]:
    with a.client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect(token)
        yield pc
        pc.send("session.close.v1")


def statuses(pc: ProtocolClient) -> list[tuple[str, str]]:
    return [(p["status"], p["reason_code"]) for p in pc.of_type("tool.status.v1")]


# ------------------------------------------------------------------------------------ cases


def test_an_invented_time_books_nothing_and_a_slipped_promise_is_a_finding(
    tmp_path: Path, db_url: str, calls: CallsServer
) -> None:
    with app(tmp_path, calls, db=db_url) as a:
        with connect(a) as pc:
            asked = say(pc, "please ring me sometime about my order")
            assert statuses(pc) == [("rejected", "when_mismatch")]
            assert asked == "Shall we call you at three on Friday afternoon?"  # a read-back
            assert promises(asked) == []  # a question: nothing promised aloud
            slipped = say(pc, "thanks, that is all for today")
            assert slipped == "Hum aapko call karenge."
            session_id = pc.session_id
        assert a.get(f"/v1/followups?session_id={session_id}") == {"items": []}
        ops = a.get(f"/v1/operations?session_id={session_id}")["items"]
        assert [op for op in ops if op["tool"] == "followups.record"] == []
        findings = a.get(f"/v1/findings?session_id={session_id}")["items"]
        assert [(f["kind"], f["text"]) for f in findings] == [
            ("promised_unbooked", "Hum aapko call karenge.")]
        assert findings[0]["generation_id"]
        assert a.get("/v1/findings?kind=promised_unbooked")["items"] == findings
        metrics = a.client.get("/metrics").text
        assert 'vocero_findings_total{kind="promised_unbooked"} 1.0' in metrics
        assert a.client.get("/v1/findings").status_code == 401
        assert a.calls.received(a.subject_ref()) == []


def test_a_time_the_caller_said_is_booked_and_placed_when_due(
    tmp_path: Path, db_url: str, calls: CallsServer
) -> None:
    with app(tmp_path, calls, db=db_url) as a:
        with connect(a) as pc:
            heard = say(pc, "call me back in 10 minutes about the invoice")
            assert statuses(pc)[-1] == ("committed", "")
            assert heard.startswith("Done: your call-back is recorded")
            session_id = pc.session_id
        [booked] = a.get(f"/v1/followups?session_id={session_id}")["items"]
        assert (booked["when_text"], booked["channel"], booked["status"], booked["timezone"]) == (
            "in 10 minutes", "phone", "scheduled", "Europe/Madrid")
        assert booked["due_at"].endswith(("+01:00", "+02:00"))  # RFC3339, the caller's offset
        assert booked["reason"] == "the invoice"
        due = datetime.fromisoformat(booked["due_at"])
        assert timedelta(minutes=9) < due - datetime.now(UTC) <= timedelta(minutes=10)
        assert a.get(f"/v1/findings?session_id={session_id}")["items"] == []  # it is backed
        assert a.tick(datetime.now(UTC)) == []  # not due yet
        [placed] = a.tick(due + timedelta(minutes=1))
        assert (placed.followup_id, placed.status) == (booked["id"], "placed")
        [call] = a.calls.placed(a.subject_ref())
        assert (call["phone"], call["followup_id"]) == ("+34600000001", booked["id"])
        [listed] = a.get("/v1/followups?status=placed")["items"]
        assert (listed["id"], listed["attempts"]) == (booked["id"], 1)


def test_one_caller_cannot_spend_the_tenants_call_backs(
    tmp_path: Path, db_url: str, calls: CallsServer
) -> None:
    """Issue 26 (1): with ``autonomy: auto`` one caller booked call-backs an hour apart until
    the tenant's budget for the day was gone. Now a fourth waiting call-back is refused aloud
    and not recorded, the caller's call-backs ring at most their share of the day
    (``caller_daily_share`` 0.25 of 3: one), and another caller of the tenant is still rung."""
    with app(tmp_path, calls, db=db_url, followups={"daily_budget": 3}) as a:
        with connect(a) as pc:
            for when in ("tomorrow at 9am", "tomorrow at 10:05am", "tomorrow at 11:10am"):
                say(pc, f"call me back {when} about spam")
                assert statuses(pc)[-1] == ("committed", "")
            refused = say(pc, "call me back tomorrow at 12:15pm about spam")
            assert statuses(pc)[-1] == ("rejected", "caller_limit")
            assert "no more can be booked" in refused
            assert promises(refused) == []
            session_id = pc.session_id
        booked = a.get(f"/v1/followups?session_id={session_id}")["items"]
        assert sorted(f["when_text"] for f in booked) == [
            "tomorrow at 10:05am", "tomorrow at 11:10am", "tomorrow at 9am"]  # no fourth row
        dues = sorted(datetime.fromisoformat(f["due_at"]) for f in booked)
        rung = [o for due in dues for o in a.tick(due + timedelta(minutes=1))]
        assert [(o.status, o.outcome_reason) for o in rung] == [
            ("placed", ""), ("refused", "caller_budget"), ("refused", "caller_budget")]
        assert len(a.calls.placed(a.subject_ref())) == 1
        with connect(a, "agent-token") as other:
            say(other, "call me back in 10 minutes about my order")
            assert statuses(other)[-1] == ("committed", "")
        [theirs] = a.get(f"/v1/followups?session_id={other.session_id}")["items"]
        [placed] = a.tick(datetime.fromisoformat(theirs["due_at"]) + timedelta(minutes=1))
        assert (placed.followup_id, placed.status) == (theirs["id"], "placed")
        assert len(a.calls.placed(a.subject_ref("agent-token"))) == 1


def test_a_session_books_at_most_its_cap_and_a_long_reason_is_asked_again(
    tmp_path: Path, db_url: str, calls: CallsServer
) -> None:
    """Issue 26 (2): one session created 511 follow-ups and a ``reason`` of 60,000 characters.
    Past ``max_per_session`` nothing is recorded and the caller hears so; a reason too long to
    keep whole is asked again, before anything (even the operation) is stored."""
    with app(tmp_path, calls, db=db_url, followups={"max_per_session": 1}) as a:
        with connect(a) as pc:
            asked = say(pc, "call me back in 10 minutes about " + "spam " * 200)
            assert statuses(pc)[-1] == ("rejected", "arguments_unresolved")
            assert asked == "Briefly, what should the follow-up be about?"
            say(pc, "call me back in 10 minutes about the invoice")
            assert statuses(pc)[-1] == ("committed", "")
            refused = say(pc, "call me back tomorrow at 4pm about the refund")
            assert statuses(pc)[-1] == ("rejected", "session_limit")
            assert refused.endswith("No more follow-ups can be booked in this call.")
            session_id = pc.session_id
        [kept] = a.get(f"/v1/followups?session_id={session_id}")["items"]
        assert kept["reason"] == "the invoice"
        recorded = [op for op in a.get(f"/v1/operations?session_id={session_id}")["items"]
                    if op["tool"] == "followups.record"]
        assert sorted(op["status"] for op in recorded) == ["committed", "rejected"]


def test_held_call_backs_are_released_by_an_operator(
    tmp_path: Path, db_url: str, calls: CallsServer
) -> None:
    with app(tmp_path, calls, autonomy="approve", db=db_url) as a:
        with connect(a) as pc:
            say(pc, "call me back in 10 minutes about the refund")
        [booked] = a.get("/v1/followups?status=scheduled")["items"]
        later = datetime.fromisoformat(booked["due_at"]) + timedelta(minutes=1)
        [held] = a.tick(later)
        assert held.status == "awaiting_approval"
        assert [f["id"] for f in a.get("/v1/followups?status=awaiting_approval",
                                       headers=SECURITY)["items"]] == [booked["id"]]
        path = f"/v1/followups/{booked['id']}/approve"
        assert a.client.post(path, json={"note": "ok"}).status_code == 401
        assert a.client.post(path, json={"note": "ok"}, headers=SECURITY).status_code == 403
        bad = a.client.post(path, json={"note": 5}, headers=OWNER)
        assert bad.status_code == 400
        assert bad.json()["error"]["field"] == "note"
        assert a.client.post("/v1/followups/fup_nope/approve", json={},
                             headers=OWNER).status_code == 404
        assert a.calls.received(a.subject_ref()) == []
        released = a.client.post(path, json={"note": "customer asked twice"}, headers=OWNER)
        assert released.status_code == 200, released.text
        assert (released.json()["status"], released.json()["approved_by"]) == ("scheduled", "bea")
        again = a.client.post(path, json={}, headers=OWNER)
        assert (again.status_code, again.json()["error"]["code"]) == (409,
                                                                     "not_awaiting_approval")
        [placed] = a.tick(later)
        assert placed.status == "placed"
        assert len(a.calls.placed(a.subject_ref())) == 1
        assert a.client.get("/v1/followups?status=bogus", headers=ADMIN).status_code == 400
        kinds = [e["kind"] for e in a.get("/v1/audit")["items"]]
        assert "followup.approved" in kinds


def test_a_promise_heard_before_a_crash_is_a_finding_after_the_restart(
    tmp_path: Path, db_url: str, calls: CallsServer
) -> None:
    """A process killed mid-call never closes its sessions; the restart closes them as crashed
    (SPEC §2) and reviews what the caller heard like any ended session's."""
    import anyio

    from vocero.store import Store
    from vocero.store.repositories import Conversations

    async def left_by_a_crash(url: str) -> None:
        store = Store.open(url)
        repo = Conversations(store)
        try:
            await repo.create_session(session_id="ses_crashed", tenant_id="acme",
                                      subject_ref="sub_1", profile_id="demo", profile_version="1",
                                      state="SPEAKING", resume_token_hash="c" * 16)
            await repo.add_turn(session_id="ses_crashed", turn_id="turn_1", source="text",
                                text="my parcel never came and nobody answers the phone")
            await repo.upsert_generation(generation_id="gen_1", session_id="ses_crashed",
                                         status="completed", turn_id="turn_1",
                                         heard_text="Someone will call you back tomorrow.")
        finally:
            await store.close()

    anyio.run(left_by_a_crash, db_url)
    with app(tmp_path, calls, db=db_url) as a:
        assert a.client.portal is not None
        a.client.portal.call(a.runtime.followups.reviews.settled)
        assert a.get("/v1/sessions/ses_crashed")["state"] == "FAILED"
        findings = a.get("/v1/findings?session_id=ses_crashed")["items"]
        assert [(f["kind"], f["text"], f["generation_id"]) for f in findings] == [
            ("promised_unbooked", "Someone will call you back tomorrow.", "gen_1")]
