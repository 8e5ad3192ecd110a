"""Leases of processes sharing one store (SQLite and PostgreSQL): outbox claims, takeover after
a lease runs out or a process is seen gone, fencing of the old holder, named leases, sessions
held, stolen and recovered. Each "process" here is its own engine and node; lease time is a
virtual clock the test moves on."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial

import anyio
import msgspec
import pytest
import sqlalchemy as sa
from sqlalchemy import select

from tests.support.pg import clean_pg, requires_pg
from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import Caller, Principal
from vocero.policy.repository import ActionRepository
from vocero.store import Store
from vocero.store.leases import LeaseLostError, LeaseSettings, NodeLease
from vocero.store.models import NodeRow, OperationRow, OutboxRow, SessionRow
from vocero.store.repositories import Conversations, SessionTakenOverError

pytestmark = pytest.mark.anyio

TTL = 15.0
PRINCIPAL = msgspec.to_builtins(Principal.of(Caller(token="t", subject="s", tenant="acme")))


@asynccontextmanager
async def process(db_url: str, clock: VirtualClock, **settings: bool) -> AsyncIterator[NodeLease]:
    """One process on the store: an engine of its own and a registered node."""
    store = Store.open(db_url)
    node = NodeLease(store, clock=clock, settings=LeaseSettings(ttl_s=TTL, **settings))
    try:
        await node.register()
        yield node
    finally:
        await store.close()


def actions(node: NodeLease, clock: VirtualClock) -> ActionRepository:
    return ActionRepository(node.store, clock, owner=node.id, lease_ttl_s=TTL, lease_clock=clock)


def conversations(node: NodeLease, clock: VirtualClock) -> Conversations:
    return Conversations(node.store, clock=clock, owner=node.id, lease_ttl_s=TTL,
                         lease_clock=clock)


async def authorized(repo: ActionRepository, session_id: str, status: str = "authorized") -> str:
    """An operation with its outbox row, held by the repository's process."""
    operation_id = f"op_{uuid.uuid4().hex[:16]}"
    now = repo.now()
    async with repo.write() as session:
        session.add(OperationRow(
            id=operation_id, proposal_id=None, revision=None, session_id=session_id,
            tenant_id="acme", tool="appointments.reschedule", server="appointments",
            resolved_tool="reschedule_appointment", arguments={}, principal=PRINCIPAL,
            idempotent=False, status=status, attempts=0, receipt=None, reason_code="",
            created_at=now, updated_at=now))
        await session.flush()
        session.add(repo.outbox.new_row(operation_id, now))
    return operation_id


async def a_session(conv: Conversations, name: str = "") -> str:
    session_id = name or f"ses_{uuid.uuid4().hex[:16]}"
    await conv.create_session(session_id=session_id, tenant_id="acme", subject_ref="sub_1",
                              profile_id="demo", profile_version="1", state="SPEAKING",
                              resume_token_hash=f"hash-{session_id}")
    return session_id


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


async def test_a_held_row_waits_for_its_holder_then_is_taken_over_and_reconciled(
    db_url: str,
) -> None:
    clock = VirtualClock()
    async with process(db_url, clock) as a, process(db_url, clock) as b:
        repo_a, repo_b = actions(a, clock), actions(b, clock)
        session_id = await a_session(conversations(a, clock))
        waiting = await authorized(repo_a, session_id)
        sending = await authorized(repo_a, session_id)
        [claimed] = await repo_a.outbox.claim_due(a.id, 1, busy=frozenset({waiting}))
        assert claimed.id == sending
        await repo_a.outbox.transition(sending, "in_flight", sent=True, holder=a.id)

        assert await repo_b.outbox.claim_due(b.id, 10) == []  # A holds both under a live lease
        clock.advance(TTL / 2)
        await a.renew()
        clock.advance(TTL / 2 + 1)
        assert await repo_b.outbox.claim_due(b.id, 10) == []  # renewed: still A's

        clock.advance(TTL)  # A stopped renewing: its hold ran out
        taken = {op.id: op for op in await repo_b.outbox.claim_due(b.id, 10)}
        assert set(taken) == {waiting, sending}
        assert (taken[waiting].status, taken[sending].status) == ("dispatch_pending", "unknown")
        assert taken[sending].reason_code == "interrupted"  # reconciled before any resend
        async with b.store.read() as session:
            holders = set((await session.scalars(select(OutboxRow.claimed_by))).all())
        assert holders == {b.id}

        with pytest.raises(LeaseLostError):  # A comes back: its changes are refused
            await repo_a.outbox.transition(sending, "committed", holder=a.id)
        assert (await repo_b.get(sending)).status == "unknown"  # type: ignore[union-attr]


