"""What the phone leg refuses (SPEC §10): unsigned or mis-signed webhooks, unknown numbers,
streams without a good ticket, and a server without the carrier's auth token. Phone numbers
never appear in clear in the log or the audit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from starlette.testclient import WebSocketDenialResponse
from structlog.testing import capture_logs

from tests.support.carrier import CarrierClient, webhook
from tests.telephony.phone_support import (
    PHONE,
    UNKNOWN_PHONE,
    Phone,
    call_params,
    new_call_sid,
    phone_app,
)


def refused_stream(phone: Phone, ticket: str | None, *, call_sid: str,
                   stream_call_sid: str | None = None) -> CarrierClient:
    with phone.client.websocket_connect("/v1/telephony/twilio") as ws:
        carrier = CarrierClient(ws, call_sid)
        carrier.start(ticket, call_sid=stream_call_sid)
        carrier.wait_closed()
    return carrier


def test_a_webhook_without_a_good_signature_is_403_and_nothing_happens(tmp_path: Path) -> None:
    with phone_app(tmp_path, []) as phone:
        call_sid = new_call_sid()
        params = call_params(call_sid, PHONE)
        missing = webhook(phone.client, params, signature=None)
        wrong = webhook(phone.client, params, token="another-account-token-000000000")
        tampered = webhook(phone.client, {**params, "From": "+15550100111"},
                           signature=webhook_signature(params))
        assert [r.status_code for r in (missing, wrong, tampered)] == [403, 403, 403]
        assert all("ticket" not in r.text for r in (missing, wrong, tampered))
        reasons = [e["data"]["reason_code"] for e in phone.audit("telephony.call_refused")]
        assert reasons == ["signature_missing", "signature_invalid", "signature_invalid"]
        assert phone.audit("telephony.call_answered") == []


def webhook_signature(params: dict[str, str]) -> str:
    from twilio.request_validator import RequestValidator

    from tests.support.carrier import AUTH_TOKEN, PUBLIC_URL
    from vocero.relay.telephony.twilio import VOICE_PATH

    signature: str = RequestValidator(AUTH_TOKEN).compute_signature(PUBLIC_URL + VOICE_PATH, params)
    return signature


def test_an_unknown_number_hears_a_refusal_and_is_hung_up_on(tmp_path: Path) -> None:
    with phone_app(tmp_path, []) as phone:
        response = webhook(phone.client, call_params(new_call_sid(), UNKNOWN_PHONE))
        assert response.status_code == 200
        twiml = ET.fromstring(response.text)
        assert [child.tag for child in twiml] == ["Say", "Hangup"]
        assert twiml.find("./Say") is not None and "ticket" not in response.text
        assert twiml.find(".//Stream") is None
        refused = phone.audit("telephony.call_refused")
        assert [e["data"]["reason_code"] for e in refused] == ["unknown_number"]


def test_a_known_number_is_connected_with_a_ticket(tmp_path: Path) -> None:
    with phone_app(tmp_path, []) as phone:
        url, ticket = phone.answer_call(new_call_sid())
        assert url == "wss://voice.example.test/v1/telephony/twilio"
        assert len(ticket) >= 32


@pytest.mark.parametrize("case", ["missing", "unknown", "reused", "expired", "other_call"])
def test_a_stream_without_a_good_ticket_closes_before_any_audio(
    tmp_path: Path, case: str
) -> None:
    with phone_app(tmp_path, ["what is entry E42"]) as phone:
        call_sid = new_call_sid()
        _url, ticket = phone.answer_call(call_sid)
        telephony = phone.client.app.state.telephony  # type: ignore[attr-defined]
        presented: str | None = ticket
        stream_call_sid = call_sid
        if case == "missing":
            presented = None
        elif case == "unknown":
            presented = "not-a-ticket-we-issued"
        elif case == "reused":
            with phone.call_with(call_sid, ticket) as first:
                first.say()
                phone.wait_heard(call_sid, r"Entry E42")
        elif case == "expired":
            issued_clock = telephony.tickets.clock
            telephony.tickets.clock = lambda: issued_clock() + 31.0
        elif case == "other_call":
            stream_call_sid = new_call_sid()
        carrier = refused_stream(phone, presented, call_sid=call_sid,
                                 stream_call_sid=stream_call_sid)
        assert carrier.received == []  # closed before any audio (or anything else)
        assert carrier.close_code == 1008
        reasons = [e["data"]["reason_code"] for e in phone.audit("telephony.stream_refused")]
        expected = {"missing": "ticket_missing", "unknown": "ticket_unknown",
                    "reused": "ticket_reused", "expired": "ticket_expired",
                    "other_call": "ticket_other_call"}[case]
        assert reasons == [expected]


def test_without_the_auth_token_both_routes_answer_404(tmp_path: Path) -> None:
    with phone_app(tmp_path, [], telephony=False) as phone:
        response = webhook(phone.client, call_params(new_call_sid(), PHONE))
        assert response.status_code == 404
        upgrade = phone.client.get("/v1/telephony/twilio")
        assert upgrade.status_code == 404
        with pytest.raises(WebSocketDenialResponse) as denied:  # noqa: SIM117
            with phone.client.websocket_connect("/v1/telephony/twilio"):
                pass
        assert denied.value.status_code == 404


def test_phone_numbers_never_reach_the_log_or_the_audit(tmp_path: Path) -> None:
    with phone_app(tmp_path, ["what is entry E42"]) as phone:
        with capture_logs() as logs:
            webhook(phone.client, call_params(new_call_sid(), UNKNOWN_PHONE))
            with phone.call() as carrier:
                carrier.say()
                phone.wait_heard(carrier.call_sid, r"Entry E42")
                carrier.hang_up()
                carrier.wait_closed()
        audit = phone.get("/v1/audit?limit=5000")["items"]
        written = json.dumps(logs, default=str) + json.dumps(audit)
        assert phone.audit("telephony.call_answered")  # the call was logged and audited...
        for number in (PHONE, UNKNOWN_PHONE):  # ...by reference only
            assert number not in written and number.lstrip("+") not in written
        refs = {e["data"].get("phone_ref") for e in audit if "phone_ref" in e["data"]}
        assert len(refs) == 2 and all(str(r).startswith("tel_") for r in refs)


def test_an_oversized_webhook_body_is_refused_before_it_is_read(tmp_path: Path) -> None:
    with phone_app(tmp_path, []) as phone:
        params = {**call_params(new_call_sid(), PHONE), "Padding": "x" * 70_000}
        response = webhook(phone.client, params)
        assert response.status_code == 413
        refused = phone.audit("telephony.call_refused")
        assert [e["data"]["reason_code"] for e in refused] == ["body_too_large"]
        assert phone.audit("telephony.call_answered") == []


def test_a_stream_that_never_starts_is_closed_and_audited(tmp_path: Path) -> None:
    with phone_app(tmp_path, []) as phone:
        phone.client.app.state.telephony.start_timeout_s = 0.2  # type: ignore[attr-defined]
        with phone.client.websocket_connect("/v1/telephony/twilio") as ws:
            ws.send_text(json.dumps({"event": "connected", "protocol": "Call"}))
            carrier = CarrierClient(ws, "CA-never-started")
            carrier.wait_closed_reading()
        assert carrier.received == [] and carrier.close_code == 1008
        reasons = [e["data"]["reason_code"] for e in phone.audit("telephony.stream_refused")]
        assert reasons == ["start_missing"]
