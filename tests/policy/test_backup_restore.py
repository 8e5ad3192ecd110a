"""The restore drill (docs/operations.md "Backup and restore"), on SQLite and PostgreSQL.

A store is built through the action plane against the fixture MCP servers: a committed
reschedule, a second one caught ``in_flight`` (the owning service has committed it, its answer
is held back), a scheduled follow-up and an approved vault voice, all on one audit chain.
``vocero backup`` is taken while that call hangs and while audit events keep being appended;
the file is restored into a fresh database. Then the restored store serves as the original did:
its chain verifies and is a prefix of the source's, the voice decrypts with the key, the
follow-up keeps its schedule, and an action plane started on it sends nothing for the committed
operation and reconciles the in-flight one by lookup, never by a second send. A restore into
that non-empty database, and of a truncated or altered file, exits 2 and changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from policy_support import FixtureServers, Talk, caller, harness
from sqlalchemy import select, text

from tests.support.commands import run_cli as cli
from tests.support.pg import fresh_db
from tests.support.voices import KEY, make_wav, voice_fields
from vocero.contracts.clock import VirtualClock
from vocero.contracts.ports import CallMeta, ToolCallRequest, ToolResult
from vocero.followups.records import Followup, FollowupDraft, new_id
from vocero.followups.sql import SqlFollowupStore
from vocero.mcp_gateway import McpGateway
from vocero.policy import ExecutorSettings
from vocero.policy.operations import settled
from vocero.store import AuditLog, Store
from vocero.store.models import DEFAULT_CHAIN, AuditChainHeadRow, AuditEventRow, OperationRow
from vocero.voice_vault import VoiceVault

pytestmark = pytest.mark.anyio

WRITE = "reschedule_appointment"


class HeldAnswer:
    """The owning service receives the call and commits it; its answer is held until
    ``release`` (the operation stays ``in_flight`` in the store meanwhile)."""

    def __init__(self, inner: McpGateway) -> None:
        self.inner = inner
        self.reached = anyio.Event()
        self.release = anyio.Event()

    def definitions(self) -> Any:
        return self.inner.definitions()

    async def call(self, request: ToolCallRequest) -> ToolResult:
        result = await self.inner.call(request)
        if request.tool.endswith("reschedule"):
            self.reached.set()
            await self.release.wait()
        return result

    async def lookup(self, tool: str, meta: CallMeta) -> ToolResult:
        return await self.inner.lookup(tool, meta)


async def confirmed_move(talk: Talk, appointment_id: str) -> Any:
    listing, _ = await talk.propose("appointments.list")
    await talk.execute(listing)
    _, generation = await talk.propose("appointments.reschedule", appointment_id=appointment_id,
                                       new_date="friday", new_time="16:00")
    await talk.heard(generation)
    verdict = await talk.answer("confirm")
    assert verdict.binds and verdict.plan is not None
    return verdict.plan


@asynccontextmanager
async def empty_target(source_url: str, tmp_path: Path, name: str) -> AsyncIterator[str]:
    """A database with no tables of the source's dialect (on PostgreSQL a new one, made in a
    worker thread: ``fresh_db`` runs its own event loop)."""
    if source_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / name}"
        return
    made = fresh_db()
    url = await anyio.to_thread.run_sync(made.__enter__)
    try:
        yield url
    finally:
        await anyio.to_thread.run_sync(made.__exit__, None, None, None)


async def chain_of(url: str) -> tuple[bool, int, tuple[int, str], dict[int, str]]:
    """Whether the chain verifies, its length, its head and every event's hash by seq."""
    store = Store.open(url)
    try:
        verified = await AuditLog(store).verify(full=True)
        async with store.read() as session:
            head = await session.get(AuditChainHeadRow, DEFAULT_CHAIN)
            assert head is not None
            rows = (await session.execute(select(AuditEventRow.seq, AuditEventRow.hash).where(
                AuditEventRow.chain == DEFAULT_CHAIN))).all()
        return verified.ok, verified.count, (head.last_seq, head.last_hash), dict(rows)
    finally:
        await store.close()


async def state_of(url: str) -> tuple[list[tuple[str, str, str]], tuple[int, str]]:
    return await ops_of(url), (await chain_of(url))[2]