async def test_concurrent_claims_take_each_row_once(db_url: str) -> None:
    clock = VirtualClock()
    async with process(db_url, clock) as origin:
        repo = ActionRepository(origin.store, clock)  # rows held by nobody
        session_id = await a_session(Conversations(origin.store, clock=clock))
        ids = {await authorized(repo, session_id) for _ in range(24)}
        async with process(db_url, clock) as b, process(db_url, clock) as c, \
                process(db_url, clock) as d:
            claims: dict[str, list[str]] = {}

            async def claim(node: NodeLease) -> None:
                mine = claims.setdefault(node.id, [])
                repo = actions(node, clock)
                while found := await repo.outbox.claim_due(node.id, 3, busy=frozenset(mine)):
                    mine.extend(op.id for op in found)

            async with anyio.create_task_group() as tg:
                for node in (b, c, d):
                    tg.start_soon(claim, node)
        every = [op for ops in claims.values() for op in ops]
        assert sorted(every) == sorted(ids)  # each once, none lost


async def test_a_send_needs_an_unexpired_hold(db_url: str) -> None:
    clock = VirtualClock()
    async with process(db_url, clock) as a:
        repo = actions(a, clock)
        operation_id = await authorized(repo, await a_session(conversations(a, clock)))
        await repo.outbox.claim_due(a.id, 1)
        clock.advance(TTL + 1)  # the database was unreachable: no renewal reached it
        with pytest.raises(LeaseLostError, match="not sending"):
            await repo.outbox.transition(operation_id, "in_flight", sent=True, holder=a.id)
        assert (await repo.get(operation_id)).status == "dispatch_pending"  # type: ignore[union-attr]
        await a.renew()
        sent = await repo.outbox.transition(operation_id, "in_flight", sent=True, holder=a.id)
        assert (sent.status, sent.attempts) == ("in_flight", 1)


@pytest.mark.process
async def test_a_gone_process_of_this_host_is_dead_at_once_and_an_expired_one_later(
    db_url: str,
) -> None:
    clock = VirtualClock()
    async with process(db_url, clock) as gone, process(db_url, clock) as far:
        gone_session = await a_session(conversations(gone, clock))
        far_session = await a_session(conversations(far, clock))
        async with gone.store.write() as session:  # its process is no more
            node = await session.get(NodeRow, gone.id)
            assert node is not None
            node.pid = dead_pid()
        async with far.store.write() as session:  # another host: only its lease tells
            node = await session.get(NodeRow, far.id)
            assert node is not None
            node.host = "elsewhere|boot|pid:[1]"
        async with process(db_url, clock) as survivor:
            assert await survivor.sweep() == []  # register() already swept
            conv = conversations(survivor, clock)
            recovered = await conv.recover_interrupted(window_s=120)
            assert [(r.session_id, r.owner_id, r.resumable) for r in recovered] == [
                (gone_session, gone.id, True)]
            assert (await conv.get_session(far_session)).closed_at is None  # type: ignore[union-attr]

            clock.advance(TTL + 1)
            await survivor.renew()
            assert await survivor.sweep() == [far.id]
            assert [r.session_id for r in await conv.recover_interrupted(window_s=120)] == [
                far_session]
            async with survivor.store.read() as session:
                rows = (await session.execute(select(NodeRow.id, NodeRow.ending))).all()
            endings = {row.id: row.ending for row in rows}
            assert (endings[gone.id], endings[far.id], endings[survivor.id]) == (
                "dead", "expired", None)


