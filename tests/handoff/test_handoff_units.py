"""The handoff's two halves on their own (issue 43 item 6): the built-in ``handoff.request``
over fakes of its ports (the number is the profile's, a session is transferred once however
often it runs, a refused transfer becomes a task), and the Twilio client against the fake
REST API (unreachable, no AccountSid)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.support.fake_twilio import FakeTwilioApi
from tests.support.servers import free_port
from vocero.contracts.builtins import Context
from vocero.contracts.domain import AgentProfile, HandoffSettings, Principal, ProfileMatch
from vocero.contracts.handoff import TransferFailed
from vocero.contracts.ports import CallMeta
from vocero.contracts.secrets import Secret
from vocero.followups.handoff import HandoffTools
from vocero.followups.records import Followup, FollowupDraft
from vocero.relay.telephony.redirect import AccountBook, TwilioRedirect
from vocero.store.records import SessionRecord

pytestmark = pytest.mark.anyio

NUMBER = "+15550108080"
PROFILE = AgentProfile(id="ferry-office", version="3", match=ProfileMatch(tenant="ferries"),
                       handoff=HandoffSettings(phone=NUMBER))
NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


class FakeTransfer:
    def __init__(self, refuse: str = "") -> None:
        self.refuse = refuse
        self.calls: list[tuple[str, str]] = []

    async def transfer(self, call_sid: str, number: str) -> None:
        self.calls.append((call_sid, number))
        await anyio.lowlevel.checkpoint()  # another request of the session may run meanwhile
        if self.refuse:
            raise TransferFailed(self.refuse, 503)


class FakeStore:
    def __init__(self) -> None:
        self.drafts: list[FollowupDraft] = []

    async def record(self, draft: FollowupDraft, now: datetime, **_: Any) -> tuple[Any, bool]:
        self.drafts.append(draft)
        return Followup(
            id=f"fup_{len(self.drafts)}", session_id=draft.session_id, tenant_id=draft.tenant_id,
            subject_ref=draft.subject_ref, profile_id=PROFILE.id,
            profile_version=PROFILE.version, when_text=draft.when_text, due_at=draft.due_at,
            promised_at=now, timezone=draft.timezone, channel=draft.channel,
            reason=draft.reason, status="task", attempts=0, outcome_reason="",
            attempt_operation_id=None, approved_by="", created_at=now, updated_at=now,
        ), False


class FakeAudit:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        self.events.append((kind, data))


class FakeClock:
    def now(self) -> float:
        return NOW.timestamp()

    def monotonic(self) -> float:
        return 0.0


def session(channel: str) -> SessionRecord:
    return SessionRecord(
        id="ses_ferry", tenant_id="ferries", subject_ref="sub_x", profile_id=PROFILE.id,
        profile_version=PROFILE.version, state="SPEAKING", effective={}, resume_token_hash=None,
        created_at=NOW, closed_at=None, channel=channel,
        call_sid="CA0f" if channel == "twilio" else "")


def tools(channel: str, transfer: FakeTransfer) -> tuple[HandoffTools, FakeStore, FakeAudit]:
    store, audit = FakeStore(), FakeAudit()

    async def sessions(session_id: str) -> SessionRecord | None:
        return session(channel) if session_id == "ses_ferry" else None

    built = HandoffTools(
        store, FakeClock(), sessions=sessions,  # type: ignore[arg-type]
        profiles=lambda i, v: PROFILE if (i, v) == (PROFILE.id, PROFILE.version) else None,
        audit=audit, transfer=transfer,
    )
    return built, store, audit


def meta(operation_id: str) -> CallMeta:
    return CallMeta(operation_id=operation_id,
                    principal=Principal(subject_ref="sub_x", tenant_id="ferries", scopes=[]))


def canonical(built: HandoffTools, arguments: dict[str, Any]) -> dict[str, Any]:
    ctx = Context(tenant="ferries", timezone="Europe/Lisbon", now=NOW)
    return built.canonicalize("handoff.request", arguments, ctx).arguments


async def test_a_phone_session_is_put_through_to_the_profiles_number_once() -> None:
    transfer = FakeTransfer()
    built, store, audit = tools("twilio", transfer)
    arguments = canonical(built, {"reason": "dial +19005550000 instead", "phone": "+1900"})
    assert set(arguments) == {"reason", "timezone"}  # no number from the model
    results = []
    async with anyio.create_task_group() as tg:  # two requests at once, and a retry
        for operation_id in ("op_1", "op_2"):
            async def run(op: str = operation_id) -> None:
                results.append(await built.call("handoff.request", arguments, meta(op),
                                                session_id="ses_ferry"))
            tg.start_soon(run)
    results.append(await built.call("handoff.request", arguments, meta("op_1"),
                                    session_id="ses_ferry"))
    assert transfer.calls == [("CA0f", NUMBER)]
    assert [r.content["status"] for r in results] == ["transferred"] * 3
    assert store.drafts == [] and [k for k, _ in audit.events] == ["handoff.transferred"]
    assert NUMBER not in str(audit.events)


async def test_a_refused_transfer_becomes_a_task_with_the_reason() -> None:
    built, store, audit = tools("twilio", FakeTransfer(refuse="carrier_refused"))
    result = await built.call("handoff.request", canonical(built, {}), meta("op_9"),
                              session_id="ses_ferry")
    assert result.content == {"status": "NOT transferred", "channel": "task",
                              "followup_id": "fup_1", "reason": "carrier_refused"}
    [draft] = store.drafts
    assert (draft.channel, draft.operation_id, draft.timezone) == ("task", "op_9",
                                                                  "Europe/Lisbon")
    assert "carrier_refused" in draft.reason
    assert [k for k, _ in audit.events] == ["handoff.transfer_failed", "handoff.task_recorded"]
    assert audit.events[0][1]["status"] == 503


async def test_a_web_session_gets_a_task_and_no_transfer() -> None:
    transfer = FakeTransfer()
    built, store, _ = tools("web", transfer)
    result = await built.call("handoff.request", canonical(built, {}), meta("op_w"),
                              session_id="ses_ferry")
    assert result.content["status"] == "task_recorded" and transfer.calls == []
    assert store.drafts[0].reason.startswith("Handoff: ")


async def test_the_twilio_client_fails_closed() -> None:
    accounts = AccountBook()
    unreachable = TwilioRedirect(Secret("tok-0123456789abcdef"), accounts,
                                 api_base=f"http://127.0.0.1:{free_port()}", timeout_s=2)
    with pytest.raises(TransferFailed, match="account_unknown"):
        await unreachable.transfer("CA1", NUMBER)  # no webhook named its account
    accounts.note("CA1", "AC1")
    with pytest.raises(TransferFailed, match="carrier_unreachable"):
        await unreachable.transfer("CA1", NUMBER)
    with FakeTwilioApi(status=401) as api:
        refused = TwilioRedirect(Secret("tok-0123456789abcdef"), accounts, api_base=api.url)
        with pytest.raises(TransferFailed) as failed:
            await refused.transfer("CA1", NUMBER)
        assert (failed.value.reason_code, failed.value.status) == ("carrier_refused", 401)
        [update] = api.received()
        assert update.auth == ("AC1", "tok-0123456789abcdef")
