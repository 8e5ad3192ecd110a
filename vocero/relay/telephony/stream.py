"""``WS /v1/telephony/twilio``: one phone call's media stream, served as an ordinary session
(SPEC §10; ``docs/telephony.md``).

:class:`CarrierCall` admits the stream: its ``start`` must carry a good ticket for its
``callSid`` (else the socket closes, 1008, before any audio, audited with the reason); then it
opens a session through the relay's session factory, as ``/v1/realtime`` does (same profile
selection, slots, policy, records), with channel ``twilio`` and the call's id. :class:`PhoneLeg`
carries the call both ways while the session runs:

* in: the caller's μ-law becomes the session's 16 kHz audio (server VAD); an echoed mark is the
  playout report of the generation and position it stands for; DTMF ``1``/``2`` answers the open
  confirmation question (:meth:`~vocero.relay.ports.SessionInput.on_key_answer`); ``stop`` or a
  closed socket ends the session like a dropped connection (resumable, nothing undone);
* out: the session's audio becomes 20 ms μ-law ``media`` frames, with a ``mark`` after every
  unit's audio and at least every 200 ms of it; pacing is the session's own (``max_lead_ms``
  ahead of the last echoed mark); ``output.stop_and_flush.v1`` becomes ``clear``, sent before
  anything else, after which the marks sent before it no longer count as played. Everything
  else the session says (states, transcripts, confirmations on screen) has no phone form and
  stays in the records.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Literal

import anyio
import structlog
from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from vocero.contracts import events as ev
from vocero.contracts.errors import AuthError, CloseCode
from vocero.orchestrator.output import OutFrame, OutputChannel
from vocero.relay.admission import Admission
from vocero.relay.ports import SessionInput
from vocero.relay.telephony.audio import FRAME_MS, CarrierDecoder, CarrierEncoder
from vocero.relay.telephony.carrier import CarrierProtocol, Key, MarkEchoed, Media, Start, Stop
from vocero.relay.telephony.config import TelephonyConfig
from vocero.relay.telephony.tickets import Admitted, TicketRefused

log = structlog.get_logger("vocero.telephony")

KEYS: dict[str, Literal["confirm", "reject"]] = {"1": "confirm", "2": "reject"}
"""DTMF digits that answer a confirmation question; other digits are ignored."""
MARK_EVERY_MS = 200
IDLE_FLUSH_S = 0.02
"""With nothing more to send for this long, the audio held for a partial frame goes out."""
MAX_MARKS = 1024
"""Marks awaiting their echo; past it the oldest is forgotten (its echo then counts for
nothing)."""
SESSION_RATE = 16000


class _Refused(Exception):
    def __init__(self, reason_code: str) -> None:
        super().__init__(reason_code)
        self.reason_code = reason_code


class MarkBook:
    """The marks sent and not yet echoed: each stands for a generation and the audio of it
    (ms) sent before it. Its name says both, for a person reading a carrier's log."""

    def __init__(self) -> None:
        self._sent: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._count = 0

    def name(self, generation_id: str, played_ms: int) -> str:
        self._count += 1
        name = f"{generation_id}@{played_ms}ms#{self._count}"
        self._sent[name] = (generation_id, played_ms)
        while len(self._sent) > MAX_MARKS:
            self._sent.popitem(last=False)
        return name

    def echoed(self, name: str) -> tuple[str, int] | None:
        """What an echoed mark stands for; ``None``: not one of ours, or sent before a
        ``clear`` (the audio before it was dropped, not played)."""
        return self._sent.pop(name, None)

    def clear(self) -> None:
        self._sent.clear()


