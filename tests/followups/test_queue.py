"""The follow-up queue on a virtual clock, placing real calls through the fixture call server:
what the server received, what the store holds, what the action path recorded (SPEC §9)."""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest
from followup_support import CallsServer, person, plant, queue_profile

from vocero.contracts.actions import TurnRef
from vocero.contracts.ports import ToolIntent
from vocero.followups import QueueSettings
from vocero.mcp_gateway import McpGateway
from vocero.store.repositories import Conversations

pytestmark = pytest.mark.anyio
MINUTE = timedelta(minutes=1)


def by_id(outcomes: list, followup_id: str) -> list:  # type: ignore[type-arg]
    return [o for o in outcomes if o.followup_id == followup_id]


async def test_a_due_call_back_is_placed_once_through_the_call_tool(
    db_url: str, calls: CallsServer
) -> None:
    async with plant(db_url, calls) as p:
        who = person()
        followup = await p.promise(who, due_at=p.now() + 10 * MINUTE, reason="the invoice")
        assert await p.tick() == []  # not due yet: nothing rings
        assert calls.received(who.subject_ref) == []
        p.clock.advance(11 * 60)
        [outcome] = await p.tick()
        assert (outcome.followup_id, outcome.status, outcome.attempts) == (followup.id, "placed", 1)
        [call] = calls.received(who.subject_ref)
        assert call["arguments"] == {"phone": who.phone, "reason": "the invoice",
                                     "followup_id": followup.id}
        meta = call["meta"]
        assert meta["io.vocero/operation_id"] == outcome.operation_id
        assert meta["io.vocero/principal"] == {"subject_ref": who.subject_ref,
                                               "tenant_id": "acme", "scopes": who.scopes}
        assert meta["io.vocero/proposal"]["revision"] == 1
        assert len(calls.placed(who.subject_ref)) == 1
        [op] = await p.plane.repo.operations(followup.session_id)
        assert (op.id, op.tool, op.status, op.attempts) == (
            outcome.operation_id, "calls.place", "committed", 1)
        assert (await p.get(followup.id)).status == "placed"
        assert await p.tick() == []  # placed is final: never rung again
        assert len(calls.received(who.subject_ref)) == 1


async def test_a_busy_line_is_retried_an_hour_later_with_a_new_operation(
    db_url: str, calls: CallsServer
) -> None:
    async with plant(db_url, calls) as p:
        who = person()
        calls.line_busy(who.phone, answers=1)
        followup = await p.promise(who, due_at=p.now() - MINUTE)
        [first] = await p.tick()
        assert (first.status, first.outcome_reason) == ("retry", "line_not_ready")
        stored = await p.get(followup.id)
        assert stored.due_at == p.now() + timedelta(hours=1)
        assert stored.promised_at == followup.promised_at  # lateness still counts from here
        p.clock.advance(59 * 60)
        assert await p.tick() == []
        p.clock.advance(2 * 60)
        [second] = await p.tick()
        assert (second.status, second.attempts) == ("placed", 2)
        received = calls.received(who.subject_ref)
        assert [c["meta"]["io.vocero/operation_id"] for c in received] == [
            first.operation_id, second.operation_id]
        assert first.operation_id != second.operation_id  # one operation id per attempt
        assert len(calls.placed(who.subject_ref)) == 1


async def test_more_than_a_day_late_is_missed_and_never_rung(
    db_url: str, calls: CallsServer
) -> None:
    async with plant(db_url, calls) as p:
        late, almost = person(), person()
        missed = await p.promise(late, due_at=p.now() - timedelta(hours=24, minutes=1))
        still = await p.promise(almost, due_at=p.now() - timedelta(hours=23, minutes=59))
        outcomes = await p.tick()
        assert [(o.status, o.outcome_reason) for o in by_id(outcomes, missed.id)] == [
            ("missed", "late")]
        assert [o.status for o in by_id(outcomes, still.id)] == ["placed"]
        assert calls.received(late.subject_ref) == []
        assert len(calls.placed(almost.subject_ref)) == 1


