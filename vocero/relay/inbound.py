"""The inbound pump of ``/v1/realtime`` (``docs/protocol.md``, "Envelope rules").

The pump reads the client's frames and performs what :class:`EnvelopeRules` decides on each: an
accepted event goes to the :class:`Dispatcher` (joining its turn's trace), a rejected frame is
counted and answered on the control lane with its stable ``error.v1`` code, and once the client
keeps misbehaving, or closes the session, the connection closes after the control lane drains.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from starlette.websockets import WebSocketDisconnect

from vocero.observability import tracing
from vocero.orchestrator.output import OutFrame
from vocero.relay.dispatch import Dispatcher
from vocero.relay.envelope import Accepted, EnvelopeRules, Rejected
from vocero.relay.ports import RelayMetrics
from vocero.relay.wire import Wire, error_payload


class InboundPump:
    """Judges the client's frames and hands the valid events to the session."""

    def __init__(
        self,
        wire: Wire,
        rules: EnvelopeRules,
        dispatcher: Dispatcher,
        metrics: RelayMetrics,
        monotonic: Callable[[], float],
    ) -> None:
        self.wire = wire
        self.rules = rules
        self.dispatcher = dispatcher
        self._metrics = metrics
        self._monotonic = monotonic

    async def run(self) -> None:
        try:
            await self._pump()
        except WebSocketDisconnect:
            self.dispatcher.session.close("disconnect")

    async def _pump(self) -> None:
        while True:
            text = await self.wire.receive_text()
            match self.rules.judge(text, self._monotonic()):
                case Rejected() as rejected:
                    self._answer(rejected)
                    if rejected.close is not None:
                        self.dispatcher.outbound.close_after_drain(rejected.close)
                        await anyio.sleep_forever()
                case Accepted(event):
                    tracing.inbound(event.traceparent)  # a turn this frame closes joins its trace
                    if self.dispatcher.dispatch(event):
                        await anyio.sleep_forever()  # the outbound pump closes once it drains

    def _answer(self, rejected: Rejected) -> None:
        """Count a rejected frame and queue its ``error.v1``."""
        code = rejected.code.value
        self._metrics.count("frames_rejected", reason=code)
        self._metrics.count("errors", code=code)  # an error.v1 the client gets
        self.dispatcher.out.control(OutFrame(payload=error_payload(rejected.code)))