class PhoneLeg:
    """Carries one call between the carrier's socket and its session."""

    def __init__(
        self,
        ws: WebSocket,
        carrier: CarrierProtocol,
        stream_sid: str,
        session: SessionInput,
        out: OutputChannel,
    ) -> None:
        self.ws = ws
        self.carrier = carrier
        self.stream_sid = stream_sid
        self.session = session
        self.out = out
        self.marks = MarkBook()
        self._decoder = CarrierDecoder(SESSION_RATE)
        self._encoder: CarrierEncoder | None = None
        self._generation = ""
        self._unit = ""
        self.hung_up = False

    # ------------------------------------------------------------------------ the caller

    async def listen(self) -> None:
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                self._hang_up()
                return
            text = message.get("text")
            event = self.carrier.parse(text) if isinstance(text, str) else None
            match event:
                case Media(payload=payload):
                    self.session.on_audio(self._decoder.decode(payload))
                case MarkEchoed(name=name):
                    played = self.marks.echoed(name)
                    if played is not None:
                        self.session.on_playout(*played)
                case Key(digit=digit):
                    decision = KEYS.get(digit)
                    if decision is not None:
                        self.session.on_key_answer(decision)
                case Stop():
                    self._hang_up()
                    return

    def _hang_up(self) -> None:
        self.hung_up = True
        self.session.close("disconnect")

    # ------------------------------------------------------------------------ the agent

    async def speak(self) -> None:
        out = self.out
        while True:
            frame: OutFrame | None = None
            if self._encoder is not None and self._encoder.holding:
                with anyio.move_on_after(IDLE_FLUSH_S):
                    frame = await out.receive()
            else:
                frame = await out.receive()
            if frame is None:
                await self._flush()
            else:
                await self._send(frame)

    async def _send(self, frame: OutFrame) -> None:
        match frame.payload:
            case ev.AudioOut() as audio:
                await self._audio(audio)
            case ev.StopAndFlush(generation_id=generation_id):
                await self._clear(generation_id)
            case ev.ResponseCompleted(generation_id=generation_id):
                if generation_id == self._generation:
                    await self._flush()
                    self._encoder, self._generation = None, ""

    async def _audio(self, audio: ev.AudioOut) -> None:
        if self.out.is_stopped(audio.generation_id):
            return
        encoder = self._encoder
        if encoder is None or audio.generation_id != self._generation:
            await self._flush()
            encoder = self._encoder = CarrierEncoder(audio.sample_rate)
            self._generation = audio.generation_id
        elif audio.unit_id != self._unit:
            await self._flush()  # the unit before ends with its mark
        self._unit = audio.unit_id
        before = encoder.sent_ms
        await self._frames(encoder.encode(audio.audio), before)

    async def _flush(self) -> None:
        """Send what the encoder holds of the unit, its last frame padded, and the unit's
        mark."""
        encoder = self._encoder
        if encoder is not None and encoder.holding:
            before = encoder.sent_ms
            await self._frames(encoder.flush(), before)

    async def _frames(self, frames: list[bytes], before: float) -> None:
        """Send the frames of the current generation with a mark every ``MARK_EVERY_MS`` and one
        after the last; stop at once if the generation was stopped meanwhile."""
        encoder, generation = self._encoder, self._generation
        assert encoder is not None
        per_mark = MARK_EVERY_MS // FRAME_MS
        for index, frame in enumerate(frames, start=1):
            if self.out.is_stopped(generation):
                return
            await self.ws.send_text(self.carrier.media(self.stream_sid, frame))
            if index % per_mark == 0 and index < len(frames):
                await self._mark(generation, min(before + index * FRAME_MS, encoder.sent_ms))
        if frames and not self.out.is_stopped(generation):
            await self._mark(generation, encoder.sent_ms)

    async def _mark(self, generation_id: str, played_ms: float) -> None:
        # Whole ms, rounded down (a unit counts as heard within 1 ms of its end); a flushed
        # stream reports all of it.
        name = self.marks.name(generation_id, int(played_ms + 1e-6))
        await self.ws.send_text(self.carrier.mark(self.stream_sid, name))

    async def _clear(self, generation_id: str) -> None:
        """The caller barged in: the carrier drops what it has not played."""
        if generation_id == self._generation:
            self._encoder, self._generation = None, ""
        self.marks.clear()
        await self.ws.send_text(self.carrier.clear(self.stream_sid))


