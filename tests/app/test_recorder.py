"""The conversation recorder across a store outage: what the store could not take is kept and
applied, in order and once, when it answers again; what can never be written is dropped, counted,
and does not hold the rest back; a flush waits for one attempt, not for the outage. Under load:
writes commit in batches, only sheddable ones are refused past the bound, and a session's flush
does not wait for the other sessions' backlog."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import pytest
from sqlalchemy import event
from sqlalchemy.exc import DBAPIError

from vocero.app.adapters.recorder import BATCH, RetrySettings, StoreRecorder
from vocero.contracts.clock import VirtualClock
from vocero.store import AuditLog, Conversations, Store
from vocero.store.engine import CoreWrite
from vocero.store.record_ops import RecordOps

pytestmark = pytest.mark.anyio

FAST = RetrySettings(first_s=0.01, max_s=0.05, give_up_s=60.0)
START = 1_780_000_000.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def connection_lost() -> DBAPIError:
    """What SQLAlchemy raises when PostgreSQL goes away under a transaction (asyncpg's
    ``ConnectionDoesNotExistError``): the connection is invalidated."""
    return DBAPIError("COMMIT", None, ConnectionError("connection was closed"),
                      connection_invalidated=True)


class Flaky(RecordOps):
    """A store whose transactions fail as an unreachable one does while ``down`` is set.
    ``lose_ack`` commits once, then fails as if the acknowledgement of the commit was lost.
    ``attempts`` counts the writes handed to it."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.down = False
        self.lose_ack = 0
        self.attempts = 0

    async def apply(self, writes: Sequence[CoreWrite]) -> None:
        self.attempts += len(writes)
        if self.down:
            raise ConnectionRefusedError(111, "Connect call failed")  # as asyncpg connects
        await super().apply(writes)
        if self.lose_ack:
            self.lose_ack -= 1
            raise connection_lost()


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    """A SQLite file (the batches run in a worker thread) or PostgreSQL."""
    opened = Store.open(db_url)
    try:
        await Conversations(opened).create_session(
            session_id="ses_1", tenant_id="acme", subject_ref="s", profile_id="demo",
            profile_version="1", resume_token_hash="f" * 64)
        yield opened
    finally:
        await opened.close()


def heard(recorder: StoreRecorder, generation_id: str, turn_id: str, text: str) -> None:
    recorder.generation("ses_1", generation_id, turn_id, status="completed",
                        generated_text=text, heard_text=text, played_ms=900, sent_ms=900)


async def history(store: Store) -> list[tuple[str, str]]:
    return [(e.role, e.text) for e in await Conversations(store).history("ses_1")]


async def test_what_is_said_while_the_store_is_away_is_recorded_in_order_when_it_returns(
    store: Store,
) -> None:
    flaky = Flaky(store)
    drops: list[str] = []
    backlog: list[int] = []
    recorder = StoreRecorder(flaky, drops.append, retry=FAST, on_pending=backlog.append)
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        recorder.turn("ses_1", "turn_1", "text", "list my appointments")
        heard(recorder, "gen_1", "turn_1", "I found your appointments.")
        await recorder.flush()

        flaky.down = True
        recorder.turn("ses_1", "turn_2", "text", "yes")
        heard(recorder, "gen_2", "turn_2", "I haven't made any change.")
        recorder.turn("ses_1", "turn_3", "text", "thanks")
        with anyio.fail_after(5):
            await recorder.flush()  # one attempt failed: it does not wait for the outage
        assert recorder.store_unreachable
        assert recorder.pending == 3
        assert backlog[-3:] == [1, 2, 3]  # the gauge shows the backlog the outage builds
        failed_attempts = flaky.attempts

        flaky.down = False
        with anyio.fail_after(5):
            await recorder.flush()
        assert not recorder.store_unreachable
        assert recorder.pending == 0
        recorder.stop()
    assert flaky.attempts > failed_attempts
    assert backlog[-1] == 0
    assert await history(store) == [
        ("user", "list my appointments"), ("assistant", "I found your appointments."),
        ("user", "yes"), ("assistant", "I haven't made any change."), ("user", "thanks"),
    ]
    assert drops == []


async def test_a_flush_tries_again_at_once_instead_of_after_the_backoff(store: Store) -> None:
    flaky = Flaky(store)
    recorder = StoreRecorder(flaky, lambda _reason: None,
                             retry=RetrySettings(first_s=60.0, max_s=60.0))
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        flaky.down = True
        recorder.turn("ses_1", "turn_1", "text", "yes")
        with anyio.fail_after(5):
            await recorder.flush()
        flaky.down = False
        with anyio.fail_after(5):  # the writer waits 60 s between attempts unless woken
            await recorder.flush()
        recorder.stop()
    assert await history(store) == [("user", "yes")]


