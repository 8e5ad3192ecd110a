"""Retention per data class and the purge (vocero/store/retention.py), on a virtual clock: rows
of a call made at the clock's start are erased class by class as time passes their periods, the
audit log records what went, and the audit chain verifies before and after its payloads are
tombstoned (vocero/store/tombstones.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from vocero.app.commands.purge import run_purges
from vocero.contracts.clock import VirtualClock
from vocero.contracts.errors import ConfigError
from vocero.store import Store
from vocero.store.audit import AuditLog
from vocero.store.models import (
    FindingRow,
    FollowupRow,
    GenerationRow,
    OperationRow,
    ProposalRevisionRow,
    ProposalRow,
    SessionRow,
    SpokenUnitRow,
    TurnRow,
    UnitAudioRow,
    VoiceProfileRow,
    VoiceVersionRow,
)
from vocero.store.retention import PURGED, PurgeReport, RetentionPolicy, load_policy, purge

pytestmark = pytest.mark.anyio
DAY = 86_400.0
START = 1_780_000_000.0


def at(clock: VirtualClock) -> datetime:
    return datetime.fromtimestamp(clock.now(), UTC)


async def a_call(store: Store, clock: VirtualClock, session_id: str = "ses_1") -> None:
    """One finished call, as the planes would have stored it, at the clock's time."""
    now = at(clock)
    async with store.write() as s:
        s.add(SessionRow(id=session_id, tenant_id="acme", subject_ref="sub_1", profile_id="demo",
                         profile_version="1", state="CLOSING", effective={}, created_at=now,
                         closed_at=now))
        await s.flush()
        s.add(TurnRow(id=f"{session_id}_t1", session_id=session_id, seq=1, source="audio",
                      text="move my appointment to friday", created_at=now))
        s.add(GenerationRow(id=f"{session_id}_g1", session_id=session_id, turn_id="t1",
                            status="completed", generated_text="Done, it is on Friday.",
                            heard_text="Done, it is on Friday.", created_at=now))
        s.add(SpokenUnitRow(unit_id=f"{session_id}_u1", session_id=session_id, seq=1,
                            generation_id="g1", turn_id="t1", question_revision=0, index=0,
                            kind="outcome", text="Done, it is on Friday.", disposition="admitted",
                            planned_at=now, synthesis={"spoken": "Done, it is on Friday."}))
        s.add(ProposalRow(id=f"{session_id}_p1", session_id=session_id, turn_id="t1",
                          tool="appointments.reschedule", server="appointments",
                          resolved_tool="reschedule_appointment",
                          action_class="reversible_write", status="confirmed", created_at=now))
        s.add(FindingRow(id=f"{session_id}_f1", kind="promised_unbooked", session_id=session_id,
                         tenant_id="acme", text="I will call you back", at=now))
        await s.flush()
        s.add(UnitAudioRow(unit_id=f"{session_id}_u1", session_id=session_id,
                           sample_rate=16000, pcm=b"\1\0" * 800, created_at=now))
        s.add(ProposalRevisionRow(proposal_id=f"{session_id}_p1", revision=1,
                                  canonical_arguments={"new_date": "2026-12-04"},
                                  arguments_hash="h", summary="move it to Friday",
                                  created_at=now))
        s.add(OperationRow(id=f"{session_id}_op1", session_id=session_id, tenant_id="acme",
                           tool="appointments.reschedule", server="appointments",
                           resolved_tool="reschedule_appointment",
                           arguments={"new_date": "2026-12-04"}, principal={"tenant_id": "acme"},
                           status="committed", receipt={"confirmation": "R-1"}, created_at=now,
                           updated_at=now))
        s.add(OperationRow(id=f"{session_id}_op2", session_id=session_id, tenant_id="acme",
                           tool="appointments.cancel", server="appointments",
                           resolved_tool="cancel_appointment", arguments={"id": "A"},
                           principal={}, status="unknown", created_at=now, updated_at=now))
        s.add(FollowupRow(id=f"{session_id}_fu1", session_id=session_id, tenant_id="acme",
                          subject_ref="sub_1", when_text="tomorrow at 9", due_at=now,
                          promised_at=now, timezone="UTC", channel="phone",
                          reason="my invoice", status="placed", created_at=now, updated_at=now))
    log = AuditLog(store, clock=clock)
    for kind in ("session.opened", "operation.authorized", "session.closed"):
        await log.append(kind, {"tenant_id": "acme"}, session_id=session_id)


