"""Units of call-backs through the carrier: Twilio's create-call client (what each answer of the
API becomes), the agent's first line, and the profile's ``followups.from_number`` check."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import anyio
import httpx
import msgspec
import pytest

from vocero.contracts.carrier_calls import CallNotPlaced, opening_line
from vocero.contracts.domain import AgentProfile, FollowupSettings, ProfileMatch
from vocero.contracts.errors import ConfigError
from vocero.contracts.secrets import Secret
from vocero.identity.profile_checks import check_profile
from vocero.relay.telephony.outbound import TwilioCalls

ACCOUNT = "ACunits00000000000000000000000000"
TO, FROM = "+15550100777", "+15550100123"


def client(handler: httpx.MockTransport) -> TwilioCalls:
    return TwilioCalls(ACCOUNT, Secret("units-token"), public_url="https://voice.example.test/",
                       api_base="https://api.example.test", transport=handler)


def place(calls: TwilioCalls, *, to: str = TO, from_: str = FROM) -> object:
    async def go() -> object:
        try:
            return await calls.place(to=to, from_=from_, followup_id="fup_1")
        except CallNotPlaced as failed:
            return failed
    return anyio.run(go)


def answering(status: int, body: object, seen: list[httpx.Request] | None = None
              ) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, json=body)
    return httpx.MockTransport(handle)


def test_a_created_call_is_its_sid_and_the_request_is_twilios() -> None:
    seen: list[httpx.Request] = []
    placed = place(client(answering(201, {"sid": "CA" + "1" * 32, "status": "queued"}, seen)))
    assert getattr(placed, "call_sid", "") == "CA" + "1" * 32
    [request] = seen
    assert str(request.url) == f"https://api.example.test/2010-04-01/Accounts/{ACCOUNT}/Calls.json"
    assert request.headers["authorization"] == httpx.BasicAuth(ACCOUNT, "units-token")._auth_header
    assert parse_qs(request.content.decode()) == {
        "To": [TO], "From": [FROM], "Method": ["POST"],
        "Url": ["https://voice.example.test/v1/telephony/twilio/voice?followup=fup_1"]}


@pytest.mark.parametrize(("status", "body", "reason", "busy"), [
    (200, {"sid": "CA" + "2" * 32}, "carrier_refused", False),  # not a created call
    (201, {"status": "queued"}, "carrier_refused", False),  # no sid: nothing to record
    (400, {"code": 21211}, "carrier_refused", False),
    (429, {"code": 20429}, "carrier_busy", True),
    (503, {}, "carrier_busy", True),
])
def test_what_is_not_a_created_call(status: int, body: object, reason: str, busy: bool) -> None:
    failed = place(client(answering(status, body)))
    assert isinstance(failed, CallNotPlaced)
    assert (failed.reason_code, failed.busy, failed.status) == (reason, busy, status)


def test_unreachable_is_busy_and_a_lost_answer_is_unknown() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    def lose(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("lost", request=request)

    unreachable = place(client(httpx.MockTransport(refuse)))
    assert isinstance(unreachable, CallNotPlaced) and unreachable.busy
    lost = place(client(httpx.MockTransport(lose)))
    assert isinstance(lost, CallNotPlaced) and lost.unknown and not lost.busy


@pytest.mark.parametrize(("to", "from_", "reason"), [
    ("5550100777", FROM, "number_invalid"), (TO, "", "from_number_missing")])
def test_numbers_are_checked_before_anything_is_sent(to: str, from_: str, reason: str) -> None:
    seen: list[httpx.Request] = []
    failed = place(client(answering(201, {"sid": "CA" + "3" * 32}, seen)), to=to, from_=from_)
    assert isinstance(failed, CallNotPlaced) and failed.reason_code == reason
    assert seen == []


def test_the_first_line_says_who_calls_and_why() -> None:
    assert opening_line("The invoice for March.", "Acme billing") == (
        "Hello, this is Acme billing calling back about the invoice for March.")
    assert opening_line("about your refund", "") == "Hello, I'm calling back about your refund."
    assert opening_line("IBAN change", "") == "Hello, I'm calling back about IBAN change."
    assert opening_line("  ", "Acme") == "Hello, this is Acme calling back as promised."


def test_a_profile_from_number_must_be_e164() -> None:
    profile = AgentProfile(id="p", version="1", match=ProfileMatch(tenant="t"))
    check_profile(Path("p.yaml"), msgspec.structs.replace(
        profile, followups=FollowupSettings(from_number=FROM)))
    with pytest.raises(ConfigError, match=r"followups\.from_number"):
        check_profile(Path("p.yaml"), msgspec.structs.replace(
            profile, followups=FollowupSettings(from_number="555 0100")))