@pytest.mark.process
async def test_without_local_liveness_only_the_lease_tells(db_url: str) -> None:
    clock = VirtualClock()
    async with process(db_url, clock) as gone:
        session_id = await a_session(conversations(gone, clock))
        async with gone.store.write() as session:
            node = await session.get(NodeRow, gone.id)
            assert node is not None
            node.pid = dead_pid()
        async with process(db_url, clock, local_liveness=False) as survivor:
            conv = conversations(survivor, clock)
            assert await conv.recover_interrupted(window_s=120) == []
            clock.advance(TTL + 1)
            await survivor.sweep()
            assert [r.session_id for r in await conv.recover_interrupted(window_s=120)] == [
                session_id]


async def test_a_named_lease_has_one_holder_until_it_is_released_or_expires(
    db_url: str,
) -> None:
    clock = VirtualClock()
    async with process(db_url, clock) as a, process(db_url, clock) as b:
        results = []

        async def race(node: NodeLease) -> None:
            results.append((node.id, await node.acquire("followups.queue")))

        async with anyio.create_task_group() as tg:
            tg.start_soon(race, a)
            tg.start_soon(race, b)
        winners = [node for node, won in results if won]
        assert len(winners) == 1
        holder, other = (a, b) if winners == [a.id] else (b, a)
        assert await holder.acquire("followups.queue")  # re-entrant
        await holder.release_lease("followups.queue")
        assert await other.acquire("followups.queue")
        assert not await holder.acquire("followups.queue")
        clock.advance(TTL + 1)  # its holder stopped renewing
        assert await holder.acquire("followups.queue")


async def test_a_session_taken_over_by_a_resume_is_fenced_for_its_old_holder(
    db_url: str,
) -> None:
    clock = VirtualClock()
    async with process(db_url, clock) as a, process(db_url, clock) as b:
        old, new = conversations(a, clock), conversations(b, clock)
        session_id = await a_session(old)
        await old.add_turn(session_id=session_id, turn_id="turn_1", source="text", text="hi")
        await old.upsert_generation(generation_id="gen_1", session_id=session_id,
                                    status="in_progress", turn_id="turn_1")
        assert await old.session_to_resume(f"hash-{session_id}", window_s=120) is None
        found = await new.session_to_resume(f"hash-{session_id}", window_s=120)
        assert found is not None and found.owner_id == a.id and found.closed_at is None
        reopened = await new.reopen_session(session_id, resume_token_hash="hash-new")
        assert reopened.owner_id == a.id  # who it was taken from
        assert (await new.get_session(session_id)).owner_id == b.id  # type: ignore[union-attr]
        generation = await new.get_generation("gen_1")
        assert generation is not None and generation.status == "failed"  # not resumed

        assert await old.not_held([session_id]) == [session_id]
        assert await new.not_held([session_id]) == []
        with pytest.raises(SessionTakenOverError):
            await old.add_turn(session_id=session_id, turn_id="turn_x", source="text",
                               text="late")
        closed = await old.close_session(session_id, state="CLOSING")  # a no-op for A
        assert closed.closed_at is None
        clock.advance(TTL / 2)
        await b.renew()
        clock.advance(TTL / 2 + 1)
        assert await old.recover_interrupted(window_s=120) == []  # B renews it
        record = await new.get_session(session_id)
        assert record is not None and record.lease_expires_at is not None
        assert record.lease_expires_at > datetime.fromtimestamp(clock.now(), UTC)


