"""A caller handed to a person (issue 43 item 6; docs/telephony.md "Handing a caller to a
person"), on the sim runners, in process: the real composition root, a profile of its own (a
reading room's desk: names no other test uses) whose ``handoff`` adds the built-in tool.

* the web: a caller who asks for a person hears that the request was passed on, a ``task``
  follow-up exists, and ``GET /v1/handoffs`` lists it with what the caller heard and what is
  still pending; two refusals by the gate hand the caller off the same way;
* the phone: the fake Twilio REST API receives exactly one call update, ``<Dial>`` to the
  profile's number, with the webhook's AccountSid and the auth token, only after the
  announcement was played (every mark of it echoed); a caller who did not hear it is not
  transferred; a carrier refusal leads to a truthful line and a ``task`` follow-up instead;
* every outcome is audited.
"""

from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from tests.support.carrier import AUTH_TOKEN, PUBLIC_URL, CarrierClient, webhook
from tests.support.db import migrated_copy
from tests.support.fake_twilio import FakeTwilioApi
from tests.support.polling import wait_for
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.contracts.handoff import ALREADY, ANNOUNCEMENT, PASSED_ON, TRANSFER_FAILED

pytestmark = pytest.mark.process

OPERATOR = {"authorization": "Bearer op-desk-token"}
DESK_NUMBER = "+15550104242"
CALLER_PHONE = "+15550107171"
ACCOUNT_SID = "AC" + "d35c" * 8
TOKEN = "reader-token-7f3a"
MS_PER_CHAR = 4
PROFILE: dict[str, Any] = {
    "id": "reading-room",
    "version": "1",
    "match": {"tenant": "reading-room"},
    "locale": "en-US",
    "instructions": "You answer the reading room's desk.",
    "tools": [
        {"name": "desk.callback", "server": "vocero", "resolves_to": "followups.record",
         "action_class": "reversible_write", "requires_confirmation": True},
    ],
    "handoff": {"phone": DESK_NUMBER, "after_denials": 2},
}
RULES: list[dict[str, Any]] = [
    {"match": r"^(yes|yeah)\b", "intent": "confirm"},
    {"match": r"person|human", "tool": "handoff.request",
     "arguments": {"reason": "wants to speak to the desk"}},
    {"match": r"erase my card", "tool": "desk.erase", "arguments": {}},  # not the profile's
    {"match": r"call me back (?P<when>.+?) about (?P<why>.+)", "tool": "desk.callback",
     "arguments": {"when": "{when}", "reason": "{why}"}},
    {"match": r".*", "reply": "I can help at the desk."},
]


@dataclass
class Desk:
    client: TestClient
    api: FakeTwilioApi

    def get(self, path: str, **params: str) -> Any:
        response = self.client.get(path, params=params, headers=OPERATOR)
        assert response.status_code == 200, response.text
        return response.json()

    def audit(self, session_id: str, kind: str) -> list[dict[str, Any]]:
        items = self.get("/v1/audit", session_id=session_id, limit="5000")["items"]
        return [e["data"] for e in items if e["kind"] == kind]

    def followups(self, session_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.get("/v1/followups", session_id=session_id)["items"]
        return items

    def handoffs(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.get("/v1/handoffs")["items"]
        return items


@contextmanager
def desk(
    tmp_path: Path, *, stt: tuple[str, ...] = (), api_status: int = 200,
    profile: dict[str, Any] | None = None,
) -> Iterator[Desk]:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "reading-room.yaml").write_text(yaml.safe_dump(profile or PROFILE))
    identities = tmp_path / "identities.yaml"
    identities.write_text(yaml.safe_dump({"callers": [{
        "token": TOKEN, "subject": f"reader-{uuid.uuid4().hex[:8]}", "tenant": "reading-room",
        "roles": ["member"], "scopes": [], "timezone": "UTC", "phone": CALLER_PHONE,
    }]}))
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(
        {"stt": list(stt), "tts": {"ms_per_char": MS_PER_CHAR}, "llm": RULES}))
    operators = tmp_path / "operators.yaml"
    operators.write_text(yaml.safe_dump([{"token": "elsewhere-reader", "name": "eve",
                                          "roles": ["security"], "tenants": ["elsewhere"]}]))
    with FakeTwilioApi(status=api_status) as api:
        settings = Settings(
            runners="sim", db=migrated_copy(tmp_path / "vocero.db", driver="sqlite+aiosqlite"),
            sim_script=str(script), profiles=str(profiles), identities=str(identities),
            operator_token="op-desk-token", operators=str(operators), followups_tick_s=0,
            public_url=PUBLIC_URL,
            twilio_auth_token=AUTH_TOKEN, twilio_api_base=api.url,
        )
        with TestClient(create_app(settings)) as client:
            assert client.portal is not None
            client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
            yield Desk(client, api)


