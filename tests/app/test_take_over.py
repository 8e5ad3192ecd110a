"""A resume taking over a session (``SessionFactory._take_over``) waits for that session's own
record to reach the store, not for the recorder's whole backlog, and not for ever: its
connection holds a session slot meanwhile (docs/scaling.md "Soak")."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from vocero.app.adapters.recorder import BATCH, RetrySettings, StoreRecorder
from vocero.app.adapters.sessions import SessionFactory
from vocero.store import Conversations, Store, upgrade
from vocero.store.engine import CoreWrite
from vocero.store.record_ops import RecordOps

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    url = f"sqlite:///{tmp_path / 'v.db'}"
    await anyio.to_thread.run_sync(upgrade, url)
    opened = Store.open(url)
    try:
        for session_id in ("ses_1", "ses_2"):
            await Conversations(opened).create_session(
                session_id=session_id, tenant_id="acme", subject_ref=session_id,
                profile_id="demo", profile_version="1", resume_token_hash=session_id * 8)
        yield opened
    finally:
        await opened.close()


class FakeSession:
    """The live session of the old connection: closing it lets the connection go, which
    queues the session's close (as ``OpenSession.aclose`` does)."""

    def __init__(self, runtime: FakeRuntime, session_id: str) -> None:
        self.runtime, self.session_id = runtime, session_id
        self.closed_for: list[str] = []

    def close(self, reason: str) -> None:
        self.closed_for.append(reason)
        self.runtime.live.pop(self.session_id, None)
        self.runtime.recorder.close(self.session_id, "LISTENING")
        self.runtime.released.pop(self.session_id).set()


@dataclass
class FakeRuntime:
    """What ``_take_over`` uses of the running server: its live sessions and the recorder."""

    recorder: StoreRecorder
    live: dict[str, Any] = field(default_factory=dict)
    released: dict[str, anyio.Event] = field(default_factory=dict)


class GatedClose(RecordOps):
    """A store whose close of a session does not finish until ``gate`` is set (the write
    waits in the store's worker thread)."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.gate = threading.Event()

    def close_session(self, session_id: str, *, state: str = "CLOSING") -> CoreWrite:
        write = super().close_session(session_id, state=state)

        def gated(connection: Any) -> object:
            self.gate.wait(timeout=30)
            return write(connection)

        return gated


async def test_a_take_over_waits_for_the_sessions_own_record_not_the_backlog(
    store: Store,
) -> None:
    recorder = StoreRecorder(RecordOps(store), lambda _reason: None, batched=True,
                             retry=RetrySettings(first_s=0.01, max_s=0.05))
    runtime = FakeRuntime(recorder)
    old = FakeSession(runtime, "ses_1")
    runtime.live["ses_1"], runtime.released["ses_1"] = old, anyio.Event()
    for n in range(200):  # other sessions' writes queued before the resume
        recorder.turn("ses_2", f"turn_{n}", "text", f"other {n}")
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        with anyio.fail_after(10):
            taken = await SessionFactory(runtime)._take_over("ses_1")  # type: ignore[arg-type]
        still_queued = recorder.pending  # read before anything else can run
        closed = await Conversations(store).get_session("ses_1")
        await recorder.flush()
        recorder.stop()
    assert still_queued >= 201 - 2 * BATCH  # of the 200 queued ahead: it waited for what was in
    # flight, not for the rest
    assert closed is not None and closed.closed_at is not None  # its close landed first
    assert old.closed_for == ["replaced"]
    assert taken is True
    assert len(await Conversations(store).history("ses_2")) == 200  # and none of them lost


async def test_a_take_over_whose_record_cannot_land_gives_up_in_bounded_time(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("vocero.app.adapters.sessions.TAKE_OVER_S", 0.2)
    gated = GatedClose(store)
    recorder = StoreRecorder(gated, lambda _reason: None, batched=True)
    runtime = FakeRuntime(recorder)
    runtime.live["ses_1"] = FakeSession(runtime, "ses_1")
    runtime.released["ses_1"] = anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        try:
            with anyio.fail_after(5):
                taken = await SessionFactory(runtime)._take_over(  # type: ignore[arg-type]
                    "ses_1")
            still_pending = recorder.pending
        finally:
            gated.gate.set()  # the writer's transaction is shielded: let it end
        with anyio.fail_after(5):
            await recorder.flush()
        recorder.stop()
    assert still_pending == 1  # the close was still on its way: kept, not dropped
    assert taken is False  # the resume is refused `in_use` rather than reopen before the close
    closed = await Conversations(store).get_session("ses_1")
    assert closed is not None and closed.closed_at is not None