async def test_a_commit_whose_acknowledgement_was_lost_is_recorded_once(store: Store) -> None:
    flaky = Flaky(store)
    flaky.lose_ack = 2  # the turn and the generation both commit, then the connection drops
    drops: list[str] = []
    recorder = StoreRecorder(flaky, drops.append, retry=FAST)
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        recorder.turn("ses_1", "turn_1", "text", "yes")
        heard(recorder, "gen_1", "turn_1", "Done.")
        with anyio.fail_after(5):
            while recorder.pending:  # each write is retried once, then succeeds
                await recorder.flush()
        recorder.stop()
    assert flaky.attempts == 4
    assert await history(store) == [("user", "yes"), ("assistant", "Done.")]
    assert drops == []


async def test_a_write_that_can_never_succeed_is_dropped_and_the_rest_go_on(
    store: Store,
) -> None:
    flaky = Flaky(store)
    drops: list[str] = []
    recorder = StoreRecorder(flaky, drops.append, retry=FAST)
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        recorder.turn("ses_nobody", "turn_1", "text", "hello")  # no such session
        recorder.turn("ses_1", "turn_2", "text", "hello")
        with anyio.fail_after(5):
            await recorder.flush()
        recorder.stop()
    assert flaky.attempts == 2  # not retried
    assert drops == ["write_failed"]
    assert await history(store) == [("user", "hello")]


async def test_a_write_failing_past_the_give_up_time_is_dropped_and_counted(
    store: Store,
) -> None:
    flaky = Flaky(store)
    dropped = anyio.Event()
    drops: list[str] = []

    def drop(reason: str) -> None:
        drops.append(reason)
        dropped.set()

    recorder = StoreRecorder(flaky, drop,
                             retry=RetrySettings(first_s=0.01, max_s=0.02, give_up_s=0.1))
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        flaky.down = True
        recorder.turn("ses_1", "turn_1", "text", "yes")
        with anyio.fail_after(5):
            await dropped.wait()
        flaky.down = False
        recorder.turn("ses_1", "turn_2", "text", "thanks")
        with anyio.fail_after(5):
            await recorder.flush()
        recorder.stop()
    assert drops == ["store_unreachable"]
    assert flaky.attempts > 2
    assert await history(store) == [("user", "thanks")]