async def a_revoked_voice(store: Store, clock: VirtualClock) -> None:
    now = at(clock)
    async with store.write() as s:
        s.add(VoiceProfileRow(voice_id="corp", tenant="acme", owner="o", purpose="p",
                              languages=["en"], usage_until=now + timedelta(days=900),
                              consent_ref="c", status="revoked", created_at=now))
        await s.flush()
        s.add(VoiceVersionRow(voice_id="corp", version=1, audio_sha256="a", text_sha256="t",
                              ref_audio=b"sealed-audio", ref_text="sealed-text", model="m",
                              params={}, status="revoked", created_at=now))
    await AuditLog(store, clock=clock).append("voice.revoked", {"voice_id": "corp"})


async def contents(store: Store) -> dict[str, Any]:
    async with store.read() as s:
        return {
            "turn": (await s.scalars(select(TurnRow.text))).all(),
            "finding": (await s.scalars(select(FindingRow.text))).all(),
            "heard": (await s.scalars(select(GenerationRow.heard_text))).all(),
            "unit": (await s.scalars(select(SpokenUnitRow.text))).all(),
            "unit_audio": (await s.scalar(select(func.count()).select_from(UnitAudioRow))),
            "arguments": {r.id: (r.arguments, r.receipt) for r in
                          (await s.scalars(select(OperationRow))).all()},
            "readback": (await s.scalars(select(ProposalRevisionRow.summary))).all(),
            "reason": (await s.scalars(select(FollowupRow.reason))).all(),
            "ref_text": (await s.scalars(select(VoiceVersionRow.ref_text))).all(),
        }


async def test_each_class_goes_when_its_period_is_past(store: Store) -> None:
    clock = VirtualClock(START)
    await a_call(store, clock)
    await a_revoked_voice(store, clock)
    log = AuditLog(store, clock=clock)
    policy = RetentionPolicy()

    clock.advance(29 * DAY)
    assert (await purge(store, policy, at(clock))).classes == {}
    kept = await contents(store)
    assert kept["turn"] == ["move my appointment to friday"] and kept["unit_audio"] == 1

    clock.advance(2 * DAY)  # day 31: the revoked voice's reference (30 days) goes
    report = await purge(store, policy, at(clock))
    assert set(report.classes) == {"voice_references"}
    assert (await contents(store))["ref_text"] == [""]

    clock.advance(60 * DAY)  # day 91: transcripts and model responses (90 days)
    report = await purge(store, policy, at(clock))
    assert set(report.classes) == {"transcripts", "model_responses"}
    assert report.classes["transcripts"].rows == {"turns_count": 1, "findings_count": 1}
    assert report.classes["model_responses"].rows == {
        "generations_count": 1, "spoken_units_count": 1, "unit_audio_count": 1}
    now = await contents(store)
    assert (now["turn"], now["finding"], now["heard"], now["unit"], now["unit_audio"]) == (
        [""], [""], [""], [""], 0)
    assert now["arguments"]["ses_1_op1"] == ({"new_date": "2026-12-04"}, {"confirmation": "R-1"})

    clock.advance(275 * DAY)  # day 366: tool arguments and results of finished work
    report = await purge(store, policy, at(clock))
    assert set(report.classes) == {"tool_io"}
    now = await contents(store)
    assert now["arguments"]["ses_1_op1"] == (PURGED, PURGED)
    assert now["arguments"]["ses_1_op2"] == ({"id": "A"}, None), "unknown: kept to reconcile"
    assert (now["readback"], now["reason"]) == ([""], [""])

    # What went is in the audit log, ids and counts only; the chain verifies throughout.
    purged = [e for e in await log.events() if e.kind == "retention.purged"]
    assert [e.data["data_class"] for e in purged] == [
        "voice_references", "transcripts", "model_responses", "tool_io"]
    assert purged[1].data["session_ids"] == ["ses_1"]
    assert purged[1].data["turns_count"] == 1
    assert (await log.verify()).ok
    assert (await purge(store, policy, at(clock))).classes == {}, "a second pass erases nothing"


async def test_audit_payloads_become_tombstones_and_the_chain_still_verifies(
    store: Store,
) -> None:
    clock = VirtualClock(START)
    await a_call(store, clock, "ses_old")
    clock.advance(10 * DAY)
    await a_call(store, clock, "ses_new")
    log = AuditLog(store, clock=clock)
    before = await log.events()
    assert (await log.verify()).ok  # remembered: the tombstones land before where it ended
    policy = RetentionPolicy(audit=5)

    report = await purge(store, policy, at(clock) + timedelta(days=1))
    assert report.classes["audit"].rows == {"audit_events_count": 3}
    after = {e.seq: e for e in await log.events()}
    old = [e for e in before if e.session_id == "ses_old"]
    claim = next(e for e in after.values() if e.kind == "retention.tombstoned")
    for event in old:
        stored = after[event.seq]
        assert stored.data == {"$tombstone": claim.seq}
        assert (stored.hash, stored.prev_hash, stored.kind, stored.at) == (
            event.hash, event.prev_hash, event.kind, event.at)
    assert claim.data["count"] == 3 and claim.data["from_seq"] == old[0].seq
    assert all(after[e.seq].data == e.data for e in before if e.session_id == "ses_new")
    verified = await log.verify()
    assert (verified.ok, verified.count) == (True, len(after))

    # The audit class's own purge record and the claim are never tombstoned.
    await purge(store, policy, at(clock) + timedelta(days=30))
    kinds = {e.kind for e in await log.events() if "$tombstone" not in e.data}
    assert {"retention.tombstoned", "retention.purged"} <= kinds
    assert (await log.verify()).ok


