"""Finding 6: after SIGKILL and restart, interrupted sessions are closed, audited, resumable.

The attack: a session is speaking when the process is killed (SIGKILL: no cleanup at all). After
a restart on the same database its resume token was ``unknown_or_expired``, although the protocol
promises resumption within the window, and its row stayed ``SPEAKING`` with no ``closed_at`` and
no ``session.closed`` event. Here a real ``vocero serve`` is killed mid-answer and restarted.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import websockets.sync.client as ws_client

from tests.security.support import ADMIN, CALLER_TOKEN, Server, frame


def _get(server: Server, path: str) -> Any:
    request = urllib.request.Request(server.url + path, headers=ADMIN)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def _until(conn: ws_client.ClientConnection, name: str, where: Any = lambda p: True) -> Any:
    for _ in range(500):
        event = json.loads(conn.recv(timeout=15))
        if event["type"] == f"vocero.{name}" and where(event["data"]["payload"]):
            return event["data"]["payload"]
    raise AssertionError(f"no {name}")


def _speak_then_get_killed(server: Server) -> tuple[str, str]:
    with ws_client.connect(server.url.replace("http", "ws") + "/v1/realtime",
                           open_timeout=15) as conn:  # fmt: skip
        conn.send(frame("session.connect.v1", {"token": CALLER_TOKEN}, sequence=1))
        applied = _until(conn, "session.configuration_applied.v1")
        session_id, resume_token = applied["session_id"], applied["resume_token"]
        _until(conn, "session.state.v1", lambda p: p["state"] == "LISTENING")
        conn.send(frame("input.text.v1", {"text": "tell me a story"}, sequence=2,
                        session_id=session_id))  # fmt: skip
        _until(conn, "session.state.v1", lambda p: p["state"] == "SPEAKING")
        _get(server, f"/v1/sessions/{session_id}")  # flushes the recorder: the row says so
        server.kill()
    return session_id, resume_token


@pytest.mark.process
@pytest.mark.slow
def test_a_session_killed_mid_answer_is_closed_audited_and_resumable(tmp_path: Path) -> None:
    db = tmp_path / "vocero.db"
    first = Server(tmp_path, db)
    try:
        first.wait_listening()
        session_id, resume_token = _speak_then_get_killed(first)
    finally:
        first.stop()
    with sqlite3.connect(db) as raw:
        left = raw.execute("select state, closed_at from sessions where id = ?", (session_id,))
        assert left.fetchall() == [("SPEAKING", None)], "what the crash leaves behind"

    second = Server(tmp_path, db)
    try:
        second.wait_listening()
        record = _get(second, f"/v1/sessions/{session_id}")
        assert (record["state"], record["closed_at"] is not None) == ("FAILED", True)
        closed = [e for e in _get(second, f"/v1/audit?session_id={session_id}")["items"]
                  if e["kind"] == "session.closed"]  # fmt: skip
        assert [e["data"]["reason"] for e in closed] == ["server_crash"]
        assert closed[0]["data"]["previous_state"] == "SPEAKING"
        with ws_client.connect(second.url.replace("http", "ws") + "/v1/realtime",
                               open_timeout=15) as conn:  # fmt: skip
            connect = {"token": CALLER_TOKEN, "resume_token": resume_token}
            conn.send(frame("session.connect.v1", connect, sequence=1))
            resumed = _until(conn, "session.configuration_applied.v1")
            assert (resumed["session_id"], resumed["rejected_fields"]) == (session_id, [])
            conn.send(frame("session.close.v1", {}, sequence=2, session_id=session_id))
            _until(conn, "session.state.v1", lambda p: p["state"] == "CLOSING")
        kinds = [e["kind"] for e in _get(second, f"/v1/audit?session_id={session_id}")["items"]]
        assert kinds.count("session.resumed") == 1
    finally:
        second.stop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_recovery_keeps_the_window_from_the_last_activity(tmp_path: Path) -> None:
    """A session idle for longer than the window before the crash is closed but not resumable;
    a generation left in progress is ``failed``; sessions closed before are untouched."""
    from vocero.contracts.clock import VirtualClock
    from vocero.store import Store, upgrade_async
    from vocero.store.repositories import Conversations

    await upgrade_async(f"sqlite:///{tmp_path}/v.db")
    store = Store.open(f"sqlite:///{tmp_path}/v.db")
    clock = VirtualClock()
    repo = Conversations(store, clock=clock)
    try:
        for name in ("busy", "idle", "done"):
            await repo.create_session(session_id=f"ses_{name}", tenant_id="acme",
                                      subject_ref="sub_1", profile_id="demo", profile_version="1",
                                      state="SPEAKING", resume_token_hash=name * 8)  # fmt: skip
        await repo.close_session("ses_done", state="CLOSING")
        clock.advance(150)
        await repo.add_turn(session_id="ses_busy", turn_id="turn_1", source="text", text="hi")
        await repo.upsert_generation(generation_id="gen_1", session_id="ses_busy",
                                     status="in_progress", turn_id="turn_1")  # fmt: skip
        clock.advance(50)
        recovered = await repo.recover_interrupted(window_s=120)
        assert {(r.session_id, r.previous_state, r.resumable) for r in recovered} == {
            ("ses_busy", "SPEAKING", True),
            ("ses_idle", "SPEAKING", False),
        }
        assert (await repo.session_to_resume("busy" * 8, window_s=120)) is not None
        assert (await repo.session_to_resume("idle" * 8, window_s=120)) is None
        busy = await repo.get_session("ses_busy")
        assert busy is not None and (busy.state, busy.closed_at is not None) == ("FAILED", True)
        generation = await repo.get_generation("gen_1")
        assert generation is not None and generation.status == "failed"
        done = await repo.get_session("ses_done")
        assert done is not None and done.state == "CLOSING"
        assert await repo.recover_interrupted(window_s=120) == [], "nothing left open"
    finally:
        await store.close()
