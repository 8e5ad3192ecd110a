"""Finding 8: a client that stops reading is closed with 1008, and nothing secret is logged.

The attack: connect, then stop reading while sending updates (each one answers a
``configuration_applied`` on the control lane). The lane filled, the producer raised
``ControlLaneFull`` inside the session's task group, the connection ended with ``INTERNAL`` and
1011, and the console log printed the tokens (finding 1). Here the relay serves a socket whose
client reads two frames and never another (every later send waits forever, as on a full TCP
window), with the caller token, the admin token, the vault key and the live resume token in
play, in each log format. The rate limit is lifted so that the 600 updates need not be spread
over six seconds; the mechanism does not depend on their pace.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from starlette.testclient import TestClient

from tests.security.support import (
    ADMIN_TOKEN,
    CALLER_TOKEN,
    VAULT_KEY,
    StalledSocket,
    captured_logs,
    frame,
    leaked,
    settings,
)
from vocero.app.server import create_app
from vocero.observability.logging import LogFormat
from vocero.relay.connection import Connection

pytestmark = pytest.mark.process

UPDATES = 600
"""More than the control lane holds (512)."""


async def _stop_reading_and_keep_updating(relay: object) -> StalledSocket:
    sock = StalledSocket(reads=2)  # configuration_applied and the LISTENING state
    with anyio.move_on_after(15):  # a connection that never ends fails the asserts below
        async with anyio.create_task_group() as tg:
            tg.start_soon(Connection(sock, relay).serve)  # type: ignore[arg-type]
            sock.feed(frame("session.connect.v1", {"token": CALLER_TOKEN}, sequence=1))
            await sock.read_all.wait()
            session_id = sock.sent[0]["data"]["payload"]["session_id"]
            for sequence in range(2, UPDATES + 2):
                update = {"preferences": {"locale": "en-GB"}}
                sock.feed(frame("session.update_requested.v1", update, sequence=sequence,
                                session_id=session_id))  # fmt: skip
    return sock


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_a_client_that_stops_reading_is_closed_1008_and_no_secret_is_logged(
    fmt: LogFormat, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOCERO_VAULT_KEY", VAULT_KEY)
    with captured_logs(fmt) as out, TestClient(create_app(settings(tmp_path))) as client:
        relay = client.app.state.relay  # type: ignore[attr-defined]
        relay.limits = replace(relay.limits, max_frames_per_s=100_000)
        assert client.portal is not None
        sock = client.portal.call(_stop_reading_and_keep_updating, relay)
        assert client.get("/healthz").status_code == 200
    assert sock.close_codes == [1008]
    resume_token = sock.sent[0]["data"]["payload"]["resume_token"]
    text = out.getvalue()
    assert "relay.control_lane_overflow" in text
    assert "relay.session_failed" not in text
    assert leaked(text, [CALLER_TOKEN, ADMIN_TOKEN, resume_token, VAULT_KEY]) == []
