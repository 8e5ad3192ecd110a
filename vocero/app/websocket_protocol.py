"""uvicorn's WebSocket protocol, offering the relay a cork for its bursts (issue 46 item 5).

A turn's answer leaves as bursts of frames ready together (the transcript, the state and the
response's start; then the state, the first text and the first audio). Each frame written on its
own is a segment of its own, and on loopback a wake-up of the client per frame, which on a busy
machine takes the CPU from the server in the middle of the burst. The relay holds a burst in the
socket with ``TCP_CORK`` (:data:`vocero.relay.wire.CORK`) and lets it go at its end: one segment,
one wake-up. Where the socket cannot be corked (no ``TCP_CORK``, no socket) nothing is offered
and frames leave one by one as before.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from vocero.relay.wire import CORK


def cork_switch(sock: Any) -> Callable[[bool], None] | None:
    """Turns ``TCP_CORK`` of ``sock`` on and off, or ``None`` where it cannot. A socket closed
    meanwhile is no error: what it held is gone with it (a closed socket raises ``OSError``;
    uvloop's stand-in for one whose descriptor is gone raises ``ValueError``)."""
    option = getattr(socket, "TCP_CORK", None)
    if sock is None or option is None:
        return None

    def cork(on: bool) -> None:
        with contextlib.suppress(OSError, ValueError):
            sock.setsockopt(socket.IPPROTO_TCP, option, 1 if on else 0)

    return cork


class CorkingWebSockets(WebSocketsSansIOProtocol):
    """The protocol uvicorn picks by default, with :data:`~vocero.relay.wire.CORK` offered in
    each connection's scope."""

    async def run_asgi(self) -> None:
        cork = cork_switch(self.transport.get_extra_info("socket"))
        if cork is not None:
            extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
            extensions[CORK] = {"cork": cork}
        await super().run_asgi()
