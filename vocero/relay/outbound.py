"""The outbound pump of ``/v1/realtime`` (``docs/adr/0008-priority-control-lane.md``;
``docs/protocol.md``, "A client that stops reading").

The pump drains the session's output channel (control lane first, paced audio after) onto the
wire; the frames ready together go as one burst (:meth:`Wire.burst`: one segment, one wake-up of
the client), each taken only as the one before it is out. A close asked for while frames are
queued waits for the control frames (errors, the final state) to go out first. A client that
stops reading while control frames keep coming fills the control lane; the channel flags the
overflow instead of raising into the session's producers, and
:meth:`OutboundPump.watch_overflow` returns on it so that the connection ends (1008).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
from starlette.websockets import WebSocketDisconnect

from vocero.contracts.errors import CloseCode
from vocero.orchestrator.output import ControlLaneFull, OutFrame, OutputChannel
from vocero.relay.ports import RelayMetrics
from vocero.relay.wire import Wire

log = structlog.get_logger("vocero.relay")


class OutboundPump:
    """Sends the session's output frames until the connection closes, and closes it once the
    control frames queued before the close are out."""

    def __init__(
        self,
        wire: Wire,
        out: OutputChannel,
        close: Callable[[int], Awaitable[None]],
        metrics: RelayMetrics,
    ) -> None:
        self.wire = wire
        self.out = out
        self._close = close
        self._metrics = metrics
        self.close_code: int | None = None
        """The close code asked for; the connection closes with it once the lane drains."""

    def close_after_drain(self, code: int) -> None:
        """Close once every queued control frame (errors, the final state) has been sent."""
        self.close_code = code
        self.out.wake()

    async def run(self) -> None:
        try:
            await self._pump()
        except (WebSocketDisconnect, OSError, RuntimeError):
            return  # the client is gone; the inbound pump sees the disconnect too

    async def watch_overflow(self) -> None:
        """Return once the control lane has overflowed (the client stopped reading)."""
        await self.out.overflowed.wait()
        self._metrics.count("frames_rejected", reason="control_lane_full")
        log.warning("relay.control_lane_overflow")

    async def _pump(self) -> None:
        out = self.out
        try:
            while True:
                frame = await out.receive(until=lambda: self.close_code is not None)
                if frame is None:
                    await self._close(self.close_code or CloseCode.NORMAL)
                    return
                if out.has_ready():  # more to send at once: one burst
                    with self.wire.burst():
                        closing = await self._send_ready(frame)
                else:
                    closing = await self._send_ready(frame)
                if closing:
                    await self._close(self.close_code or CloseCode.NORMAL)
                    return
        except ControlLaneFull:
            await self._close(CloseCode.POLICY_VIOLATION)

    async def _send_ready(self, frame: OutFrame) -> bool:
        """Send ``frame`` and each frame ready after it, taken one at a time as it goes (a stop
        decided meanwhile is seen before the next frame). True: the connection is to close now
        (a close was asked for and the control frames before it are out)."""
        out = self.out
        while True:
            await self.wire.send(frame)
            if self.close_code is not None and not out.has_control():
                return True
            if not out.has_ready():
                return False
            next_frame = await out.receive()  # ready: returns at once
            assert next_frame is not None  # no ``until``: receive returns a frame
            frame = next_frame