async def test_approve_autonomy_holds_until_an_operator_releases(
    db_url: str, calls: CallsServer
) -> None:
    profile = queue_profile(calls.url, autonomy="approve")
    async with plant(db_url, calls, profile=profile) as p:
        who, ignored = person(), person()
        followup = await p.promise(who, due_at=p.now() - MINUTE)
        forgotten = await p.promise(ignored, due_at=p.now() - MINUTE)
        outcomes = await p.tick()
        assert {(o.followup_id, o.status) for o in outcomes} == {
            (followup.id, "awaiting_approval"), (forgotten.id, "awaiting_approval")}
        assert await p.tick() == []  # held: listed for operators, not rung
        assert calls.received(who.subject_ref) == []
        await p.services.store.approve(followup.id, by="olivia", note="ok", now=p.now())
        [placed] = await p.tick()
        assert (placed.followup_id, placed.status) == (followup.id, "placed")
        assert len(calls.placed(who.subject_ref)) == 1
        p.clock.advance(24 * 3600)  # nobody released the other one in time
        [closed] = await p.tick()
        assert (closed.followup_id, closed.status) == (forgotten.id, "missed")
        assert calls.received(ignored.subject_ref) == []


async def test_at_most_max_per_tick_calls_per_tick(db_url: str, calls: CallsServer) -> None:
    async with plant(db_url, calls, profile=queue_profile(calls.url, max_per_tick=2)) as p:
        people = [person() for _ in range(3)]
        records = [await p.promise(w, due_at=p.now() - (3 - i) * MINUTE)
                   for i, w in enumerate(people)]
        first = await p.tick()
        assert [(o.followup_id, o.status) for o in first] == [
            (records[0].id, "placed"), (records[1].id, "placed")]  # oldest first
        assert calls.received(people[2].subject_ref) == []
        [second] = await p.tick()
        assert (second.followup_id, second.status) == (records[2].id, "placed")


async def test_refusals_name_their_reason_and_ring_nobody(
    db_url: str, calls: CallsServer
) -> None:
    blocked = person()
    profile = queue_profile(calls.url, blocked=[blocked.phone.replace("+34", "+34 ")],
                            daily_budget=3)
    async with plant(db_url, calls, profile=profile) as p:
        gone, twice, limited = person(), person(), person(scopes=["orders:read"])
        cases = {
            "blocked": await p.promise(blocked, due_at=p.now() - 9 * MINUTE),
            "consent": await p.promise(gone, due_at=p.now() - 8 * MINUTE),
            "first": await p.promise(twice, due_at=p.now() - 30 * MINUTE, when="at 8:30"),
            "suppressed": await p.promise(twice, due_at=p.now() - 5 * MINUTE, when="at 9"),
            "scope_missing": await p.promise(limited, due_at=p.now() - 5 * MINUTE),
        }
        p.people.forget(gone)  # no longer in the identities file: nobody to ring
        outcomes = {o.followup_id: (o.status, o.outcome_reason) for o in await p.tick()}
        assert outcomes[cases["blocked"].id] == ("refused", "blocked")
        assert outcomes[cases["consent"].id] == ("refused", "consent")
        assert outcomes[cases["suppressed"].id] == ("refused", "suppressed")
        assert outcomes[cases["first"].id] == ("placed", "")
        assert outcomes[cases["scope_missing"].id] == ("refused", "scope_missing")  # the gate
        for who in (blocked, gone, limited):
            assert calls.received(who.subject_ref) == []
        assert len(calls.received(twice.subject_ref)) == 1
        stored = await p.get(cases["blocked"].id)
        assert (stored.status, stored.outcome_reason) == ("refused", "blocked")


async def test_the_daily_budget_is_per_tenant(db_url: str, calls: CallsServer) -> None:
    profile = queue_profile(calls.url, daily_budget=1, max_per_tick=5)
    async with plant(db_url, calls, profile=profile) as p:
        a, b = person(), person()
        first = await p.promise(a, due_at=p.now() - 2 * MINUTE)
        second = await p.promise(b, due_at=p.now() - MINUTE)
        outcomes = {o.followup_id: (o.status, o.outcome_reason) for o in await p.tick()}
        assert outcomes == {first.id: ("placed", ""), second.id: ("refused", "budget")}
        assert calls.received(b.subject_ref) == []