def said(pc: ProtocolClient, text: str) -> str:
    pc.send("input.text.v1", {"text": text})
    return str(pc.expect("response.completed.v1")["data"]["payload"]["heard_text"])


# ------------------------------------------------------------------------------------- web


def test_a_web_caller_who_asks_for_a_person_is_passed_on_with_what_they_heard(
    tmp_path: Path,
) -> None:
    with desk(tmp_path) as room, room.client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect(TOKEN)
        asked = said(pc, "call me back tomorrow at 4pm about my reserved book")
        heard = said(pc, "can I talk to a person please")
        session_id = pc.session_id
        assert asked.startswith("To confirm:"), asked  # the call-back's read-back, unanswered
        assert heard == PASSED_ON
        [task] = room.followups(session_id)
        assert (task["channel"], task["status"]) == ("task", "task")
        assert task["reason"].startswith("Handoff: wants to speak to the desk"), task
        [listed] = [h for h in room.handoffs() if h["session_id"] == session_id]
        assert (listed["channel"], listed["outcome"], listed["followup_id"]) == (
            "web", "task_recorded", task["id"])
        lines = [(h["role"], h["text"]) for h in listed["heard"]]
        assert ("user", "can I talk to a person please") in lines
        assert ("assistant", PASSED_ON) in lines
        assert [(p["kind"], p["tool"], p["status"]) for p in listed["pending"]] == [
            ("proposal", "desk.callback", "open")]
        [recorded] = room.audit(session_id, "handoff.task_recorded")
        assert recorded["followup_id"] == task["id"] and recorded["transfer_failed"] == ""
        assert room.api.received() == []  # the web is never transferred
        elsewhere = room.client.get("/v1/handoffs",
                                    headers={"authorization": "Bearer elsewhere-reader"})
        assert elsewhere.status_code == 200 and elsewhere.json()["items"] == []  # its tenant's


def test_two_refusals_by_the_policy_hand_the_caller_to_a_person(tmp_path: Path) -> None:
    with desk(tmp_path) as room, room.client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect(TOKEN)
        first = said(pc, "erase my card")
        assert PASSED_ON not in first and room.followups(pc.session_id) == []
        second = said(pc, "erase my card")
        assert second.endswith(PASSED_ON), second
        assert second != PASSED_ON  # the refusal itself was said first
        [task] = room.followups(pc.session_id)
        assert task["channel"] == "task" and "refused" in task["reason"], task
        denials = [e["reason_code"] for e in room.audit(pc.session_id, "action.denied")]
        assert denials == ["tool_not_allowed", "tool_not_allowed"]
        third = said(pc, "erase my card")  # handed off once: not again
        assert PASSED_ON not in third
        assert len(room.followups(pc.session_id)) == 1


def test_a_profile_handoff_number_that_is_not_e164_is_refused_at_load(tmp_path: Path) -> None:
    from vocero.contracts.errors import ConfigError
    from vocero.identity.profiles import load_profile

    file = tmp_path / "desk.yaml"
    file.write_text(yaml.safe_dump({**PROFILE, "handoff": {"phone": "555 0104"}}))
    with pytest.raises(ConfigError, match=r"handoff\.phone.*E\.164"):
        load_profile(file)
    file.write_text(yaml.safe_dump({**PROFILE, "handoff": {"phone": DESK_NUMBER,
                                                           "after_denials": 0}}))
    with pytest.raises(ConfigError, match=r"handoff\.after_denials"):
        load_profile(file)
    without = {k: v for k, v in PROFILE.items() if k != "handoff"}
    file.write_text(yaml.safe_dump(without))
    assert all(t.resolves_to != "handoff.request" for t in load_profile(file).tools)


# ----------------------------------------------------------------------------------- phone


def call(room: Desk, call_sid: str) -> CarrierClient:
    params = {"CallSid": call_sid, "AccountSid": ACCOUNT_SID, "From": CALLER_PHONE,
              "To": "+15550100000", "CallStatus": "ringing", "Direction": "inbound"}
    response = webhook(room.client, params)
    assert response.status_code == 200, response.text
    stream = ET.fromstring(response.text).find("./Connect/Stream")
    assert stream is not None, response.text
    ticket = stream.find("./Parameter[@name='ticket']")
    assert ticket is not None
    return ticket.attrib["value"]  # type: ignore[return-value]


