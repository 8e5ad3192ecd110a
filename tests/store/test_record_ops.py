"""The recorder's Core writes (``RecordOps``, applied by ``Store.apply``) store exactly what the
ORM writes they replace stored (``Conversations``, ``UnitRepository``, ``AuditLog``): the same
rows and columns, the same idempotence, the same refusals, one audit chain that verifies; and a
batch of them on a SQLite file costs one hand-off to a worker thread, not a round trip to
aiosqlite's thread per statement (issue 46 item 4)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import event, select, text

from tests.support.db import migrated_copy
from vocero.app.adapters.recorder import StoreRecorder
from vocero.contracts.clock import VirtualClock
from vocero.store import AuditLog, Conversations, SessionNotFoundError, Store
from vocero.store.engine import CoreWrite, WriteFailedError
from vocero.store.models import GenerationRow, SessionRow, SpokenUnitRow, TurnRow, UnitAudioRow
from vocero.store.models.audit import AuditEventRow
from vocero.store.record_ops import RecordOps
from vocero.store.repositories import SessionTakenOverError
from vocero.store.units import UnitAudioBuffer, UnitEntry, UnitRepository

pytestmark = pytest.mark.anyio

START = 1_780_000_000.0


def at(clock: VirtualClock) -> datetime:
    return datetime.fromtimestamp(clock.now(), UTC)


def entry(session_id: str, unit_id: str, clock: VirtualClock, **changes: Any) -> UnitEntry:
    fields: dict[str, Any] = {
        "unit_id": unit_id, "session_id": session_id, "generation_id": f"gen_{session_id}",
        "turn_id": f"turn_{session_id}_1", "question_revision": 2, "index": 0, "kind": "claim",
        "text": "Your order ships Monday.", "claim_keys": ["order.ships"],
        "evidence": [{"source_id": "kb_1", "version": "3"}], "planned_at": at(clock),
    }
    return UnitEntry(**(fields | changes))


def audio(unit_id: str, pcm: bytes) -> UnitAudioBuffer:
    buffer = UnitAudioBuffer(unit_id, sample_rate=16000)
    buffer.write(pcm)
    return buffer


class Orm:
    """The writes as the recorder made them before: the ORM repositories, one transaction
    each."""

    def __init__(self, store: Store, clock: VirtualClock, audit: AuditLog) -> None:
        self.conversations = Conversations(store, clock=clock)
        self.units = UnitRepository(store, clock=clock)
        self.audit = audit


def conversation(
    s: str, clock: VirtualClock, orm: Orm | None, ops: RecordOps | None
) -> list[Callable[[], Awaitable[Any]] | CoreWrite]:
    """One session's record, every kind of write the recorder makes (and each edge the ORM
    handled: a write sent twice, a decided unit decided again, audio past the budget), as the
    ORM's calls or as Core writes."""
    first = entry(s, f"u_{s}_1", clock)
    later = entry(s, f"u_{s}_1", clock, disposition="admitted", decided_at=at(clock),
                  admitted_at=at(clock), audio_offset_ms=40.0, audio_ms=900.5)
    refused = entry(s, f"u_{s}_1", clock, disposition="refused", reason_code="stale_claim",
                    decided_at=at(clock), audio_ms=100.0, synthesis={"voice": "v1"})
    second = entry(s, f"u_{s}_2", clock, index=1, kind="conversational", text="Anything else?",
                   claim_keys=[], evidence=[], audio_ms=-5.0)
    pcm, big = b"\x01\x00" * 800, b"\x02\x00" * 2000
    gen: dict[str, Any] = {"generation_id": f"gen_{s}", "session_id": s}
    done: dict[str, Any] = gen | {"turn_id": f"turn_{s}_1", "generated_text": "It ships.",
                                  "heard_text": "It sh", "played_ms": 700, "sent_ms": 900}
    event: dict[str, Any] = {"session_id": s, "at": at(clock)}
    if orm is not None:
        c, u = orm.conversations, orm.units
        return [
            lambda: c.add_turn(session_id=s, turn_id=f"turn_{s}_1", source="audio", text="when"),
            lambda: c.add_turn(session_id=s, turn_id=f"turn_{s}_1", source="audio", text="when"),
            lambda: c.update_session(s, state="THINKING"),
            lambda: c.upsert_generation(status="in_progress", turn_id=f"turn_{s}_1", **gen),
            lambda: u.record(first),
            lambda: u.record(second),
            lambda: u.record(later),
            lambda: u.record(refused),
            lambda: u.save_audio(s, audio(f"u_{s}_1", pcm), session_limit=5000),
            lambda: u.save_audio(s, audio(f"u_{s}_1", pcm + pcm), session_limit=5000),
            lambda: u.save_audio(s, audio(f"u_{s}_2", big), session_limit=5000),
            lambda: u.save_audio(s, audio(f"u_{s}_9", pcm), session_limit=5000),
            lambda: c.upsert_generation(status="interrupted", **done),
            lambda: c.upsert_generation(status="interrupted", **done),
            lambda: c.add_turn(session_id=s, turn_id=f"turn_{s}_2", source="text", text="ok"),
            lambda: c.update_session(s, effective={"voice": {"id": "v1"}}),
            lambda: orm.audit.record("session.closed", {"state": "LISTENING"}, **event),
            lambda: c.close_session(s, state="LISTENING"),
            lambda: c.update_session(s, resume_token_hash=""),
            lambda: c.close_session(s, state="CLOSING"),
        ]
    assert ops is not None
    return [
        ops.turn(s, f"turn_{s}_1", "audio", "when"),
        ops.turn(s, f"turn_{s}_1", "audio", "when"),
        ops.update_session(s, state="THINKING"),
        ops.generation(status="in_progress", turn_id=f"turn_{s}_1", **gen),
        ops.unit(first),
        ops.unit(second),
        ops.unit(later),
        ops.unit(refused),
        ops.unit_audio(s, audio(f"u_{s}_1", pcm), session_limit=5000),
        ops.unit_audio(s, audio(f"u_{s}_1", pcm + pcm), session_limit=5000),
        ops.unit_audio(s, audio(f"u_{s}_2", big), session_limit=5000),
        ops.unit_audio(s, audio(f"u_{s}_9", pcm), session_limit=5000),
        ops.generation(status="interrupted", **done),
        ops.generation(status="interrupted", **done),
        ops.turn(s, f"turn_{s}_2", "text", "ok"),
        ops.update_session(s, effective={"voice": {"id": "v1"}}),
        ops.audit("session.closed", {"state": "LISTENING"}, **event),
        ops.close_session(s, state="LISTENING"),
        ops.update_session(s, resume_token_hash=""),
        ops.close_session(s, state="CLOSING"),
    ]


