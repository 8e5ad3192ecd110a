"""``/v1/realtime``: one WebSocket connection, from ``session.connect.v1`` to close
(``docs/protocol.md``, "Session lifecycle"; ``docs/adr/0003-relay-and-orchestrator.md``).

:class:`Connection` wires the parts, each of which does one job: :class:`Admission` decides
whether the upgrade and the connect may proceed and holds the session slot; :class:`Wire` reads
and writes the socket's frames; :class:`EnvelopeRules` judges each client frame, sans-IO. Once
the session is open, two pumps run in one task group with it: the :class:`InboundPump` performs
the rules' verdicts and hands valid events to the :class:`Dispatcher`; the :class:`OutboundPump`
drains the session's output channel (control lane first, paced audio after) onto the wire. A
third task ends the connection (1008) if the control lane overflows because the client stopped
reading. The first task to finish cancels the rest.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import anyio
import structlog
from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect

from vocero.contracts.errors import AuthError, CloseCode, ErrorCode
from vocero.orchestrator.output import OutputChannel
from vocero.relay.admission import Admission, Admitted, Refused
from vocero.relay.dispatch import Dispatcher, UpdateAudit
from vocero.relay.envelope import EnvelopeRules
from vocero.relay.inbound import InboundPump
from vocero.relay.outbound import OutboundPump
from vocero.relay.ports import RelayConfig, SessionInput
from vocero.relay.wire import Wire

log = structlog.get_logger("vocero.relay")


class _Closed(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


class Connection:
    """Serves one ``/v1/realtime`` connection: admits it, opens its session, runs the pumps."""

    def __init__(self, websocket: WebSocket, config: RelayConfig) -> None:
        self.ws = websocket
        self.config = config
        self.wire = Wire(websocket)
        self.admission = Admission(config)
        self.rules = EnvelopeRules(config.limits)
        self.audit = UpdateAudit(config.factory)

    @property
    def session_id(self) -> str:
        return self.wire.session_id

    async def serve(self) -> None:
        client = self.ws.client
        status = self.admission.upgrade_refusal(
            self.ws.headers.get("origin"),
            self.ws.headers.get("host", ""),
            client.host if client is not None else "",
        )
        if status is not None:
            await self._refuse_upgrade(status)
            return
        try:
            await self.ws.accept()
            try:
                await self._run(await self._handshake())
            except Refused as refused:
                await self.wire.send_error(refused.code)
                raise _Closed(refused.close) from None
        except _Closed as closed:
            await self._close(closed.code)
        except WebSocketDisconnect:
            pass
        except Exception:  # one broken session never takes the server down
            log.exception("relay.session_failed", session_id=self.session_id)
            with contextlib.suppress(Exception):
                await self.wire.send_error(ErrorCode.INTERNAL)
            await self._close(CloseCode.INTERNAL_ERROR)
        finally:
            self.admission.leave_pending()
            self.admission.release_slot()

    async def _refuse_upgrade(self, status: int) -> None:
        self.config.metrics.count("sessions", outcome="rejected")
        if "websocket.http.response" in self.ws.scope.get("extensions", {}):
            await self.ws.send_denial_response(Response(status_code=status))
        else:  # a server without denial responses answers a close before accept with 403
            await self.ws.close(CloseCode.POLICY_VIOLATION)

    async def _handshake(self) -> Admitted:
        text: str | None = None
        with anyio.move_on_after(self.config.limits.connect_timeout_s):
            text = await self.wire.receive_text()
        connect = self.rules.first(text)
        if connect is None:  # not a connect first, or nothing within the timeout
            raise Refused(ErrorCode.CONNECT_REQUIRED, CloseCode.CONNECT_REQUIRED)
        return await self.admission.admit(connect)

    async def _run(self, admitted: Admitted) -> None:
        config = self.config
        profile = admitted.profile
        out = OutputChannel(
            max_lead_ms=profile.max_lead_ms,
            monotonic=config.monotonic,
            on_after_stop=lambda: config.metrics.count("audio_after_stop"),
        )
        try:
            handle = await config.factory.open(
                admitted.caller,
                profile,
                out,
                turn_mode="server_vad",
                locale=profile.locale,
                resume_token=admitted.resume_token,
            )
        except AuthError as exc:
            raise self.admission.refuse(exc.code, CloseCode.PROFILE_DENIED) from None
        self.wire.session_id = self.rules.session_id = handle.session.ctx.session_id
        config.metrics.count("sessions", outcome="admitted")
        outbound = OutboundPump(self.wire, out, self._close, config.metrics)
        dispatcher = Dispatcher(handle, out, outbound, self.audit)
        dispatcher.announce(list(handle.rejected))
        inbound = InboundPump(self.wire, self.rules, dispatcher, config.metrics, config.monotonic)
        try:
            with structlog.contextvars.bound_contextvars(session_id=self.session_id):
                async with anyio.create_task_group() as tg:
                    await tg.start(self._own, dispatcher.session, outbound)
                    tg.start_soon(self._first_done, tg, inbound.run)
                    tg.start_soon(self._first_done, tg, outbound.run)
                    tg.start_soon(self._first_done, tg, outbound.watch_overflow)
            if out.overflowed.is_set():
                await self._close(CloseCode.POLICY_VIOLATION)
        finally:
            self.admission.release_slot()
            self.audit.summarise(self.session_id)
            with anyio.CancelScope(shield=True):
                await handle.aclose(resumable=not dispatcher.client_closed)

    async def _own(
        self,
        session: SessionInput,
        outbound: OutboundPump,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run the session; one ended by the server (a resume took it over, shutdown) closes the
        connection once its last control frames are out."""
        await session.run(task_status=task_status)
        if outbound.close_code is None:
            outbound.close_after_drain(CloseCode.NORMAL)

    async def _first_done(
        self, tg: anyio.abc.TaskGroup, func: Callable[[], Awaitable[None]]
    ) -> None:
        try:
            await func()
        finally:
            tg.cancel_scope.cancel()

    async def _close(self, code: int) -> None:
        self.audit.summarise(self.session_id)
        await self.wire.close(code)