@dataclass
class Writes:
    count: int = 0
    first: anyio.Event = field(default_factory=anyio.Event)


@asynccontextmanager
async def appending(store: Store) -> AsyncIterator[Writes]:
    """Audit events appended one after another for as long as the block runs."""
    log, writes = AuditLog(store), Writes()
    async with anyio.create_task_group() as tg:
        async def keep_writing() -> None:
            while True:  # each append is shielded: the checkpoint lets the cancel in
                await log.record("drill.write", {"n": writes.count})
                writes.count += 1
                writes.first.set()
                await anyio.lowlevel.checkpoint()

        tg.start_soon(keep_writing)
        yield writes
        tg.cancel_scope.cancel()


async def test_restore_drill(db_url: str, servers: FixtureServers, tmp_path: Path) -> None:
    backup = tmp_path / "store.vbk"
    clock = VirtualClock(start=datetime.now(UTC).timestamp())
    voice_id = f"v-{uuid.uuid4().hex[:8]}"
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
    fast = ExecutorSettings(poll_interval_s=0.05, reconcile_delay_s=0.05)
    async with harness(db_url, servers, executor=fast) as h:
        vault = VoiceVault(h.store, key=KEY, clock=clock)
        await vault.create_voice(**voice_fields(clock, voice_id=voice_id))
        await vault.add_version(voice_id, make_wav(1.0, rate=24_000), "Hola, soy la voz.", "olga")
        await vault.approve(voice_id, 1, "olga", ["business_owner"])
        await vault.approve(voice_id, 1, "sam", ["security"])
        await vault.load()
        voice = await vault.resolve(voice_id, 1)
        assert voice is not None and voice.ref_audio

        done, done_who = await h.talk()
        committed = await done.execute(await confirmed_move(done, "APT-1001"))
        assert committed.status == "committed"
        followup, _ = await SqlFollowupStore(h.store).record(FollowupDraft(
            session_id=done.coordinator.session_id, tenant_id="acme",
            subject_ref=done_who.subject_ref, when_text="in two days", due_at=due,
            timezone="Europe/Madrid", channel="phone", reason="the invoice",
            operation_id=new_id("op")), datetime.now(UTC))

        live_who = caller()
        held = HeldAnswer(h.gateway(f"ses_{live_who.subject_ref[4:20]}"))
        live, _ = await h.talk(live_who, gateway=held)
        plan = await confirmed_move(live, "APT-1001")
        async with anyio.create_task_group() as tg:
            tg.start_soon(live.execute, plan)
            await held.reached.wait()  # the service committed it; the store says in_flight
            before = await chain_of(db_url)
            async with appending(h.store) as writes:
                with anyio.fail_after(60):
                    await writes.first.wait()
                    at_start = writes.count
                    code, made = await anyio.to_thread.run_sync(
                        cli, "backup", "--out", str(backup), "--db", db_url)
                    during = writes.count - at_start
            held.release.set()
        assert code == 0, made
        assert during > 0  # the store was written while the backup ran
    after = await chain_of(db_url)
    manifest = made["manifest"]
    assert manifest["dialect"] == ("sqlite" if db_url.startswith("sqlite") else "postgresql")
    assert manifest["alembic_revision"] == head_revision()
    assert manifest["payload_sha256"] and made["bytes"] == backup.stat().st_size
    assert KEY not in backup.read_bytes()  # the vault key is not in the backup

    async with empty_target(db_url, tmp_path, "restored.db") as restored, \
            empty_target(db_url, tmp_path, "cut.db") as cut_target, \
            empty_target(db_url, tmp_path, "altered.db") as altered_target:
        code, report = await anyio.to_thread.run_sync(
            cli, "restore", str(backup), "--db", restored)
        assert code == 0, report
        assert report["released"]["outbox"] == 1  # the held call's row, free to take over

        # the audit chain verifies end to end and is the source's chain as the backup saw it
        ok, count, (head_seq, head_hash), hashes = await chain_of(restored)
        assert ok
        assert before[1] <= count <= after[1]
        assert after[3][head_seq] == head_hash
        assert all(after[3][seq] == digest for seq, digest in hashes.items())

        await check_restored_state(restored, voice_id, voice.ref_audio, followup)
        done_op, live_op = committed_and_held(await ops_of(restored))

        # serving the restored store: the committed operation is never sent again, the one in
        # flight at backup time is settled by lookup (the service says it committed), not resent
        async with harness(restored, servers, executor=fast, run_worker=False) as r, \
                anyio.create_task_group() as tg:
            reconciled = anyio.Event()
            r.plane.executor.subscribe(
                live_op, lambda seen: reconciled.set() if settled(seen) else None)
            await tg.start(r.plane.run)
            with anyio.fail_after(30):
                await reconciled.wait()
            found = await r.plane.repo.get(live_op)
            tg.cancel_scope.cancel()
        assert found is not None
        assert (found.status, found.reason_code, found.attempts) == ("committed", "reconciled", 1)
        live_calls = servers.calls("appointments", live_who.subject_ref)
        assert [c["tool"] for c in live_calls if c["tool"] in (WRITE, "lookup_operation")] == [
            WRITE, "lookup_operation"]
        done_calls = servers.calls("appointments", done_who.subject_ref)
        assert [c["meta"]["io.vocero/operation_id"] for c in done_calls
                if c["tool"] == WRITE] == [done_op]
        assert not [c for c in done_calls if c["tool"] == "lookup_operation"]
        assert (await chain_of(restored))[0]

        # a restore into a database that is not empty: exit 2, nothing changed
        untouched = await state_of(restored)
        code, _ = await anyio.to_thread.run_sync(cli, "restore", str(backup), "--db", restored)
        assert code == 2
        assert await state_of(restored) == untouched

        # a truncated file and one altered inside its payload: exit 2, the target left empty
        raw = backup.read_bytes()
        cut = tmp_path / "cut.vbk"
        cut.write_bytes(raw[: len(raw) // 2])
        altered = tmp_path / "altered.vbk"
        altered.write_bytes(flip_payload_byte(backup))
        for broken, target in ((cut, cut_target), (altered, altered_target)):
            code, _ = await anyio.to_thread.run_sync(cli, "restore", str(broken), "--db", target)
            assert code == 2
            assert await tables_in(target) == 0


async def check_restored_state(url: str, voice_id: str, audio: bytes, followup: Followup) -> None:
    store = Store.open(url)
    try:
        vault = VoiceVault(store, key=KEY)
        await vault.load()
        voice = await vault.resolve(voice_id, 1)
        assert voice is not None and voice.ref_audio == audio  # decrypts with the key
        other = VoiceVault(store, key=bytes(32))
        await other.load()
        assert await other.resolve(voice_id, 1) is None  # and with no other key
        kept = await SqlFollowupStore(store).get(followup.id)
        assert kept is not None
        assert (kept.status, kept.due_at, kept.promised_at) == (
            "scheduled", followup.due_at, followup.promised_at)
    finally:
        await store.close()


async def ops_of(url: str) -> list[tuple[str, str, str]]:
    """The operations of confirmed writes (not the reads): id, status, session."""
    store = Store.open(url)
    try:
        async with store.read() as session:
            rows = (await session.execute(select(
                OperationRow.id, OperationRow.status, OperationRow.session_id).where(
                OperationRow.proposal_id.is_not(None)))).all()
        return [(str(a), str(b), str(c)) for a, b, c in rows]
    finally:
        await store.close()


def committed_and_held(ops: list[tuple[str, str, str]]) -> tuple[str, str]:
    """The committed operation's id and the held one's (``in_flight`` in the backup)."""
    by_status = {status: op_id for op_id, status, _ in ops}
    assert sorted(by_status) == ["committed", "in_flight"], ops
    return by_status["committed"], by_status["in_flight"]


def flip_payload_byte(path: Path) -> bytes:
    import tarfile

    with tarfile.open(path) as archive:
        member = archive.getmember("payload")
    raw = bytearray(path.read_bytes())
    raw[member.offset_data + member.size // 2] ^= 0xFF
    return bytes(raw)


async def tables_in(url: str) -> int:
    if url.startswith("sqlite"):
        exists = await anyio.Path(url.split(":///", 1)[1]).exists()
        return -1 if exists else 0  # not even created
    store = Store.open(url)
    try:
        async with store.read() as session:
            return int(await session.scalar(text(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")) or 0)
    finally:
        await store.close()


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    from vocero.store.migrate import alembic_config

    return str(ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head())
