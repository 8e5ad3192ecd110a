"""One ``/v1/realtime`` WebSocket as the relay speaks it (``docs/protocol.md``, "Envelope rules").

Client frames come in as text (``None`` for a binary frame; a disconnect raises); server frames
go out as envelopes stamped with the session id and the server's own sequence, which starts at 1
and grows by exactly 1 on every frame of the connection, errors sent before the session included.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from vocero.contracts import codec
from vocero.contracts import events as ev
from vocero.contracts.errors import CODES, ErrorCode
from vocero.orchestrator.ids import new_id
from vocero.orchestrator.output import OutFrame

CORK = "vocero.burst"
"""The ASGI extension by which the server offers to hold the frames of a burst until the burst
ends, and to send a frame's encoded bytes as they are (``{"cork": switch, "send": coroutine}``,
either may be missing; ``vocero serve`` offers both, :mod:`vocero.app.websocket_protocol`): the
client gets a burst in one segment and one system call, and is woken once instead of once a
frame; a frame sent directly skips the ASGI message and the decode to ``str`` and encode back."""


def error_payload(code: ErrorCode, correlation_id: str = "") -> ev.Error:
    """The ``error.v1`` payload of a stable error code (no internal detail, ever)."""
    info = CODES[code]
    return ev.Error(
        code=code.value,
        category=info.category.value,
        retryable=info.retryable,
        user_message_key=info.user_message_key,
        correlation_id=correlation_id or new_id("corr"),
    )


class Wire:
    """Receives the client's text frames and sends stamped server envelopes on one socket."""

    def __init__(self, websocket: WebSocket) -> None:
        self.ws = websocket
        self.session_id = ""
        """Stamped on every server frame, once the session is open."""
        self.sequence = 0
        """The server sequence of the latest frame sent."""
        offered = (websocket.scope.get("extensions") or {}).get(CORK) or {}
        self._cork: Callable[[bool], None] | None = offered.get("cork")
        self._send_bytes: Callable[[bytes], Awaitable[None]] | None = offered.get("send")

    @contextlib.contextmanager
    def burst(self) -> Iterator[None]:
        """The frames sent inside leave together when it ends, in one write (where the server
        offers it; elsewhere each leaves as it is sent, as always)."""
        cork = self._cork
        if cork is None:
            yield
            return
        cork(True)
        try:
            yield
        finally:
            cork(False)

    async def receive_text(self) -> str | None:
        message = await self.ws.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        text = message.get("text")
        return text if isinstance(text, str) else None

    async def send(self, frame: OutFrame) -> None:
        self.sequence += 1
        event = codec.server_envelope(
            frame.payload,
            session_id=self.session_id,
            sequence=self.sequence,
            envelope=frame.envelope,
            turn_id=frame.turn_id,
        )
        data = codec.encode(event)
        send = self._send_bytes
        if send is None:
            await self.ws.send_text(data.decode())
            return
        ws = self.ws
        if ws.application_state != WebSocketState.CONNECTED:  # as starlette's own send
            raise RuntimeError('Cannot call "send" once a close message has been sent.')
        try:
            await send(data)
        except OSError:  # the client is gone: as starlette's own send says it
            ws.application_state = WebSocketState.DISCONNECTED
            raise WebSocketDisconnect(code=1006) from None

    async def send_error(self, code: ErrorCode) -> None:
        await self.send(OutFrame(payload=error_payload(code)))

    async def close(self, code: int) -> None:
        """Close the socket with ``code`` unless it is closed already."""
        if self.ws.application_state == WebSocketState.CONNECTED:
            with contextlib.suppress(RuntimeError, OSError):
                await self.ws.close(code)
