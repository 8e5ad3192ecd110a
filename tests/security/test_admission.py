"""Finding 3: ``--max-sessions`` holds however many connects arrive at once.

The attack: with ``--max-sessions 5``, 50 connects sent at the same time were all admitted
(sequential ones were limited): the cap was checked before the new session was counted, and
opening a session awaits the database in between. Here 50 sockets are opened first and each
sends its ``session.connect.v1`` before any answer is read, so all 50 handshakes are in flight
together on the server.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.security.support import settings
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app

pytestmark = pytest.mark.process


def _first_answer(pc: ProtocolClient) -> str:
    frame = pc.receive()
    if frame["type"] == "vocero.error.v1":
        return str(frame["data"]["payload"]["code"])
    return str(frame["type"]).removeprefix("vocero.")


def _connect_all(client: TestClient, tokens: list[str]) -> list[tuple[str, int | None]]:
    """Open one socket per token, send every connect, then read each first answer (and the
    close code of the refused)."""
    answers: list[tuple[str, int | None]] = []
    with ExitStack() as stack:
        clients = [ProtocolClient(stack.enter_context(client.websocket_connect("/v1/realtime")))
                   for _ in tokens]  # fmt: skip
        for pc, token in zip(clients, tokens, strict=True):
            pc.send("session.connect.v1", {"token": token})
        for pc in clients:
            first = _first_answer(pc)
            answers.append((first, pc.expect_close() if first.isupper() else None))
    return answers


def test_fifty_concurrent_connects_admit_exactly_the_cap(tmp_path: Path) -> None:
    chosen = replace(settings(tmp_path), max_sessions=5, max_pending_per_address=64)
    with TestClient(create_app(chosen)) as client:
        answers = _connect_all(client, ["demo-token"] * 50)
        admitted = [a for a in answers if a[0] == "session.configuration_applied.v1"]
        refused = [a for a in answers if a[0] != "session.configuration_applied.v1"]
        assert len(admitted) == 5
        assert set(refused) == {("CAPACITY_EXHAUSTED", 1013)}
        # every slot came back when those sessions ended: the next five get in again
        answers = _connect_all(client, ["demo-token"] * 6)
        assert [a[0] for a in answers].count("session.configuration_applied.v1") == 5


def test_a_slot_taken_by_a_refused_connect_is_given_back(tmp_path: Path) -> None:
    """A connect refused after its slot was taken (no profile for the caller) frees it."""
    with TestClient(create_app(replace(settings(tmp_path), max_sessions=1))) as client:
        answers = _connect_all(client, ["nomatch-token"] * 5)
        assert {a[0] for a in answers} == {"PROFILE_DENIED"}
        with client.websocket_connect("/v1/realtime") as ws:
            assert ProtocolClient(ws).connect()["data"]["payload"]["session_id"]
        with client.websocket_connect("/v1/realtime") as ws:
            ProtocolClient(ws).connect()  # and released again when that session closed
