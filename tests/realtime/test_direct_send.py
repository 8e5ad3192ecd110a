"""The relay's direct send (issue 46 item 4: a frame's encoded bytes handed to ``vocero serve``'s
WebSocket protocol, without the ASGI message and the decode to ``str`` and back) puts on the
wire exactly the bytes uvicorn's own ``websocket.send`` does, held bursts included; and the
relay's :class:`Wire` hands it exactly what it would have sent as text."""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any, cast

import anyio
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from tests.support.polling import wait_for
from tests.support.servers import free_port
from vocero.app.websocket_protocol import CorkingWebSockets
from vocero.contracts import codec
from vocero.contracts import events as ev
from vocero.orchestrator.output import OutFrame
from vocero.relay.wire import CORK, Wire

TEXTS = [
    '{"type":"a"}',
    '{"type":"b","text":"café, naïve — déjà vu"}',  # UTF-8 beyond ASCII
    '{"audio":"' + "A" * 300 + '"}',  # a 16-bit length
    '{"audio":"' + "B" * 70_000 + '"}',  # a 64-bit length
    '{"type":"z"}',
]
CLOSE = b"\x88\x02\x03\xe8"
"""The server's close frame, code 1000: the end of what the client reads."""


async def _frames(websocket: WebSocket) -> None:
    await websocket.accept()
    offered = websocket.scope["extensions"][CORK]
    if websocket.query_params["mode"] == "direct":
        offered["cork"](True)
        for text in TEXTS[:3]:
            await offered["send"](text.encode())
        offered["cork"](False)
        for text in TEXTS[3:]:
            await offered["send"](text.encode())
    else:
        for text in TEXTS:
            await websocket.send_text(text)
    await websocket.close(1000)
    with contextlib.suppress(WebSocketDisconnect):
        await websocket.receive()


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    app = Starlette(routes=[WebSocketRoute("/frames", _frames)])
    chosen = free_port()
    server = uvicorn.Server(uvicorn.Config(
        app, host="127.0.0.1", port=chosen, log_level="warning", lifespan="off",
        log_config=None, ws=CorkingWebSockets, ws_per_message_deflate=False,
        timeout_graceful_shutdown=2,
    ))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True, name="frames-server")
    thread.start()
    wait_for("frames server", lambda: server.started, timeout_s=10)
    yield chosen
    server.should_exit = True
    thread.join(10)


def _wire_bytes(port: int, mode: str) -> bytes:
    """Everything the server wrote after its handshake response, up to its close frame."""
    key = base64.b64encode(os.urandom(16)).decode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            f"GET /frames?mode={mode} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        data = b""
        while not data.endswith(CLOSE):
            chunk = sock.recv(65536)
            assert chunk, f"closed early after {len(data)} bytes"
            data += chunk
    head, _, frames = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101")
    return frames


def test_direct_frames_are_byte_identical_to_uvicorns_own(port: int) -> None:
    direct = _wire_bytes(port, "direct")
    asgi = _wire_bytes(port, "asgi")
    assert direct == asgi
    assert TEXTS[1].encode() in direct and direct.endswith(CLOSE)


class _Socket:
    """A WebSocket that records what the wire hands it, as text or, offered, as bytes."""

    def __init__(self, *, direct: bool) -> None:
        self.sent: list[bytes] = []
        self.application_state = WebSocketState.CONNECTED
        offered = {"send": self.send_bytes} if direct else {}
        self.scope: dict[str, Any] = {"extensions": {CORK: offered}}

    async def send_bytes(self, data: bytes) -> None:
        self.sent.append(data)

    async def send_text(self, text: str) -> None:
        self.sent.append(text.encode())


def test_the_wire_hands_the_direct_send_the_bytes_it_would_send_as_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(codec, "new_event_id", lambda: "evt_fixed")
    monkeypatch.setattr(codec, "now_rfc3339", lambda: "2026-12-07T13:00:00.000Z")
    frames = [
        OutFrame(payload=ev.StateChanged(state="SPEAKING")),
        OutFrame(payload=ev.TextDelta(generation_id="gen_1", unit_id="unt_1", text="Déjà là.")),
        OutFrame(payload=ev.AudioOut(generation_id="gen_1", unit_id="unt_1", chunk_index=0,
                                     audio=bytes(range(256)) * 3, sample_rate=16000)),
    ]  # fmt: skip

    async def send_all(direct: bool) -> list[bytes]:
        sock = _Socket(direct=direct)
        wire = Wire(cast(WebSocket, sock))
        wire.session_id = "ses_1"
        for frame in frames:
            await wire.send(frame)
        return sock.sent

    direct = anyio.run(send_all, True)
    text = anyio.run(send_all, False)
    assert direct == text and len(direct) == 3
    assert b'"sequence":3' in direct[2] and base64.b64encode(bytes(range(256)) * 3) in direct[2]