async def rows(store: Store, session_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every row the session's record left, its own id renamed ``S``."""
    tables = [(SessionRow, SessionRow.id), (TurnRow, TurnRow.session_id),
              (GenerationRow, GenerationRow.session_id),
              (SpokenUnitRow, SpokenUnitRow.session_id), (UnitAudioRow, UnitAudioRow.session_id)]
    found: list[tuple[str, dict[str, Any]]] = []
    async with store.read() as session:
        for model, column in tables:
            table = model.__table__
            query = select(table).where(column == session_id).order_by(*table.primary_key)
            for row in (await session.execute(query)).mappings():
                found.append((table.name, {
                    name: value.replace(session_id, "S") if isinstance(value, str) else value
                    for name, value in row.items()
                }))
        events = (await session.scalars(select(AuditEventRow).where(
            AuditEventRow.session_id == session_id).order_by(AuditEventRow.seq))).all()
    found += [("audit_events", {"kind": e.kind, "actor": e.actor, "at": e.at, "data": e.data})
              for e in events]
    return found


async def test_the_core_writes_store_what_the_orm_writes_stored(store: Store) -> None:
    clock = VirtualClock(start=START)
    audit = AuditLog(store, clock=clock)
    owner = "node_a"
    orm = Orm(store, clock, audit)
    orm.conversations.owner = owner
    ops = RecordOps(store, owner=owner, clock=clock)
    for s in ("ses_orm", "ses_core"):
        await Conversations(store, clock=clock, owner=owner).create_session(
            session_id=s, tenant_id="acme", subject_ref="subj", profile_id="demo",
            profile_version="1", resume_token_hash="f" * 64)
    old = conversation("ses_orm", clock, orm, None)
    new = conversation("ses_core", clock, None, ops)
    for old_write, new_write in zip(old, new, strict=True):  # the same clock for both
        clock.advance(0.25)
        await old_write()  # type: ignore[operator]
        await store.apply([new_write])  # type: ignore[list-item]
    clock.advance(1)
    await store.apply(new)  # type: ignore[arg-type]  # all again, one transaction: no change
    for old_write in old:
        await old_write()  # type: ignore[operator]

    written = await rows(store, "ses_core")
    assert [table for table, _ in written].count("spoken_units") == 2
    assert [table for table, _ in written].count("unit_audio") == 1
    before = await rows(store, "ses_orm")
    assert written == before
    verified = await audit.verify(full=True)
    assert verified.ok and verified.count == 4  # both sessions' events, twice: one chain


async def test_the_core_writes_refuse_what_the_orm_writes_refused(store: Store) -> None:
    clock = VirtualClock(start=START)
    theirs = Conversations(store, clock=clock, owner="node_b")
    await theirs.create_session(session_id="ses_b", tenant_id="acme", subject_ref="s",
                                profile_id="demo", profile_version="1")
    mine = Conversations(store, clock=clock, owner="node_a")
    await mine.create_session(session_id="ses_a", tenant_id="acme", subject_ref="s",
                              profile_id="demo", profile_version="1")
    await mine.add_turn(session_id="ses_a", turn_id="turn_1", source="text", text="hi")
    await mine.upsert_generation(generation_id="gen_1", session_id="ses_a", status="completed")
    ops = RecordOps(store, owner="node_a", clock=clock)
    refusals: list[tuple[CoreWrite, Callable[[], Awaitable[Any]], type[Exception]]] = [
        (ops.turn("ses_x", "turn_9", "text", "hi"),
         lambda: mine.add_turn(session_id="ses_x", turn_id="turn_9", source="text", text="hi"),
         SessionNotFoundError),
        (ops.update_session("ses_b", state="THINKING"),
         lambda: mine.update_session("ses_b", state="THINKING"), SessionTakenOverError),
        (ops.generation(generation_id="gen_9", session_id="ses_b", status="in_progress"),
         lambda: mine.upsert_generation(generation_id="gen_9", session_id="ses_b",
                                        status="in_progress"), SessionTakenOverError),
    ]
    await theirs.close_session("ses_b")
    before = await rows(store, "ses_b")
    for write, orm_write, error in refusals:
        with pytest.raises(error):
            await orm_write()
        with pytest.raises(WriteFailedError) as failed:
            await store.apply([write])
        assert isinstance(failed.value.__cause__, error)
    other = Conversations(store, clock=clock)
    await other.create_session(session_id="ses_c", tenant_id="acme", subject_ref="s",
                               profile_id="demo", profile_version="1")
    free = RecordOps(store, clock=clock)
    for write, orm_call in [
        (free.turn("ses_c", "turn_1", "text", "hi"),
         lambda: other.add_turn(session_id="ses_c", turn_id="turn_1", source="text", text="x")),
        (free.generation(generation_id="gen_1", session_id="ses_c", status="completed"),
         lambda: other.upsert_generation(generation_id="gen_1", session_id="ses_c",
                                         status="completed")),
    ]:
        with pytest.raises(ValueError, match="belongs to another session"):
            await orm_call()
        with pytest.raises(WriteFailedError) as failed:
            await store.apply([write])
        assert isinstance(failed.value.__cause__, ValueError)
    await store.apply([ops.close_session("ses_b", state="FAILED")])  # held elsewhere: left
    assert await rows(store, "ses_b") == before


async def test_a_write_that_fails_rolls_its_whole_batch_back(store: Store) -> None:
    await Conversations(store).create_session(session_id="ses_1", tenant_id="acme",
                                              subject_ref="s", profile_id="demo",
                                              profile_version="1")
    ops = RecordOps(store)
    with pytest.raises(WriteFailedError) as failed:
        await store.apply([ops.turn("ses_1", "turn_1", "text", "hi"),
                           ops.update_session("ses_1", state="THINKING"),
                           ops.turn("ses_nobody", "turn_2", "text", "hi")])
    assert failed.value.index == 2
    assert await Conversations(store).history("ses_1") == []
    found = await Conversations(store).get_session("ses_1")
    assert found is not None and found.state == "CONNECTING"


class Offloads:
    """The store's worker-thread hand-off, counted."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, call: Callable[[], None]) -> None:
        self.calls += 1
        await anyio.to_thread.run_sync(call)


async def test_a_batch_of_the_recorders_writes_is_one_hand_off_to_a_worker_thread(
    tmp_path: Path,
) -> None:
    """50 writes of every kind, queued before the writer runs: one transaction, one call into
    a worker thread, and not one statement through the async engine (aiosqlite's thread)."""
    offloads = Offloads()
    store = Store.open(migrated_copy(tmp_path / "v.db"), offload=offloads)
    try:
        await Conversations(store).create_session(session_id="ses_1", tenant_id="acme",
                                                  subject_ref="s", profile_id="demo",
                                                  profile_version="1")
        clock = VirtualClock(start=START)
        on_the_loop: list[str] = []
        event.listen(store.engine.sync_engine, "before_cursor_execute",
                     lambda _c, _cur, statement, *_rest: on_the_loop.append(statement))
        drops: list[str] = []
        recorder = StoreRecorder(RecordOps(store, clock=clock), drops.append, units=True,
                                 audit=AuditLog(store, clock=clock), batched=True)
        for n in range(8):
            recorder.turn("ses_1", f"turn_{n}", "text", f"line {n}")
            recorder.state("ses_1", "THINKING")
            recorder.generation("ses_1", f"gen_{n}", f"turn_{n}", status="completed",
                                generated_text="Sure.", heard_text="Sure.", played_ms=500,
                                sent_ms=500)
            recorder.unit(entry("ses_1", f"u_{n}", clock, generation_id=f"gen_{n}"))
            recorder.unit(entry("ses_1", f"u_{n}", clock, generation_id=f"gen_{n}",
                                disposition="admitted", decided_at=at(clock)))
            writer = recorder.unit_audio("ses_1", f"u_{n}", sample_rate=16000)
            writer.write(b"\x01\x00" * 160)
            writer.close()
        recorder.audit("session.closed", {"state": "LISTENING"}, session_id="ses_1")
        recorder.close("ses_1", "LISTENING")
        assert recorder.pending == 8 * 5 + 1 + 2  # the states: only the last one is queued
        async with anyio.create_task_group() as tg:
            await tg.start(recorder.run)
            with anyio.fail_after(10):
                await recorder.flush()
            recorder.stop()
        assert (offloads.calls, on_the_loop, drops) == (1, [], [])
        history = await Conversations(store).history("ses_1")
        assert len(history) == 16
        units = await UnitRepository(store).units("ses_1")
        assert [(u.seq, u.disposition, u.has_audio) for u in units] == [
            (n + 1, "admitted", True) for n in range(8)]
        session = await Conversations(store).get_session("ses_1")
        assert session is not None and session.closed_at is not None
        assert (await AuditLog(store).verify()).ok
    finally:
        await store.close()


async def test_plain_connections_follow_the_stores_sqlite_settings(tmp_path: Path) -> None:
    """The worker thread's connection is set up as the async engine's: foreign keys on, WAL,
    and its transactions take the write lock when they begin."""
    store = Store.open(migrated_copy(tmp_path / "v.db"))
    try:
        assert store.plain is not None
        seen: list[Any] = []

        def pragmas(connection: Any) -> None:
            seen.append(connection.execute(text("PRAGMA foreign_keys")).scalar())
            seen.append(connection.execute(text("PRAGMA journal_mode")).scalar())

        begins: list[str] = []
        event.listen(store.plain, "before_cursor_execute",
                     lambda _c, _cur, statement, *_rest: begins.append(statement))
        await store.apply([pragmas])
        assert seen == [1, "wal"]
        assert begins[0] == "BEGIN IMMEDIATE"
    finally:
        await store.close()
