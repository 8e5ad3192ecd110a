"""uvicorn's WebSocket protocol, offering the relay a burst and a direct send (issue 46 items 4
and 5; :data:`vocero.relay.wire.CORK`).

A turn's answer leaves as bursts of frames ready together (the transcript, the state and the
response's start; then the state, the first text and the first audio). Each frame written on its
own is a segment of its own, a ``write`` system call of its own and, on loopback, a wake-up of
the client per frame, which on a busy machine takes the CPU from the server in the middle of the
burst. While the relay holds a burst (``cork(True)`` … ``cork(False)``) the connection's writes
are kept in order in memory and written at its end in one call: one segment, one wake-up, one
system call (``TCP_CORK`` did the first two in the kernel at the price of two more system calls
a burst). Every write of the connection goes through the hold (pongs, pings, the close), so
nothing overtakes a held frame; a close flushes what is held first.

``send`` writes one text frame's UTF-8 bytes as the relay encoded them: the same checks and the
same frame as uvicorn's ``websocket.send`` (it waits while the transport is paused for writing,
and raises :class:`ClientDisconnected` once the client is gone), without the ASGI message, the
decode to ``str`` and the encode back that a frame otherwise costs (the outbound path of every
audio frame, issue 46 item 4).
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState

from vocero.relay.wire import CORK


class HeldTransport:
    """A transport whose writes are held while :attr:`held` and written as one at
    :meth:`cork` ``(False)``; everything else is the transport's own."""

    __slots__ = ("_held", "_transport", "held")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: list[bytes] = []
        self.held = False

    def write(self, data: bytes) -> None:
        if self.held:
            self._held.append(data)
        else:
            self._transport.write(data)

    def cork(self, on: bool) -> None:
        """Hold the writes from now on (``True``), or write what is held and stop holding. A
        connection closed meanwhile is no error: what it held is gone with it."""
        self.held = on
        if not on and self._held:
            data = b"".join(self._held)
            self._held.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self.cork(False)
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CorkingWebSockets(WebSocketsSansIOProtocol):
    """The protocol uvicorn picks by default, with :data:`~vocero.relay.wire.CORK` (the burst
    and the direct send) offered in each connection's scope."""

    async def run_asgi(self) -> None:
        held = HeldTransport(self.transport)
        self.transport = cast(asyncio.Transport, held)
        extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
        extensions[CORK] = {"cork": held.cork, "send": self.send_text_bytes}
        await super().run_asgi()

    async def send_text_bytes(self, data: bytes) -> None:
        """Send one text frame of UTF-8 ``data`` (what ``websocket.send`` with ``text`` does,
        once the connection is accepted)."""
        if not self.writable.is_set():
            await self.writable.wait()
        if self.disconnected:
            raise ClientDisconnected()
        if self.close_sent or not self.handshake_complete or self.initial_response is not None:
            raise RuntimeError("no text frame can be sent on this connection now")
        try:
            self.conn.send_text(data)
        except InvalidState:
            raise ClientDisconnected() from None
        self.transport.write(b"".join(self.conn.data_to_send()))
