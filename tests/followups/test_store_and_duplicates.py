"""The follow-up store: one record per recording operation, the duplicate rule (Hypothesis,
on the pure rule and on the SQL adapter), statuses by the lifecycle table, findings once."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vocero.followups import lifecycle
from vocero.followups.lifecycle import InvalidFollowupTransitionError, duplicate_of
from vocero.followups.limits import FollowupLimitError, RecordLimits
from vocero.followups.ports import NotAwaitingApprovalError
from vocero.followups.records import Finding, Followup, FollowupDraft, finding_id, new_id
from vocero.followups.sql import SqlFollowupStore
from vocero.store import Store
from vocero.store.audit import AuditLog
from vocero.store.repositories import Conversations

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


def draft(session_id: str, subject: str = "sub_a", *, due: datetime, channel: str = "phone",
          when: str = "tomorrow at 4", operation_id: str = "") -> FollowupDraft:
    return FollowupDraft(session_id=session_id, tenant_id="acme", subject_ref=subject,
                         when_text=when, due_at=due, timezone="Europe/Madrid",
                         channel=channel,  # type: ignore[arg-type]
                         reason="the invoice", operation_id=operation_id or new_id("op"))


async def session(store: Store, subject: str = "sub_a") -> str:
    session_id = new_id("ses")
    await Conversations(store).create_session(
        session_id=session_id, tenant_id="acme", subject_ref=subject, profile_id="demo",
        profile_version="1")
    return session_id


async def test_record_is_idempotent_by_operation_and_knows_its_profile(db_url: str) -> None:
    store = Store.open(db_url)
    try:
        sql = SqlFollowupStore(store)
        sid = await session(store)
        first = draft(sid, due=NOW + timedelta(hours=30))
        record, duplicate = await sql.record(first, NOW)
        again, duplicate_again = await sql.record(first, NOW)
        assert (duplicate, duplicate_again) == (False, False)
        assert again == record
        assert (record.status, record.profile_id, record.profile_version) == (
            "scheduled", "demo", "1")
        assert record.promised_at == record.due_at == first.due_at
        task, _ = await sql.record(draft(sid, due=NOW + timedelta(hours=30), channel="task"), NOW)
        assert task.status == "task"  # a task is never a duplicate of a call-back
        assert len((await sql.list_followups(session_id=sid)).items) == 2
        assert [f.id for f in (await sql.list_followups(status="task")).items] == [task.id]
        view = record.public()
        assert view["due_at"] == "2026-12-04T15:00:00+01:00"  # the caller's own offset
        assert set(view) >= {"id", "session_id", "when_text", "due_at", "timezone", "channel",
                             "reason", "status", "attempts", "outcome_reason"}
    finally:
        await store.close()


async def test_lifecycle_is_checked_and_approval_only_releases_held(db_url: str) -> None:
    store = Store.open(db_url)
    try:
        sql = SqlFollowupStore(store)
        record, _ = await sql.record(draft(await session(store), due=NOW), NOW)
        with pytest.raises(NotAwaitingApprovalError):
            await sql.approve(record.id, by="olivia", note="", now=NOW)
        held = await sql.move(record.id, "awaiting_approval", now=NOW)
        released = await sql.approve(held.id, by="olivia", note="ok to call", now=NOW)
        assert released is not None
        assert (released.status, released.approved_by) == ("scheduled", "olivia")
        placed = await sql.move(record.id, "placed", now=NOW)
        with pytest.raises(InvalidFollowupTransitionError):
            await sql.move(placed.id, "scheduled", now=NOW)
        assert await sql.approve("fup_missing", by="x", note="", now=NOW) is None
    finally:
        await store.close()


async def test_findings_are_stored_once(db_url: str) -> None:
    store = Store.open(db_url)
    try:
        sql = SqlFollowupStore(store)
        sid = await session(store)
        finding = Finding(id=finding_id("promised_unbooked", sid, "gen_1", "We'll call you."),
                          kind="promised_unbooked", session_id=sid, generation_id="gen_1",
                          text="We'll call you.", at=NOW)
        assert await sql.add_findings([finding]) == [finding]
        assert await sql.add_findings([finding]) == []
        assert (await sql.findings(session_id=sid)).items == [finding]
        assert (await sql.findings(kind="other")).items == []
    finally:
        await store.close()


async def test_caps_refuse_a_follow_up_and_store_nothing(db_url: str) -> None:
    """``max_open_per_caller`` counts one caller's waiting call-backs across sessions (not
    tasks), ``max_per_session`` everything the session recorded; a duplicate is never refused,
    and a settled call-back makes room again. A refusal is audited; no row is stored."""
    caps = RecordLimits(open_per_caller=2, per_session=3)
    store = Store.open(db_url)
    try:
        sql = SqlFollowupStore(store)
        first, second = await session(store, "sub_capped"), await session(store, "sub_capped")

        async def book(sid: str, hours: int, channel: str = "phone") -> Followup:
            record, _ = await sql.record(draft(sid, "sub_capped", channel=channel,
                                               due=NOW + timedelta(hours=hours)), NOW,
                                         limits=lambda _id, _version: caps)
            return record

        async def refused(sid: str, hours: int, channel: str = "phone") -> str:
            with pytest.raises(FollowupLimitError) as over:
                await book(sid, hours, channel)
            return over.value.reason_code

        one = await book(first, 1)
        await book(first, 2)
        assert await refused(first, 3) == "caller_limit"
        assert await refused(second, 3) == "caller_limit"  # the caller's, in any session
        again, duplicate = await sql.record(draft(first, "sub_capped", due=one.due_at), NOW,
                                            limits=lambda _id, _version: caps)
        assert (again.id, duplicate) == (one.id, True)
        await book(first, 4, "task")  # a task is no call-back: the session's third
        assert await refused(first, 5, "task") == "session_limit"
        await sql.move(one.id, "placed", now=NOW)  # settled: room for one more
        await book(second, 3)
        stored = (await sql.list_followups(session_id=first)).items
        assert sorted((f.channel, f.status) for f in stored) == [
            ("phone", "placed"), ("phone", "scheduled"), ("task", "task")]
        assert len((await sql.list_followups(session_id=second)).items) == 1
        audit = await AuditLog(store).events(session_id=first)
        assert [e.data["reason_code"] for e in audit if e.kind == "followup.refused"] == [
            "caller_limit", "session_limit"]
    finally:
        await store.close()


async def test_lists_page_newest_first(db_url: str) -> None:
    store = Store.open(db_url)
    try:
        sql = SqlFollowupStore(store)
        sid = await session(store)
        made = [(await sql.record(draft(sid, due=NOW + timedelta(hours=i), channel="task"),
                                  NOW + timedelta(seconds=i)))[0] for i in range(5)]
        first = await sql.list_followups(session_id=sid, limit=2)
        assert [f.id for f in first.items] == [made[4].id, made[3].id]
        assert first.next is not None
        rest = await sql.list_followups(session_id=sid, cursor=first.next, limit=10)
        assert [f.id for f in rest.items] == [made[2].id, made[1].id, made[0].id]
        assert rest.next is None
    finally:
        await store.close()


# ------------------------------------------------------------------------------ duplicates

SUBJECTS = ("sub_a", "sub_b")
CHANNELS = ("phone", "task")
offsets = st.integers(min_value=0, max_value=6 * 60)  # minutes after a base time
requests = st.lists(st.tuples(st.sampled_from(SUBJECTS), st.sampled_from(CHANNELS), offsets),
                    min_size=1, max_size=12)


def open_record(subject: str, channel: str, minutes: int, index: int) -> Followup:
    due = NOW + timedelta(minutes=minutes)
    return Followup(id=f"fup_{index:03d}", session_id=None, tenant_id="acme",
                    subject_ref=subject, profile_id="demo", profile_version="1", when_text="x",
                    due_at=due, promised_at=due, timezone="UTC",
                    channel=channel,  # type: ignore[arg-type]
                    reason="r", status="task" if channel == "task" else "scheduled",
                    attempts=0, outcome_reason="", attempt_operation_id=None, approved_by="",
                    created_at=NOW + timedelta(seconds=index), updated_at=NOW)


def simulate(sequence: list[tuple[str, str, int]]) -> list[Followup]:
    """Record every request through the pure rule, as the store does."""
    kept: list[Followup] = []
    for index, (subject, channel, minutes) in enumerate(sequence):
        due = NOW + timedelta(minutes=minutes)
        if duplicate_of(kept, tenant_id="acme", subject_ref=subject, channel=channel,
                        due_at=due) is None:
            kept.append(open_record(subject, channel, minutes, index))
    return kept


@settings(max_examples=300, deadline=None)
@given(sequence=requests)
def test_no_two_open_follow_ups_of_one_caller_share_a_when(
    sequence: list[tuple[str, str, int]]
) -> None:
    kept = simulate(sequence)
    for a in kept:
        for b in kept:
            if a.id != b.id and (a.subject_ref, a.channel) == (b.subject_ref, b.channel):
                assert abs(a.due_at - b.due_at) >= lifecycle.DUPLICATE_WINDOW
    # every request is represented: by its own record or by the open one it repeats
    for subject, channel, minutes in sequence:
        due = NOW + timedelta(minutes=minutes)
        assert duplicate_of(kept, tenant_id="acme", subject_ref=subject, channel=channel,
                            due_at=due) is not None


@settings(max_examples=200, deadline=None)
@given(sequence=requests, close=st.integers(min_value=0, max_value=11))
def test_a_closed_follow_up_is_not_a_duplicate(
    sequence: list[tuple[str, str, int]], close: int
) -> None:
    kept = simulate(sequence)
    closed = kept[close % len(kept)]
    done = [f if f.id != closed.id else Followup(**{**_fields(f), "status": "placed"})
            for f in kept]
    found = duplicate_of(done, tenant_id="acme", subject_ref=closed.subject_ref,
                         channel=closed.channel, due_at=closed.due_at)
    assert found is None or found.id != closed.id


def _fields(record: Followup) -> dict[str, object]:
    return {name: getattr(record, name) for name in record.__struct_fields__}


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=requests)
def test_the_sql_store_keeps_the_same_records_as_the_rule(
    db_url: str, sequence: list[tuple[str, str, int]]
) -> None:
    fresh = {s: f"{s}_{uuid.uuid4().hex[:8]}" for s in SUBJECTS}  # this example's own callers

    async def run() -> tuple[list[tuple[str, str, datetime]], list[bool]]:
        store = Store.open(db_url)
        try:
            sql = SqlFollowupStore(store)
            sessions = {s: await session(store, fresh[s]) for s in SUBJECTS}
            flags = []
            for subject, channel, minutes in sequence:
                _, duplicate = await sql.record(draft(
                    sessions[subject], fresh[subject], due=NOW + timedelta(minutes=minutes),
                    channel=channel), NOW)
                flags.append(duplicate)
            stored = [f for s in SUBJECTS for f in (await sql.list_followups(
                session_id=sessions[s])).items]
            return [(f.subject_ref, f.channel, f.due_at) for f in stored], flags
        finally:
            await store.close()

    stored, flags = anyio.run(run)
    expected = [(fresh[f.subject_ref], f.channel, f.due_at) for f in simulate(sequence)]
    assert sorted(stored) == sorted(expected)
    assert flags.count(False) == len(stored)