@contextmanager
def phone_call(room: Desk) -> Iterator[CarrierClient]:
    call_sid = "CA" + uuid.uuid4().hex
    ticket = call(room, call_sid)
    with room.client.websocket_connect("/v1/telephony/twilio") as ws:
        carrier = CarrierClient(ws, call_sid)
        carrier.start(str(ticket))
        yield carrier


def session_of(room: Desk, call_sid: str) -> dict[str, Any]:
    found = wait_for(f"the session of {call_sid}", lambda: next(
        (s for s in room.get("/v1/sessions")["items"] if s.get("call_sid") == call_sid), None),
        timeout_s=10)
    session: dict[str, Any] = room.get(f"/v1/sessions/{found['session_id']}")
    return session


def heard(room: Desk, call_sid: str) -> list[str]:
    history = session_of(room, call_sid)["history"]
    return [h["text"] for h in history if h["role"] == "assistant" and h["text"]]


def played_ms(mark: str) -> int:
    return int(mark.split("@", 1)[1].split("ms", 1)[0])


def test_a_phone_caller_is_put_through_once_after_hearing_the_announcement(
    tmp_path: Path,
) -> None:
    stt = ("put me through to a person", "a person please")
    with desk(tmp_path, stt=stt) as room, phone_call(room) as carrier:
        room.api.witness = lambda: (list(carrier.echoed), len(carrier.of("mark")))
        carrier.say()
        [update] = wait_for("the call update", room.api.received, timeout_s=20)
        assert (update.account_sid, update.call_sid) == (ACCOUNT_SID, carrier.call_sid)
        assert update.form == {"Twiml": f"<Response><Dial>{DESK_NUMBER}</Dial></Response>"}
        assert update.auth == (ACCOUNT_SID, AUTH_TOKEN)
        echoed, sent = update.witnessed
        assert echoed and len(echoed) == sent  # every mark the server sent had been echoed
        generation = echoed[-1].split("@", 1)[0]  # the answer that said the announcement
        assert max(played_ms(m) for m in echoed) >= len(ANNOUNCEMENT) * MS_PER_CHAR * 0.9
        assert wait_for("the announcement heard",
                        lambda: ANNOUNCEMENT in " ".join(heard(room, carrier.call_sid)))
        carrier.say()  # asked again on the same call: never a second transfer
        wait_for("the second answer", lambda: ALREADY in heard(room, carrier.call_sid))
        assert len(room.api.received()) == 1
        of_answer = [m["mark"]["name"] for m in carrier.of("mark")
                     if m["mark"]["name"].startswith(generation + "@")]
        assert of_answer == [m for m in echoed if m.startswith(generation + "@")]  # all of it
        session_id = session_of(room, carrier.call_sid)["session_id"]
        [transferred] = room.audit(session_id, "handoff.transferred")
        assert transferred["call_sid"] == carrier.call_sid
        assert DESK_NUMBER not in str(transferred) and transferred["number_ref"].startswith("tel_")
        assert room.followups(session_id) == []


def test_a_phone_caller_who_did_not_hear_the_announcement_is_not_transferred(
    tmp_path: Path,
) -> None:
    with desk(tmp_path, stt=("put me through to a person",)) as room, phone_call(room) as carrier:
        carrier.hold_marks = True  # the caller hears nothing of what is sent
        carrier.say()
        wait_for("the answer's record",
                 lambda: [h for h in session_of(room, carrier.call_sid)["history"]
                          if h["role"] == "assistant"], timeout_s=20)
        assert carrier.audio_ms() >= len(ANNOUNCEMENT) * MS_PER_CHAR  # sent, never played
        assert room.api.received() == []
        session_id = session_of(room, carrier.call_sid)["session_id"]
        assert room.audit(session_id, "handoff.transferred") == []


def test_a_carrier_refusal_is_told_truthfully_and_becomes_a_task(tmp_path: Path) -> None:
    stt = ("put me through to a person",)
    with desk(tmp_path, stt=stt, api_status=500) as room, phone_call(room) as carrier:
        carrier.say()
        lines = wait_for("the failure said", lambda: (said := heard(room, carrier.call_sid))
                         and TRANSFER_FAILED in " ".join(said) and said, timeout_s=20)
        assert ANNOUNCEMENT in " ".join(lines)
        assert len(room.api.received()) == 1  # tried once, not retried
        session_id = session_of(room, carrier.call_sid)["session_id"]
        [failed] = room.audit(session_id, "handoff.transfer_failed")
        assert (failed["reason_code"], failed["status"]) == ("carrier_refused", 500)
        [task] = room.followups(session_id)
        assert task["channel"] == "task" and "carrier_refused" in task["reason"], task
        [listed] = [h for h in room.handoffs() if h["session_id"] == session_id]
        assert (listed["channel"], listed["outcome"]) == ("twilio", "NOT transferred")
