"""Spoken units in the store: every planned unit in order with its evidence and disposition,
played time from the generation's playout, and bounded audio of admitted units."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.speech.support import DECEMBER_1, planner, stream
from vocero.contracts.clock import VirtualClock
from vocero.speech.admission import Decision
from vocero.speech.records import decided_entry, unit_entry
from vocero.store import Store
from vocero.store.repositories import Conversations
from vocero.store.units import UnitAudioBuffer, UnitRepository

pytestmark = pytest.mark.anyio


async def open_session(store: Store, session_id: str = "ses_1") -> None:
    await Conversations(store).create_session(
        session_id=session_id, tenant_id="acme", subject_ref="sub_x", profile_id="demo",
        profile_version="1",
    )


async def test_units_are_listed_in_planning_order_with_their_dispositions(store: Store) -> None:
    await open_session(store)
    repo = UnitRepository(store)
    clock = VirtualClock(start=DECEMBER_1)
    p = planner(clock=clock)
    units = p.claims(["nope", "returns.opened"]) + stream(p, "It costs $40.")
    for unit in units:
        await repo.record(unit_entry(unit, session_id="ses_1"))
    claim_unit = units[1]
    clock.advance(0.25)
    await repo.record(decided_entry(claim_unit, Decision("ready"), session_id="ses_1",
                                    at=clock.now(), audio_ms=1200.0))
    views = await repo.units("ses_1")
    assert [v.unit_id for v in views] == [u.unit_id for u in units]
    assert [(v.kind, v.disposition, v.reason_code) for v in views] == [
        ("claim", "refused", "unknown_claim"), ("claim", "admitted", ""),
        ("conversational", "refused", "unsupported_value"), ("fallback", "planned", ""),
    ]
    views = views[1:]
    item = views[0].public()
    assert set(item) == {
        "unit_id", "generation_id", "turn_id", "question_revision", "kind", "text",
        "claim_keys", "evidence", "disposition", "reason_code", "planned_at", "admitted_at",
        "played_ms",
    }
    assert item["evidence"] == [{"source_id": "returns.opened-policy", "version": "3"}]
    assert item["admitted_at"] - item["planned_at"] == timedelta(seconds=0.25)


async def test_a_late_planned_write_never_undoes_a_decision(store: Store) -> None:
    await open_session(store)
    repo = UnitRepository(store)
    [unit] = planner().claims(["returns.opened"])
    await repo.record(decided_entry(unit, Decision("canceled", "generation_canceled"),
                                    session_id="ses_1", at=DECEMBER_1 + 1))
    await repo.record(unit_entry(unit, session_id="ses_1"))
    [view] = await repo.units("ses_1")
    assert (view.disposition, view.reason_code) == ("canceled", "generation_canceled")


async def test_the_first_decision_is_final_and_later_writes_only_add_audio(
    store: Store,
) -> None:
    await open_session(store)
    repo = UnitRepository(store)
    [unit] = planner().claims(["returns.opened"])
    await repo.record(unit_entry(unit, session_id="ses_1"))
    await repo.record(decided_entry(unit, Decision("ready"), session_id="ses_1",
                                    at=DECEMBER_1 + 1, audio_offset_ms=250.0))
    await repo.record(decided_entry(unit, Decision("ready"), session_id="ses_1",
                                    at=DECEMBER_1 + 3, audio_ms=1800.0,
                                    synthesis={"runner": "sim-tts"}))
    await repo.record(decided_entry(unit, Decision("canceled", "generation_canceled"),
                                    session_id="ses_1", at=DECEMBER_1 + 4))
    [view] = await repo.units("ses_1")
    assert (view.disposition, view.reason_code) == ("admitted", "")
    assert view.admitted_at == datetime.fromtimestamp(DECEMBER_1 + 1, UTC)
    assert (view.audio_offset_ms, view.audio_ms) == (250.0, 1800.0)
    assert view.synthesis == {"runner": "sim-tts"}


async def test_played_ms_follows_the_generations_playout(store: Store) -> None:
    await open_session(store)
    repo = UnitRepository(store)
    p = planner()
    a, b = p.claims(["returns.opened", "returns.unopened"])
    at = DECEMBER_1 + 1
    await repo.record(decided_entry(a, Decision("ready"), session_id="ses_1", at=at,
                                    audio_offset_ms=0.0, audio_ms=1000.0))
    await repo.record(decided_entry(b, Decision("ready"), session_id="ses_1", at=at,
                                    audio_offset_ms=1000.0, audio_ms=800.0))
    await Conversations(store).upsert_generation(
        generation_id="gen_1", session_id="ses_1", turn_id="turn_1", status="interrupted",
        generated_text="", heard_text="", played_ms=1300, sent_ms=1800,
    )
    assert [v.played_ms for v in await repo.units("ses_1")] == [1000, 300]


async def test_audio_is_bounded_per_unit_and_per_session(store: Store) -> None:
    await open_session(store)
    repo = UnitRepository(store)
    a, b = planner().claims(["returns.opened", "returns.unopened"])
    for unit in (a, b):
        await repo.record(unit_entry(unit, session_id="ses_1"))
    take = UnitAudioBuffer(a.unit_id, sample_rate=16000, limit=1000)
    for _ in range(3):
        take.write(b"\x01\x02" * 300)
    assert take.size == 1000 and take.truncated
    assert await repo.save_audio("ses_1", take, session_limit=1500)
    kept = await repo.audio(a.unit_id)
    assert kept is not None and kept.truncated and len(kept.pcm) == 1000
    second = UnitAudioBuffer(b.unit_id, sample_rate=16000)
    second.write(b"\x00" * 600)
    assert not await repo.save_audio("ses_1", second, session_limit=1500)
    assert await repo.audio(b.unit_id) is None
    views = {v.unit_id: v.has_audio for v in await repo.units("ses_1")}
    assert views == {a.unit_id: True, b.unit_id: False}


async def test_old_audio_can_be_pruned_while_units_stay(store: Store) -> None:
    clock = VirtualClock(start=DECEMBER_1)
    await open_session(store)
    repo = UnitRepository(store, clock=clock)
    [unit] = planner().claims(["returns.opened"])
    await repo.record(unit_entry(unit, session_id="ses_1"))
    take = UnitAudioBuffer(unit.unit_id, sample_rate=16000)
    take.write(b"\x00\x00" * 10)
    await repo.save_audio("ses_1", take)
    later = datetime.fromtimestamp(DECEMBER_1, UTC) + timedelta(days=1)
    assert await repo.prune_audio(later) == 1
    assert await repo.audio(unit.unit_id) is None
    assert len(await repo.units("ses_1")) == 1


async def test_audio_of_an_unknown_unit_is_not_kept(store: Store) -> None:
    await open_session(store)
    take = UnitAudioBuffer("unt_missing", sample_rate=16000)
    take.write(b"\x00\x00")
    assert not await UnitRepository(store).save_audio("ses_1", take)
