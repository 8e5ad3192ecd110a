"""Call-backs through the carrier (docs/followups.md "Call-backs through the carrier"): the
built-in call tool ``carrier.call`` creates the call with Twilio's REST API (a local fake), as an
ordinary system operation of the queue. Placed only when the carrier accepted the call (201 and a
call sid, kept in the operation's receipt); busy -> ``retry``; refused -> ``refused`` with the
reason; a second dispatch of the same operation (its receipt lost) never rings again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import msgspec
import pytest
from followup_support import START, CallsServer, person, plant, queue_profile

from tests.support.fake_twilio import FakeTwilioApi
from vocero.app.adapters.callbacks import carrier_call_tools
from vocero.app.settings import Settings
from vocero.contracts.domain import AgentProfile, ToolSpec

pytestmark = pytest.mark.anyio

ACCOUNT = "ACcallbacks0000000000000000000000"
TOKEN = "callback-auth-token"
FROM = "+15550100000"
PUBLIC = "https://voice.example.test"
RING = ToolSpec(name="callbacks.ring", server="vocero", resolves_to="carrier.call",
                action_class="reversible_write")


class FakeAudit:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        self.events.append((kind, data))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [d for k, d in self.events if k == kind]


@pytest.fixture
def twilio() -> Iterator[FakeTwilioApi]:
    with FakeTwilioApi() as api:
        yield api


def carrier_profile(calls: CallsServer) -> AgentProfile:
    base = queue_profile(calls.url)
    return msgspec.structs.replace(
        base, tools=[*base.tools, RING],
        followups=msgspec.structs.replace(base.followups, call_tool="callbacks.ring",
                                          from_number=FROM))


def carrier_tools(api: FakeTwilioApi, audit: FakeAudit, profile: AgentProfile) -> Any:
    settings = Settings(twilio_auth_token=TOKEN, twilio_account_sid=ACCOUNT, public_url=PUBLIC,
                        twilio_api_base=api.url)
    return lambda services: [carrier_call_tools(
        settings, services.store, profiles=lambda _i, _v: profile, audit=audit)]


async def test_a_due_call_back_is_placed_through_the_carrier_with_its_sid(
    db_url: str, calls: CallsServer, twilio: FakeTwilioApi
) -> None:
    profile, audit = carrier_profile(calls), FakeAudit()
    async with plant(db_url, calls, profile=profile,
                     builtins=carrier_tools(twilio, audit, profile)) as p:
        who = person()
        followup = await p.promise(who, due_at=p.now() - timedelta(minutes=1),
                                   reason="the harbour permit")
        [outcome] = await p.tick()
        assert (outcome.followup_id, outcome.status) == (followup.id, "placed")
        [create] = twilio.created()  # exactly one call, on the account, with its auth
        assert create.account_sid == ACCOUNT and create.auth == (ACCOUNT, TOKEN)
        assert (create.form["To"], create.form["From"]) == (who.phone, FROM)
        url = urlsplit(create.form["Url"])
        assert f"{url.scheme}://{url.netloc}{url.path}" == f"{PUBLIC}/v1/telephony/twilio/voice"
        assert parse_qs(url.query) == {"followup": [followup.id]}
        [op] = await p.plane.repo.operations(followup.session_id)
        assert (op.id, op.tool, op.status) == (outcome.operation_id, "callbacks.ring",
                                               "committed")
        assert op.receipt is not None and op.receipt["content"]["call_sid"] == create.sid
        assert (await p.get(followup.id)).status == "placed"
        [placed] = audit.of("followup.call_placed")
        assert placed["call_sid"] == create.sid and who.phone not in str(audit.events)
        assert await p.tick() == [] and len(twilio.created()) == 1  # placed is final
        assert calls.received(who.subject_ref) == []  # the MCP call tool was never asked


@pytest.mark.parametrize(("status", "followup_status", "reason"), [
    (400, "refused", "carrier_refused"),  # the carrier refused the call
    (503, "retry", "line_not_ready"),  # the carrier is busy: due again in an hour
])
async def test_a_call_the_carrier_does_not_accept_is_not_placed(
    db_url: str, calls: CallsServer, twilio: FakeTwilioApi, status: int,
    followup_status: str, reason: str,
) -> None:
    twilio.create_status = status
    profile, audit = carrier_profile(calls), FakeAudit()
    async with plant(db_url, calls, profile=profile,
                     builtins=carrier_tools(twilio, audit, profile)) as p:
        who = person()
        followup = await p.promise(who, due_at=p.now() - timedelta(minutes=1))
        [outcome] = await p.tick()
        stored = await p.get(followup.id)
        assert (outcome.status, stored.status, stored.outcome_reason) == (
            followup_status, followup_status, reason)
        assert len(twilio.created()) == 1
        [refused] = audit.of("followup.call_not_placed")
        assert (refused["reason_code"], refused["status"]) == (reason, status)
        assert audit.of("followup.call_placed") == []


async def test_a_second_dispatch_after_a_lost_answer_never_rings_again(
    db_url: str, calls: CallsServer, twilio: FakeTwilioApi
) -> None:
    """The carrier created the call but its answer came too late (the operation's wait ran
    out: its receipt was never written, as when the process dies between the request and the
    receipt): the operation is dispatched again under its id, as after a restart, and the
    carrier is not asked twice."""
    twilio.create_latency_s = 3.0
    base, audit = carrier_profile(calls), FakeAudit()
    quick = msgspec.structs.replace(RING, timeout_ms=200)  # gives up after 0.2 s + margin
    profile = msgspec.structs.replace(base, tools=[*base.tools[:-1], quick])
    async with plant(db_url, calls, profile=profile,
                     builtins=carrier_tools(twilio, audit, profile)) as p:
        who = person()
        followup = await p.promise(who, due_at=p.now() - timedelta(minutes=1))
        [outcome] = await p.tick()
        stored = await p.get(followup.id)
        assert (outcome.status, stored.status, stored.outcome_reason) == (
            "refused", "refused", "call_outcome_unknown")
        assert len(twilio.created()) == 1  # rang once; never again
        [op] = await p.plane.repo.operations(followup.session_id)
        assert op.id == outcome.operation_id and op.attempts == 2  # dispatched twice
        assert [e["reason_code"] for e in audit.of("followup.call_not_placed")] == [
            "call_outcome_unknown"]
        assert await p.tick() == [] and len(twilio.created()) == 1
        # it may have rung: the attempt counts against the caller's share of the day
        assert await p.services.store.attempts_since(
            who.tenant, p.now() - timedelta(hours=1), subject_ref=who.subject_ref) == 1


@pytest.mark.slow
def test_sigkill_between_dispatch_and_receipt_then_restart_rings_once(
    db_url: str, calls: CallsServer, twilio: FakeTwilioApi
) -> None:
    """A real process, SIGKILLed right after the carrier created the call and before the
    operation's receipt was written, restarted on the same database: the operation is
    dispatched again under its id and the carrier is not asked twice (the follow-up is closed:
    it may have rung)."""
    step = "sent"
    from test_queue_crash import killed_then_restarted

    who = person()
    profile, audit = carrier_profile(calls), FakeAudit()

    async def seed() -> str:
        async with plant(db_url, calls, profile=profile,
                         builtins=carrier_tools(twilio, audit, profile)) as p:
            followup = await p.promise(who, due_at=START - timedelta(minutes=1))
            return followup.id

    followup_id = anyio.run(seed)
    caller = {f: getattr(who, f) for f in who.__struct_fields__} | {"token": "crash-token"}
    config = {"db": db_url, "url": calls.url, "caller": caller, "now": START.isoformat(),
              "followup_id": followup_id, "crash_at": step,
              "twilio": {"api": twilio.url, "account": ACCOUNT, "token": TOKEN,
                         "public": PUBLIC, "from": FROM}}
    report = killed_then_restarted(config)
    stored = report["followup"]
    assert (stored["status"], stored["outcome_reason"], stored["attempts"]) == (
        "refused", "call_outcome_unknown", 1)
    [operation] = report["operations"]
    assert (operation["status"], operation["attempts"]) == ("rejected", 2)  # sent again...
    [create] = twilio.created()  # ...and still one create-call request
    assert create.form["Url"].endswith(f"followup={followup_id}")