class CarrierCall:
    """Serves one carrier media stream: admits it by its ticket, runs its session."""

    def __init__(self, ws: WebSocket, config: TelephonyConfig | None) -> None:
        self.ws = ws
        self.config = config
        self.call_sid = ""

    async def serve(self) -> None:
        config = self.config
        if config is None:  # no --twilio-auth-token: the route does not exist
            await self._deny(404)
            return
        admission = Admission(config.relay)
        try:
            await self.ws.accept()
            start, admitted = await self._start(config)
            await self._run(config, start, admitted, admission)
        except _Refused as refused:
            self._refused(config, refused.reason_code)
            await self._close(CloseCode.POLICY_VIOLATION)
        except WebSocketDisconnect:
            pass
        except Exception:  # one broken call never takes the server down
            log.exception("telephony.call_failed", call_sid=self.call_sid)
            await self._close(CloseCode.INTERNAL_ERROR)
        finally:
            admission.release_slot()

    async def _start(self, config: TelephonyConfig) -> tuple[Start, Admitted]:
        """The stream's ``start`` (``connected`` and anything else before it are read past),
        with a ticket good for its call."""
        start: Start | None = None
        with anyio.move_on_after(config.start_timeout_s):
            while start is None:
                message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    raise WebSocketDisconnect(message.get("code", 1000))
                text = message.get("text")
                event = config.carrier.parse(text) if isinstance(text, str) else None
                if isinstance(event, Stop):
                    raise _Refused("start_missing")
                if isinstance(event, Start):
                    start = event
        if start is None:
            raise _Refused("start_missing")
        self.call_sid = start.call_sid
        if start.encoding != config.carrier.encoding or start.sample_rate not in (0, 8000):
            raise _Refused("media_format_unsupported")
        try:
            admitted = config.tickets.admit(start.parameters.get("ticket", ""), start.call_sid)
        except TicketRefused as refused:
            raise _Refused(refused.reason_code) from None
        return start, admitted

    async def _run(
        self, config: TelephonyConfig, start: Start, admitted: Admitted, admission: Admission
    ) -> None:
        relay, caller = config.relay, admitted.caller
        if relay.draining:
            raise _Refused("shutting_down")
        if relay.wait_ready is not None and not await relay.wait_ready():
            raise _Refused("not_ready")
        try:
            profile = await relay.select_profile(caller)
        except AuthError:
            raise _Refused("profile_denied") from None
        if not admission.take_slot():
            raise _Refused("capacity_exhausted")
        out = OutputChannel(
            max_lead_ms=profile.max_lead_ms,
            monotonic=relay.monotonic,
            playout_acks=True,  # marks are the playout reports
            on_after_stop=lambda: relay.metrics.count("audio_after_stop"),
        )
        try:
            handle = await relay.factory.open(
                caller, profile, out, turn_mode="server_vad", locale=profile.locale,
                channel="twilio", call_sid=start.call_sid,
                followup_id=admitted.followup_id, opening=admitted.opening,
            )
        except AuthError:
            raise _Refused("profile_denied") from None
        relay.metrics.count("sessions", outcome="admitted")
        leg = PhoneLeg(self.ws, config.carrier, start.stream_sid, handle.session, out)
        session_id = handle.session.ctx.session_id
        try:
            with structlog.contextvars.bound_contextvars(
                session_id=session_id, call_sid=start.call_sid
            ):
                log.info("telephony.call_connected")
                async with anyio.create_task_group() as tg:
                    await tg.start(self._own, handle.session, tg)
                    tg.start_soon(_first_done, tg, leg.listen)
                    tg.start_soon(_first_done, tg, leg.speak)
                    tg.start_soon(_first_done, tg, out.overflowed.wait)
        finally:
            admission.release_slot()
            with anyio.CancelScope(shield=True):
                await handle.aclose(resumable=True)  # a hang-up is a dropped connection
                await self._close(CloseCode.NORMAL)

    async def _own(
        self,
        session: SessionInput,
        tg: anyio.abc.TaskGroup,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run the session; one ended by the server ends the call."""
        try:
            await session.run(task_status=task_status)
        finally:
            tg.cancel_scope.cancel()

    def _refused(self, config: TelephonyConfig, reason: str) -> None:
        config.relay.factory.audit(
            "telephony.stream_refused", {"reason_code": reason, "call_sid": self.call_sid}
        )
        config.relay.metrics.count("denials", reason_code=reason)
        log.warning("telephony.stream_refused", reason_code=reason, call_sid=self.call_sid)

    async def _deny(self, status: int) -> None:
        if "websocket.http.response" in self.ws.scope.get("extensions", {}):
            await self.ws.send_denial_response(Response(status_code=status))
        else:
            await self.ws.close(CloseCode.POLICY_VIOLATION)

    async def _close(self, code: int) -> None:
        if self.ws.application_state == WebSocketState.CONNECTED:
            with contextlib.suppress(RuntimeError, OSError):
                await self.ws.close(code)


async def _first_done(tg: anyio.abc.TaskGroup, func: Callable[[], Awaitable[object]]) -> None:
    try:
        await func()
    finally:
        tg.cancel_scope.cancel()


async def twilio_stream(websocket: WebSocket) -> None:
    """The route's endpoint."""
    await CarrierCall(websocket, getattr(websocket.app.state, "telephony", None)).serve()
