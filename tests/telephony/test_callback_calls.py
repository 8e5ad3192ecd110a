"""A call-back placed through the carrier and answered (docs/followups.md "Call-backs through
the carrier"): the queue's built-in call tool asks Twilio's REST API (a local fake) to ring the
caller; Twilio then requests the Voice webhook with ``?followup=<id>``, signed; the answered call
is connected to a session that opens by saying why the agent is calling, and whose record names
the follow-up."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.carrier import PUBLIC_URL, webhook
from tests.support.fake_twilio import FakeTwilioApi
from tests.telephony.phone_support import PHONE, PROFILE, Phone, new_call_sid, phone_app
from vocero.followups.records import Followup, FollowupDraft, new_id

ACCOUNT = "ACharbour000000000000000000000000"
FROM = "+15550100123"
REASON = "The mooring permit for berth 7"
OPENING = ("Hello, this is the harbour office calling back about the mooring permit for "
           "berth 7.")


@pytest.fixture
def twilio() -> Iterator[FakeTwilioApi]:
    with FakeTwilioApi() as api:
        yield api


def callback_profile() -> dict[str, Any]:
    profile = copy.deepcopy(PROFILE)
    profile["tools"].append({"name": "callbacks.ring", "server": "vocero",
                             "resolves_to": "carrier.call", "action_class": "reversible_write"})
    profile["followups"] = {"call_tool": "callbacks.ring", "from_number": FROM,
                            "agent_name": "the harbour office"}
    return profile


def promise_and_tick(phone: Phone, reason: str = REASON) -> Followup:
    """A due phone follow-up of the known caller, then one pass of the queue."""
    runtime: Any = phone.client.app.state.runtime  # type: ignore[attr-defined]
    portal = phone.client.portal
    assert portal is not None
    caller = runtime.identities.by_phone(PHONE)
    now = datetime.now(UTC)

    async def promise() -> Followup:
        session_id = new_id("ses")
        await runtime.conversations.create_session(
            session_id=session_id, tenant_id=caller.tenant, subject_ref=caller.subject_ref,
            profile_id=PROFILE["id"], profile_version=PROFILE["version"])
        record, _ = await runtime.followups.store.record(FollowupDraft(
            session_id=session_id, tenant_id=caller.tenant, subject_ref=caller.subject_ref,
            when_text="this morning", due_at=now - timedelta(minutes=1), timezone="UTC",
            channel="phone", reason=reason, operation_id=new_id("op")), now)
        await runtime.followups.queue.tick(now)
        found: Followup = await runtime.followups.store.get(record.id)
        return found

    return portal.call(promise)


def answered(phone: Phone, create_url: str, call_sid: str, to: str = PHONE) -> Any:
    """Twilio's request for the answered call-back: the create-call's ``Url``, signed."""
    url = urlsplit(create_url)
    assert f"{url.scheme}://{url.netloc}" == PUBLIC_URL
    return webhook(phone.client, {
        "CallSid": call_sid, "AccountSid": ACCOUNT, "From": FROM, "To": to,
        "CallStatus": "in-progress", "Direction": "outbound-api"}, query=url.query)


def settings(api: FakeTwilioApi) -> dict[str, Any]:
    return {"twilio_account_sid": ACCOUNT, "twilio_api_base": api.url}


def test_an_answered_call_back_opens_with_its_reason_and_names_its_follow_up(
    tmp_path: Path, twilio: FakeTwilioApi
) -> None:
    with phone_app(tmp_path, [], profile=callback_profile(), settings=settings(twilio)) as phone:
        followup = promise_and_tick(phone)
        assert followup.status == "placed"
        [create] = twilio.created()
        assert (create.form["To"], create.form["From"]) == (PHONE, FROM)
        call_sid = new_call_sid()
        response = answered(phone, create.form["Url"], call_sid)
        assert response.status_code == 200, response.text
        stream = ET.fromstring(response.text).find("./Connect/Stream")
        assert stream is not None, response.text
        ticket = stream.find("./Parameter[@name='ticket']")
        assert ticket is not None
        with phone.call_with(call_sid, ticket.attrib["value"]):
            lines = phone.wait_heard(call_sid, "calling back")
            session = phone.session_of(call_sid)
            runtime: Any = phone.client.app.state.runtime  # type: ignore[attr-defined]
            live = runtime.live[session["session_id"]]
            tools = {t.name for t in live.ctx.tools}
            assert "ledger.lookup" in tools and "callbacks.ring" not in tools  # queue's only
        assert lines[0] == OPENING  # the first thing the caller heard: who calls, and why
        session = phone.session_of(call_sid)
        assert (session["channel"], session["call_sid"], session["followup_id"]) == (
            "twilio", call_sid, followup.id)
        [event] = [e for e in phone.audit("telephony.call_answered")
                   if e["data"].get("followup_id") == followup.id]
        assert PHONE not in str(event)


@pytest.mark.parametrize("case", ["unknown_followup", "other_number"])
def test_a_webhook_for_a_call_back_vocero_did_not_place_gets_no_stream(
    tmp_path: Path, twilio: FakeTwilioApi, case: str
) -> None:
    with phone_app(tmp_path, [], profile=callback_profile(), settings=settings(twilio)) as phone:
        promise_and_tick(phone)
        [create] = twilio.created()
        url = create.form["Url"]
        if case == "unknown_followup":
            url = url.split("?")[0] + "?followup=fup_not_ours"
        response = answered(phone, url, new_call_sid(),
                            to="+15550100444" if case == "other_number" else PHONE)
        assert response.status_code == 200
        twiml = ET.fromstring(response.text)
        assert twiml.find("./Connect") is None and twiml.find("./Hangup") is not None
        [refused] = phone.audit("telephony.call_refused")
        assert refused["data"]["reason_code"] == "followup_unknown"