async def test_one_caller_rings_only_their_share_of_the_day(
    db_url: str, calls: CallsServer
) -> None:
    """Issue 26 (1): call-backs of one caller an hour apart each passed suppression and spent the
    tenant's day; now they stop at ``caller_daily_share`` of it (0.5 of 3, rounded up: 2) and
    another caller of the tenant is still rung."""
    profile = queue_profile(calls.url, daily_budget=3, max_per_tick=5, caller_daily_share=0.5)
    async with plant(db_url, calls, profile=profile) as p:
        busy, other = person(), person()
        hourly = [await p.promise(busy, due_at=p.now() + (61 * i - 1) * MINUTE, when=f"at {i}")
                  for i in range(3)]
        theirs = await p.promise(other, due_at=p.now() + 121 * MINUTE)
        outcomes = []
        for _ in range(3):
            outcomes += [(o.followup_id, o.status, o.outcome_reason) for o in await p.tick()]
            p.clock.advance(61 * 60)
        assert sorted(outcomes) == sorted([
            (hourly[0].id, "placed", ""), (hourly[1].id, "placed", ""),
            (hourly[2].id, "refused", "caller_budget"), (theirs.id, "placed", "")])
        assert len(calls.placed(busy.subject_ref)) == 2
        assert len(calls.placed(other.subject_ref)) == 1


async def test_a_task_is_never_sent(db_url: str, calls: CallsServer) -> None:
    async with plant(db_url, calls) as p:
        who = person()
        task = await p.promise(who, due_at=p.now() - MINUTE, reason="send the quotation",
                               channel="task")
        assert await p.tick() == []
        p.clock.advance(48 * 3600)
        assert await p.tick() == []
        assert (await p.get(task.id)).status == "task"
        assert calls.received(who.subject_ref) == []


async def test_a_call_tool_that_needs_confirmation_is_refused(
    db_url: str, calls: CallsServer
) -> None:
    base = queue_profile(calls.url)
    tools = [msgspec.structs.replace(t, requires_confirmation=True)
             if t.name == "calls.place" else t for t in base.tools]
    async with plant(db_url, calls, profile=msgspec.structs.replace(base, tools=tools)) as p:
        who = person()
        followup = await p.promise(who, due_at=p.now() - MINUTE)
        [outcome] = await p.tick()
        assert (outcome.followup_id, outcome.status, outcome.outcome_reason) == (
            followup.id, "refused", "confirmation_missing")  # nobody on the line to confirm
        assert calls.received(who.subject_ref) == []


async def test_without_its_server_a_call_waits_instead_of_being_refused(
    db_url: str, calls: CallsServer
) -> None:
    dead = queue_profile("http://127.0.0.1:9/mcp")
    async with plant(db_url, calls, profile=dead,
                     settings=QueueSettings(settle_wait_s=2.0)) as p:
        who = person()
        followup = await p.promise(who, due_at=p.now() - MINUTE)
        [outcome] = await p.tick()
        assert (outcome.status, outcome.outcome_reason) == ("deferred", "tool_unavailable")
        stored = await p.get(followup.id)
        assert (stored.status, stored.attempt_operation_id) == ("scheduled", None)


async def test_the_model_cannot_place_a_call_itself(db_url: str, calls: CallsServer) -> None:
    async with plant(db_url, calls) as p:
        who = person()
        await Conversations(p.store).create_session(
            session_id="ses_model_dials", tenant_id="acme", subject_ref=who.subject_ref,
            profile_id=p.profile.id, profile_version=p.profile.version)
        coordinator = p.plane.coordinator(session_id="ses_model_dials", caller=who,
                                          profile=p.profile,
                                          gateway=McpGateway(p.connections, p.profile))
        plan = await coordinator.propose(
            TurnRef(session_id="ses_model_dials", turn_id="turn_1"),
            ToolIntent(name="calls.place", arguments={
                "phone": "+15550000000", "reason": "x", "followup_id": "fup_x"}))
        assert (plan.kind, plan.reason_code) == ("deny", "tool_not_allowed")
        assert calls.received(who.subject_ref) == []



async def test_a_caller_rung_within_the_hour_is_not_rung_again(
    db_url: str, calls: CallsServer
) -> None:
    async with plant(db_url, calls) as p:
        who = person()
        first = await p.promise(who, due_at=p.now() - MINUTE, when="at 9")
        second = await p.promise(who, due_at=p.now() + 30 * MINUTE, when="at 9:30")
        [placed] = await p.tick()
        assert (placed.followup_id, placed.status) == (first.id, "placed")
        p.clock.advance(31 * 60)  # in a later pass, still within the hour
        [suppressed] = await p.tick()
        assert (suppressed.followup_id, suppressed.status, suppressed.outcome_reason) == (
            second.id, "refused", "suppressed")
        assert len(calls.received(who.subject_ref)) == 1