async def test_past_the_queue_only_sheddable_writes_are_refused_and_counted(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turns, heard text, closes and audit events are kept past the bound (the backlog is held
    back by refusing new sessions instead); intermediate states are shed, and counted."""
    monkeypatch.setattr("vocero.app.adapters.write_queue.QUEUE", 2)
    flaky = Flaky(store)
    drops: list[str] = []
    recorder = StoreRecorder(flaky, drops.append, retry=FAST)
    flaky.down = True
    for n in range(3):  # no writer yet: the third passes the bound, and is kept
        recorder.turn("ses_1", f"turn_{n}", "text", f"line {n}")
    heard(recorder, "gen_1", "turn_2", "Noted.")
    assert recorder.backlogged  # new sessions are turned away (Runtime.wait_ready)
    recorder.state("ses_1", "THINKING")  # sheddable: refused
    assert drops == ["queue_full"]
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        flaky.down = False
        with anyio.fail_after(5):
            await recorder.flush()
        assert not recorder.backlogged
        recorder.stop()
    recorder.turn("ses_1", "turn_9", "text", "late")
    assert drops == ["queue_full", "stopped"]
    assert await history(store) == [("user", "line 0"), ("user", "line 1"), ("user", "line 2"),
                                    ("assistant", "Noted.")]


async def test_queued_writes_commit_in_batches_and_a_bad_one_is_dropped_alone(
    store: Store,
) -> None:
    """One transaction per batch of writes (not one per write), in order; a write that can never
    succeed rolls its batch back, is dropped and counted, and the rest of the batch is applied."""
    commits: list[int] = []
    event.listen(store.plain or store.engine.sync_engine, "commit",  # plain: a SQLite file
                 lambda _conn: commits.append(1))
    drops: list[str] = []
    recorder = StoreRecorder(RecordOps(store), drops.append, retry=FAST, batched=True)
    for n in range(100):
        recorder.turn("ses_1", f"turn_{n}", "text", f"line {n}")
        if n == 70:
            recorder.turn("ses_nobody", "turn_x", "text", "no such session")
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        with anyio.fail_after(10):
            await recorder.flush()
        recorder.stop()
    assert drops == ["write_failed"]
    assert await history(store) == [("user", f"line {n}") for n in range(100)]
    assert 2 <= len(commits) <= 3  # 101 writes: two batches, one tried again without the bad one


async def test_a_session_flush_waits_for_its_own_writes_not_for_the_queue_ahead(
    store: Store,
) -> None:
    """What a resume needs: the session's queued writes move ahead of the other sessions'
    (their order kept), so the wait is one batch at most, not the whole backlog."""
    await Conversations(store).create_session(
        session_id="ses_2", tenant_id="acme", subject_ref="t", profile_id="demo",
        profile_version="1")
    recorder = StoreRecorder(RecordOps(store), lambda _reason: None, retry=FAST, batched=True)
    for n in range(200):  # another session's backlog
        recorder.turn("ses_2", f"turn_b{n}", "text", f"other {n}")
    recorder.turn("ses_1", "turn_1", "text", "hello")
    recorder.close("ses_1", "LISTENING")
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        with anyio.fail_after(10):
            await recorder.flush_session("ses_1")
        still_queued = recorder.pending  # read before anything else can run
        closed = await Conversations(store).get_session("ses_1")
        with anyio.fail_after(10):
            await recorder.flush()
        recorder.stop()
    assert closed is not None and closed.closed_at is not None
    assert await history(store) == [("user", "hello")]
    assert still_queued >= 202 - 2 * BATCH  # it waited for a batch or two, not the 200 ahead
    everything = await Conversations(store).history("ses_2")
    assert [e.text for e in everything] == [f"other {n}" for n in range(200)]


async def test_an_audit_event_of_the_outage_keeps_its_time_and_its_place(store: Store) -> None:
    clock = VirtualClock(start=START)
    audit = AuditLog(store, clock=clock)
    flaky = Flaky(store)
    recorder = StoreRecorder(flaky, lambda _reason: None, retry=FAST, audit=audit)
    flaky.down = True
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        recorder.audit("session.closed", {"state": "LISTENING"}, session_id="ses_1")
        clock.advance(1)
        recorder.withdraw_resume("ses_1")
        recorder.audit("session.opened", {"profile_id": "demo"}, session_id="ses_2")
        with anyio.fail_after(5):
            await recorder.flush()
        assert recorder.pending == 3
        clock.advance(30)  # the outage lasts
        flaky.down = False
        with anyio.fail_after(5):
            await recorder.flush()
        recorder.stop()
    events = await audit.events()
    assert [(e.kind, e.session_id, e.at.timestamp()) for e in events] == [
        ("session.closed", "ses_1", START), ("session.opened", "ses_2", START + 1)]
    verified = await audit.verify()
    assert (verified.ok, verified.count) == (True, 2)  # the chain holds, late events and all
    found = await Conversations(store).session_by_resume_hash("f" * 64)
    assert found is None  # the token of the closed session no longer resumes it


class Counted(RecordOps):
    """The recorder's writes, remembering every state it applied, in order."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.states: list[str] = []

    def update_session(self, session_id: str, **changes: Any) -> CoreWrite:
        write = super().update_session(session_id, **changes)

        def counted(connection: Any) -> object:
            if "state" in changes:
                self.states.append(changes["state"])
            return write(connection)

        return counted


async def test_a_session_state_still_queued_is_replaced_by_its_next_one(store: Store) -> None:
    """Only a session's last state counts: while the writer is behind, a newer state replaces
    the one still queued instead of queuing behind it; turns around them are all kept, in
    order, and a state already being applied is not touched."""
    counted = Counted(store)
    drops: list[str] = []
    recorder = StoreRecorder(counted, drops.append, retry=FAST, batched=True)
    for n, state in enumerate(["THINKING", "SPEAKING", "LISTENING"]):
        recorder.turn("ses_1", f"turn_{n}", "text", f"line {n}")
        recorder.state("ses_1", state)
    assert recorder.pending == 4  # three turns and one state
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        with anyio.fail_after(5):
            await recorder.flush()
        recorder.state("ses_1", "THINKING")  # the queue is empty: written as it comes
        with anyio.fail_after(5):
            await recorder.flush()
        recorder.stop()
    assert counted.states == ["LISTENING", "THINKING"]
    assert await history(store) == [("user", f"line {n}") for n in range(3)]
    session = await Conversations(store).get_session("ses_1")
    assert session is not None and session.state == "THINKING"
    assert drops == []


async def test_past_the_queue_a_state_replacing_a_queued_one_is_not_shed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("vocero.app.adapters.write_queue.QUEUE", 2)
    counted = Counted(store)
    drops: list[str] = []
    recorder = StoreRecorder(counted, drops.append, retry=FAST, batched=True)
    recorder.state("ses_1", "THINKING")
    recorder.turn("ses_1", "turn_1", "text", "hello")
    assert recorder.backlogged
    recorder.state("ses_1", "SPEAKING")  # takes the queued state's place: nothing grows
    recorder.state("ses_2", "SPEAKING")  # a new sheddable write past the bound: shed
    assert drops == ["queue_full"] and recorder.pending == 2
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        with anyio.fail_after(5):
            await recorder.flush()
        recorder.stop()
    assert counted.states == ["SPEAKING"]
    assert await history(store) == [("user", "hello")]