async def test_a_released_node_hands_back_at_once(db_url: str) -> None:
    clock = VirtualClock()
    async with process(db_url, clock) as a, process(db_url, clock) as b:
        repo_a = actions(a, clock)
        operation_id = await authorized(repo_a, await a_session(conversations(a, clock)))
        assert await actions(b, clock).outbox.claim_due(b.id, 5) == []
        await a.release()  # a drain: nothing waits for the lease
        [taken] = await actions(b, clock).outbox.claim_due(b.id, 5)
        assert taken.id == operation_id


async def test_a_dead_holders_retry_wait_is_not_the_takers(db_url: str) -> None:
    clock = VirtualClock()
    async with process(db_url, clock) as a, process(db_url, clock) as b:
        repo_a, repo_b = actions(a, clock), actions(b, clock)
        operation_id = await authorized(repo_a, await a_session(conversations(a, clock)))
        await repo_a.outbox.claim_due(a.id, 1)
        await repo_a.outbox.transition(operation_id, "dispatch_pending",
                                       reason="CAPACITY_EXHAUSTED", release_after_s=600,
                                       holder=a.id)
        assert await repo_a.outbox.claim_due(a.id, 1) == []  # its own wait holds for A
        clock.advance(TTL + 1)
        [taken] = await repo_b.outbox.claim_due(b.id, 1)  # A is gone: B tries now, not in 10 min
        assert (taken.id, taken.status) == (operation_id, "dispatch_pending")


@pytest.fixture
def pg_db() -> str:
    return clean_pg()


@requires_pg
async def test_a_renewal_chosen_as_a_deadlock_victim_runs_again_and_is_no_outage(
    pg_db: str,
) -> None:
    """Another transaction of the process holds one session row the renewal needs and then
    asks for one the renewal already updated: PostgreSQL breaks the deadlock by rolling the
    renewal back (the other waits longer before it checks). That is a conflict, not a store
    outage: the renewal runs again once the other commits, and ``on_failure`` (which tells
    every live caller the store is away) is not called."""
    url, clock = pg_db, VirtualClock()
    async with process(url, clock) as node:
        conv = conversations(node, clock)
        first, second = await a_session(conv, "ses_first"), await a_session(conv, "ses_second")
        other = Store.open(url)
        failures: list[str] = []
        beat = anyio.Event()

        async def failed() -> None:
            failures.append("store unavailable")
            beat.set()  # the beat is over either way

        async def beaten() -> None:
            beat.set()

        async def renewal_waits_on_a_lock() -> None:
            async with other.engine.connect() as watcher:
                while not (await watcher.execute(sa.text(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND query LIKE 'UPDATE sessions SET lease_expires_at%'"))).scalar():
                    await watcher.commit()
                    await anyio.sleep(0.02)  # the server's own view: nothing to wait on instead

        try:
            async with other.engine.connect() as rival, anyio.create_task_group() as tg:
                # autobegun: this waits longer than the renewal before it looks for a deadlock
                await rival.execute(sa.text("SET LOCAL deadlock_timeout = '30s'"))
                await rival.execute(sa.text("UPDATE sessions SET state = 'LISTENING' "
                                            "WHERE id = :id"), {"id": second})
                await tg.start(partial(node.run, on_beat=beaten, on_failure=failed))
                clock.advance(node.settings.renew_every_s)
                await renewal_waits_on_a_lock()  # it updated the first row, waits on the second
                await rival.execute(sa.text("UPDATE sessions SET state = 'LISTENING' "
                                            "WHERE id = :id"), {"id": first})
                await rival.commit()
                await beat.wait()
                tg.cancel_scope.cancel()
        finally:
            await other.close()
        assert failures == []
        async with node.store.read() as session:
            held = (await session.execute(select(SessionRow.id, SessionRow.lease_expires_at,
                                                 SessionRow.state))).all()
        assert {row.id for row in held} == {first, second}
        assert all(row.state == "LISTENING" for row in held)  # the rival's commit stands
        assert all(row.lease_expires_at == node.renewed_until for row in held)