async def test_a_tombstone_no_claim_accounts_for_breaks_the_chain(store: Store) -> None:
    clock = VirtualClock(START)
    await a_call(store, clock)
    log = AuditLog(store, clock=clock)
    events = await log.events()
    victim = events[1]
    async with store.engine.begin() as connection:  # the trigger allows the shape, once
        await connection.execute(
            text("UPDATE audit_events SET data = :data WHERE seq = :seq"),
            {"data": '{"$tombstone": 999}', "seq": victim.seq},
        )
    verified = await log.verify()
    assert (verified.ok, verified.broken_at_seq) == (False, victim.seq)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_events SET data = '{\"$tombstone\": 1, \"x\": 2}' WHERE seq = {seq}",
        "UPDATE audit_events SET data = '{\"other\": 1}' WHERE seq = {seq}",
        "UPDATE audit_events SET data = '{\"$tombstone\": 1}', actor = 'm' WHERE seq = {seq}",
        "DELETE FROM audit_events WHERE seq = {seq}",
    ],
)
async def test_the_triggers_still_refuse_every_other_change(store: Store, statement: str) -> None:
    clock = VirtualClock(START)
    await a_call(store, clock)
    seq = (await AuditLog(store, clock=clock).events())[0].seq
    with pytest.raises((IntegrityError, DBAPIError)):
        async with store.engine.begin() as connection:
            await connection.exec_driver_sql(statement.replace("{seq}", str(seq)))
    assert (await AuditLog(store, clock=clock).verify()).ok


async def test_a_tombstone_is_final(store: Store) -> None:
    clock = VirtualClock(START)
    await a_call(store, clock)
    await purge(store, RetentionPolicy(audit=0), at(clock) + timedelta(seconds=1))
    seq = (await AuditLog(store, clock=clock).events())[0].seq
    with pytest.raises((IntegrityError, DBAPIError)):
        async with store.engine.begin() as connection:
            await connection.exec_driver_sql(
                f"UPDATE audit_events SET data = '{{\"$tombstone\": 1}}' WHERE seq = {seq}")


async def test_serve_purges_periodically_on_its_clock(store: Store) -> None:
    clock = VirtualClock(START)
    await a_call(store, clock)
    passes: list[PurgeReport] = []
    ran = anyio.Event()

    def seen(report: PurgeReport) -> None:
        nonlocal ran
        passes.append(report)
        ran.set()

    async def next_pass() -> PurgeReport:
        nonlocal ran
        with anyio.fail_after(10):
            await ran.wait()
        ran = anyio.Event()
        return passes[-1]

    async with anyio.create_task_group() as tg:
        await tg.start(lambda task_status: run_purges(
            store, RetentionPolicy(), clock, 3600, on_pass=seen, task_status=task_status))
        assert (await next_pass()).classes == {}, "the pass at start finds nothing old"
        clock.advance(3600)
        assert (await next_pass()).classes == {}
        assert (await contents(store))["turn"] == ["move my appointment to friday"]
        clock.advance(91 * DAY)  # the next hourly pass after day 90 erases the transcripts
        assert set((await next_pass()).classes) == {"transcripts", "model_responses"}
        assert (await contents(store))["turn"] == [""]
        tg.cancel_scope.cancel()


def test_policy_files(tmp_path: Path) -> None:
    file = tmp_path / "retention.yaml"
    file.write_text("transcripts: 7\naudit: keep\n")
    policy = load_policy(file)
    assert (policy.transcripts, policy.audit, policy.model_responses) == (7, "keep", 90)
    assert load_policy(None) == RetentionPolicy()
    for body, field in [("raw_audio: 30\n", "raw_audio"), ("transcripts: -1\n", "transcripts"),
                        ("transcript: 5\n", "transcript"), ("telemetry: keep\n", "telemetry")]:
        file.write_text(body)
        with pytest.raises(ConfigError) as refused:
            load_policy(file)
        assert refused.value.field == field and refused.value.path == str(file)
