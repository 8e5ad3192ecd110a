"""``/v1/realtime``: one WebSocket connection, from ``session.connect.v1`` to close.

Before the upgrade is accepted, a browser ``Origin`` must be allowed (else HTTP 403) and the
client's address may hold only so many connections that have not authenticated yet (else HTTP
429). Admission takes a session slot in the same step as it checks the cap, and every way out of
the connection gives it back.

Two pumps run in one task group with the session: the inbound pump enforces the envelope rules
(size, rate, sequence, schema, session id) and hands events to the session's handlers; the
outbound pump drains the session's output channel (control lane first, paced audio after),
stamps the server sequence and sends. A third task closes the connection (1008) if the control
lane overflows because the client stopped reading. The first task to finish cancels the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any, NoReturn

import anyio
import msgspec
import structlog
from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from vocero.contracts import codec
from vocero.contracts import events as ev
from vocero.contracts.errors import CODES, AuthError, CloseCode, ErrorCode, ProtocolError
from vocero.contracts.secrets import Secret
from vocero.observability import tracing
from vocero.orchestrator.ids import new_id
from vocero.orchestrator.output import ControlLaneFull, OutFrame, OutputChannel
from vocero.relay.limits import AuditCoalescer, RateWindow, Strikes
from vocero.relay.ports import RelayConfig, SessionHandle, SessionInput
from vocero.relay.sanitize import sanitize

HTTP_FORBIDDEN = 403
HTTP_TOO_MANY_REQUESTS = 429

log = structlog.get_logger("vocero.relay")


class _Closed(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def error_payload(code: ErrorCode, correlation_id: str = "") -> ev.Error:
    info = CODES[code]
    return ev.Error(
        code=code.value,
        category=info.category.value,
        retryable=info.retryable,
        user_message_key=info.user_message_key,
        correlation_id=correlation_id or new_id("corr"),
    )


class Connection:
    def __init__(self, websocket: WebSocket, config: RelayConfig) -> None:
        self.ws = websocket
        self.config = config
        self.limits = config.limits
        self.session_id = ""
        self.out_sequence = 0
        self.in_sequence = 0
        self.rate = RateWindow(self.limits.max_frames_per_s)
        self.strikes = Strikes(self.limits.strikes_to_close)
        self.handle: SessionHandle | None = None
        self.out: OutputChannel | None = None
        self.close_code: int | None = None
        self.client_closed = False
        self.pending_address: str | None = None
        """The address counted as pending (not yet authenticated), until it is released."""
        self.slot = ""
        """The session slot this connection holds (``--max-sessions``), once admitted."""
        self.audits = AuditCoalescer()

    # ------------------------------------------------------------------------ entry

    async def serve(self) -> None:
        status = self._upgrade_refusal()
        if status is not None:
            await self._refuse_upgrade(status)
            return
        try:
            await self.ws.accept()
            caller_profile = await self._handshake()
            await self._run(*caller_profile)
        except _Closed as closed:
            await self._close(closed.code)
        except WebSocketDisconnect:
            pass
        except Exception:  # one broken session never takes the server down
            log.exception("relay.session_failed", session_id=self.session_id)
            with contextlib.suppress(Exception):
                await self._send_direct(error_payload(ErrorCode.INTERNAL))
            await self._close(CloseCode.INTERNAL_ERROR)
        finally:
            self._leave_pending()
            self._release_slot()

    # ---------------------------------------------------------------------- upgrade

    def _upgrade_refusal(self) -> int | None:
        """The HTTP status refusing this upgrade, or ``None``: a browser page of an origin that
        is not allowed (403), or an address already holding its share of pending connections
        (429). Otherwise the connection counts as pending until it authenticates."""
        origin = self.ws.headers.get("origin")
        if not self.config.origins.allows(origin, self.ws.headers.get("host", "")):
            log.warning("relay.origin_refused")
            return HTTP_FORBIDDEN
        address = self.ws.client.host if self.ws.client is not None else ""
        if not self.config.pending.enter(address):
            log.warning("relay.pending_limit", limit=self.config.pending.limit)
            return HTTP_TOO_MANY_REQUESTS
        self.pending_address = address
        return None

    async def _refuse_upgrade(self, status: int) -> None:
        self.config.metrics.count("sessions", outcome="rejected")
        if "websocket.http.response" in self.ws.scope.get("extensions", {}):
            await self.ws.send_denial_response(Response(status_code=status))
        else:  # a server without denial responses answers a close before accept with 403
            await self.ws.close(CloseCode.POLICY_VIOLATION)

    def _leave_pending(self) -> None:
        if self.pending_address is not None:
            self.config.pending.leave(self.pending_address)
            self.pending_address = None

    # -------------------------------------------------------------------- handshake

    async def _handshake(self) -> tuple[Any, Any, Secret | None]:
        event: ev.ClientEvent | None = None
        with anyio.move_on_after(self.limits.connect_timeout_s):
            text = await self._receive_text()
            with contextlib.suppress(ProtocolError):
                event = codec.decode_client(text) if text is not None else None
        if not isinstance(event, ev.SessionConnectV1) or event.data.sequence != 1:
            await self._deny_connect()  # not a connect first, or nothing within the timeout
        self.in_sequence = 1
        return await self._admit(event.data.payload)

    async def _deny_connect(self) -> NoReturn:
        await self._send_direct(error_payload(ErrorCode.CONNECT_REQUIRED))
        raise _Closed(CloseCode.CONNECT_REQUIRED)

    async def _admit(self, connect: ev.Connect) -> tuple[Any, Any, Secret | None]:
        config = self.config
        if config.draining:
            await self._deny(ErrorCode.SHUTTING_DOWN, CloseCode.TRY_AGAIN_LATER, "draining")
        caller = await config.authenticate(connect.token)
        if caller is None:
            token_ref = hashlib.sha256(connect.token.encode()).hexdigest()[:16]
            config.factory.audit("session.auth_denied", {"token_ref": token_ref})
            await self._deny(ErrorCode.AUTH_DENIED, CloseCode.AUTH_DENIED, "auth_denied")
        self._leave_pending()
        if config.wait_ready is not None and not await config.wait_ready():
            await self._deny(ErrorCode.CAPACITY_EXHAUSTED, CloseCode.TRY_AGAIN_LATER, "warming")
        # The profile first, then the slot: choosing a profile awaits the store (a reloaded
        # file, a rollback), and a caller with no profile must never hold a slot meanwhile,
        # or a burst of such connects would turn away callers who have one.
        try:
            profile = await config.select_profile(caller)
        except AuthError:
            config.factory.audit(
                "session.profile_denied",
                {"tenant_id": caller.tenant, "subject_ref": caller.subject_ref},
            )
            await self._deny(ErrorCode.PROFILE_DENIED, CloseCode.PROFILE_DENIED, "no_profile")
        if not self._take_slot():
            await self._deny(ErrorCode.CAPACITY_EXHAUSTED, CloseCode.TRY_AGAIN_LATER, "capacity")
        resume = connect.resume_token
        return caller, profile, Secret(resume, remember=False) if resume else None

    def _take_slot(self) -> bool:
        """Check the cap and take a slot in one step: no await between the two, so concurrent
        connects cannot all pass the check before any of them is counted."""
        active = self.config.active
        if len(active) >= self.config.max_sessions:
            return False
        self.slot = new_id("slot")
        active.add(self.slot)
        self.config.metrics.gauge("active_sessions", len(active))
        return True

    def _release_slot(self) -> None:
        if self.slot:
            self.config.active.discard(self.slot)
            self.slot = ""
            self.config.metrics.gauge("active_sessions", len(self.config.active))

    async def _deny(self, code: ErrorCode, close: int, outcome: str) -> NoReturn:
        self._release_slot()  # at once: a refused connect never holds a slot while it closes
        self.config.metrics.count(
            "sessions", outcome="denied" if close != CloseCode.TRY_AGAIN_LATER else "rejected"
        )
        await self._send_direct(error_payload(code))
        raise _Closed(close)

    # -------------------------------------------------------------------------- run

    async def _run(self, caller: Any, profile: Any, resume_token: Secret | None) -> None:
        config = self.config
        out = OutputChannel(
            max_lead_ms=profile.max_lead_ms, monotonic=config.monotonic,
            on_after_stop=lambda: config.metrics.count("audio_after_stop"),
        )
        self.out = out
        try:
            handle = await config.factory.open(
                caller,
                profile,
                out,
                turn_mode="server_vad",
                locale=profile.locale,
                resume_token=resume_token,
            )
        except AuthError as exc:
            await self._deny(exc.code, CloseCode.PROFILE_DENIED, "voice_unavailable")
        self.handle = handle
        session = handle.session
        self.session_id = session.ctx.session_id
        config.metrics.count("sessions", outcome="admitted")
        self._announce(session, list(handle.rejected))
        try:
            with structlog.contextvars.bound_contextvars(session_id=self.session_id):
                async with anyio.create_task_group() as tg:
                    await tg.start(self._own, session)
                    tg.start_soon(self._first_done, tg, self._inbound, session)
                    tg.start_soon(self._first_done, tg, self._outbound)
                    tg.start_soon(self._first_done, tg, self._overflow_watch, out)
            if out.overflowed.is_set():
                await self._close(CloseCode.POLICY_VIOLATION)
        finally:
            self._release_slot()
            self._audit_coalesced()
            with anyio.CancelScope(shield=True):
                await handle.aclose(resumable=not self.client_closed)

    async def _overflow_watch(self, out: OutputChannel) -> None:
        """A client that stops reading while frames keep coming fills the control lane; the
        channel never raises into the session's producers, it flags the overflow, and this
        ends the connection (1008 once the task group has stopped)."""
        await out.overflowed.wait()
        self.config.metrics.count("frames_rejected", reason="control_lane_full")
        log.warning("relay.control_lane_overflow")

    async def _own(
        self,
        session: SessionInput,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run the session; one ended by the server (a resume took it over, shutdown) closes the
        connection once its last control frames are out."""
        await session.run(task_status=task_status)
        if self.close_code is None:
            self._close_after_drain(CloseCode.NORMAL)

    async def _first_done(self, tg: anyio.abc.TaskGroup, func: Any, *args: Any) -> None:
        try:
            await func(*args)
        finally:
            tg.cancel_scope.cancel()

    def _announce(self, session: SessionInput, rejected: list[ev.RejectedField]) -> None:
        assert self.out is not None and self.handle is not None
        applied = ev.ConfigurationApplied(
            session_id=self.session_id,
            resume_token=self.handle.resume_token.reveal(),
            effective=session.ctx.effective,
            rejected_fields=rejected,
        )
        self.out.control(OutFrame(payload=applied))

    # ---------------------------------------------------------------------- inbound

    async def _inbound(self, session: SessionInput) -> None:
        try:
            await self._inbound_loop(session)
        except WebSocketDisconnect:
            session.close("disconnect")

    async def _inbound_loop(self, session: SessionInput) -> None:
        while True:
            text = await self._receive_text()
            try:
                self._accept_frame(text)
                assert text is not None
                event = codec.decode_client(text)
                self._check_envelope(event)
            except ProtocolError as exc:
                close = self._reject(exc.code)
                if close is not None:
                    self._close_after_drain(close)
                    await anyio.sleep_forever()
                continue
            self.strikes.clear()
            tracing.inbound(event.traceparent)  # a turn this frame closes joins its trace
            if self._dispatch(session, event):
                await anyio.sleep_forever()  # the outbound pump closes once the lane drains

    def _accept_frame(self, text: str | None) -> None:
        self.in_sequence += 1
        if text is None:
            raise ProtocolError("binary frame", code=ErrorCode.MALFORMED_EVENT)
        if _utf8_size_over(text, self.limits.max_frame_bytes):
            raise ProtocolError("frame too large", code=ErrorCode.FRAME_TOO_LARGE)
        if not self.rate.admit(self.config.monotonic()):
            raise ProtocolError("rate", code=ErrorCode.RATE_LIMITED)

    def _check_envelope(self, event: ev.ClientEvent) -> None:
        data = event.data
        if data.sequence != self.in_sequence:
            raise ProtocolError("sequence", code=ErrorCode.SEQUENCE_VIOLATION)
        if data.session_id != self.session_id:
            raise ProtocolError("session id", code=ErrorCode.SESSION_MISMATCH)
        if isinstance(event, ev.AudioInputDeltaV1):
            audio = event.data.payload
            if audio.sample_rate != 16000 or len(audio.audio) % 2:
                raise ProtocolError("audio format", code=ErrorCode.INVALID_PAYLOAD)
            if len(audio.audio) / 32.0 > self.limits.max_audio_ms:
                raise ProtocolError("audio too long", code=ErrorCode.FRAME_TOO_LARGE)
        if isinstance(event, ev.SessionConnectV1):
            raise ProtocolError("already connected", code=ErrorCode.INVALID_STATE)

    def _reject(self, code: ErrorCode) -> int | None:
        """Answer a rejected frame; returns a close code once the client keeps misbehaving."""
        assert self.out is not None
        self.config.metrics.count("frames_rejected", reason=code.value)
        self.config.metrics.count("errors", code=code.value)  # an error.v1 the client gets
        self.out.control(OutFrame(payload=error_payload(code)))
        if not self.strikes.hit():
            return None
        if code == ErrorCode.FRAME_TOO_LARGE:
            return CloseCode.MESSAGE_TOO_BIG
        return CloseCode.POLICY_VIOLATION

    def _dispatch(self, session: SessionInput, event: ev.ClientEvent) -> bool:
        """Hand one valid event to the session. True when the client closed the session."""
        match event:
            case ev.AudioInputDeltaV1():
                session.on_audio(event.data.payload.audio)
            case ev.OutputPlayoutProgressV1():
                p = event.data.payload
                session.on_playout(p.generation_id, p.played_ms)
            case ev.InputSpeechStartedV1():
                session.on_speech_hint()
            case ev.AudioInputCommitV1():
                session.on_commit()
            case ev.InputTextV1():
                session.on_text(event.data.payload.text)
            case ev.GenerationCancelRequestedV1():
                session.on_cancel(event.data.payload.generation_id)
            case ev.ToolConfirmationSubmittedV1():
                c = event.data.payload
                session.on_confirmation(c.proposal_id, c.revision, c.decision)
            case ev.SessionUpdateRequestedV1():
                self._update(session, event.data.payload)
            case ev.SessionCloseV1():
                self.client_closed = True
                session.close()
                self._close_after_drain(CloseCode.NORMAL)
                return True
        return False

    def _update(self, session: SessionInput, update: ev.UpdateRequested) -> None:
        result = sanitize(update, profile_locale=session.ctx.profile.locale)
        effective = session.ctx.effective
        changes: dict[str, Any] = {}
        if result.locale is not None:
            changes["locale"] = result.locale
        if result.turn_mode is not None:
            changes["turn_mode"] = result.turn_mode
            session.set_turn_mode(result.turn_mode)
        if result.supports_playout_ack is not None and self.out is not None:
            self.out.playout_acks = self.out.playout_acks or result.supports_playout_ack
        if changes:
            effective = msgspec.structs.replace(effective, **changes)
            session.ctx = _with_effective(session.ctx, effective)
            if self.handle is not None:
                self.handle.applied(effective)
        if result.rejected or changes:
            self._audit_difference(
                {
                    "applied": sorted(changes),
                    "rejected": [r.field for r in result.rejected],
                    "reasons": [r.reason for r in result.rejected],
                }
            )
        self._announce(session, result.rejected)

    def _audit_difference(self, difference: dict[str, list[str]]) -> None:
        """Audit what an update changed or refused, coalescing repeats (:class:`AuditCoalescer`)."""
        if self.audits.admit(tuple(tuple(v) for v in difference.values())):
            self.config.factory.audit(
                "session.configuration_applied", dict(difference), session_id=self.session_id
            )

    def _audit_coalesced(self) -> None:
        """The summary of coalesced updates, once the connection ends (before its close frame
        is sent, so that whoever saw the close finds the summary audited)."""
        summary = self.audits.take_summary()
        if summary is not None:
            self.config.factory.audit(
                "session.configuration_coalesced", summary, session_id=self.session_id
            )

    # --------------------------------------------------------------------- outbound

    async def _outbound(self) -> None:
        assert self.out is not None
        out = self.out
        try:
            await self._outbound_loop(out)
        except (WebSocketDisconnect, OSError, RuntimeError):
            return  # the client is gone; the inbound pump sees the disconnect too

    async def _outbound_loop(self, out: OutputChannel) -> None:
        try:
            while True:
                frame = await out.receive(until=lambda: self.close_code is not None)
                if frame is None:
                    await self._close(self.close_code or CloseCode.NORMAL)
                    return
                await self._send_frame(frame)
                if self.close_code is not None and not out.has_control():
                    await self._close(self.close_code)
                    return
        except ControlLaneFull:
            await self._close(CloseCode.POLICY_VIOLATION)

    async def _send_frame(self, frame: OutFrame) -> None:
        self.out_sequence += 1
        event = codec.server_envelope(
            frame.payload,
            session_id=self.session_id,
            sequence=self.out_sequence,
            envelope=frame.envelope,
            turn_id=frame.turn_id,
        )
        await self.ws.send_text(codec.encode(event).decode())

    async def _send_direct(self, payload: ev.Error) -> None:
        await self._send_frame(OutFrame(payload=payload))

    # ----------------------------------------------------------------------- plumbing

    def _close_after_drain(self, code: int) -> None:
        """Close once every queued control frame (errors, the final state) has been sent."""
        assert self.out is not None
        self.close_code = code
        self.out.wake()

    async def _receive_text(self) -> str | None:
        message = await self.ws.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        text = message.get("text")
        return text if isinstance(text, str) else None

    async def _close(self, code: int) -> None:
        self._audit_coalesced()
        if self.ws.application_state == WebSocketState.CONNECTED:
            with contextlib.suppress(RuntimeError, OSError):
                await self.ws.close(code)


def _with_effective(ctx: Any, effective: ev.Effective) -> Any:
    from dataclasses import replace

    return replace(ctx, effective=effective)


def _utf8_size_over(text: str, limit: int) -> bool:
    """Whether the frame's UTF-8 size exceeds ``limit``, without encoding frames that cannot
    (a character is at most 4 bytes; audio frames are ASCII JSON)."""
    if len(text) > limit:
        return True
    return len(text) * 4 > limit and len(text.encode()) > limit
