"""The envelope rules of ``/v1/realtime`` (``docs/protocol.md``, "Envelope rules"), sans-IO.

:class:`EnvelopeRules` holds one connection's inbound protocol state (the expected client
sequence, the assigned session id, the one-second rate window, the count of consecutive rejected
frames) and judges each incoming text frame against it: :meth:`EnvelopeRules.first` the frame
that must open the connection, :meth:`EnvelopeRules.judge` every frame after it. It reads no
socket, awaits nothing and reads no clock (the caller passes the time); the relay's inbound pump
performs what a verdict says: hand an :class:`Accepted` event to the session, answer a
:class:`Rejected` frame with its stable ``error.v1`` code, and close the connection when the
verdict carries a close code.
"""

from __future__ import annotations

from dataclasses import dataclass

from vocero.contracts import codec
from vocero.contracts import events as ev
from vocero.contracts.errors import CloseCode, ErrorCode, ProtocolError
from vocero.relay.limits import Limits, RateWindow, Strikes

PCM16_SAMPLE_RATE = 16000
"""The only input sample rate (16 kHz mono PCM16: 32 bytes a millisecond)."""
PCM16_BYTES_PER_MS = 32.0


@dataclass(frozen=True, slots=True)
class Accepted:
    """The frame passed every rule: hand ``event`` to the session."""

    event: ev.ClientEvent


@dataclass(frozen=True, slots=True)
class Rejected:
    """The frame is dropped and answered with ``error.v1`` ``code``; ``close`` is the close code
    once the client has sent too many rejected frames in a row (``None``: keep going)."""

    code: ErrorCode
    close: int | None = None


Verdict = Accepted | Rejected


class EnvelopeRules:
    """Judges the client's frames of one connection against the envelope rules."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.in_sequence = 0
        """The count of frames the client has sent, rejected ones included: the sequence the
        latest frame had to carry."""
        self.session_id = ""
        """The session id every frame after the connect must carry, once it is assigned."""
        self.rate = RateWindow(limits.max_frames_per_s)
        self.strikes = Strikes(limits.strikes_to_close)

    def first(self, text: str | None) -> ev.Connect | None:
        """The connect request of the connection's first frame, or ``None`` when that frame is
        not a ``session.connect.v1`` with sequence 1 (``CONNECT_REQUIRED``; ``text`` is ``None``
        for a binary frame or nothing at all within the connect timeout)."""
        if text is None:
            return None
        try:
            event = codec.decode_client(text)
        except ProtocolError:
            return None
        if not isinstance(event, ev.SessionConnectV1) or event.data.sequence != 1:
            return None
        self.in_sequence = 1
        return event.data.payload

    def judge(self, text: str | None, now: float) -> Verdict:
        """The verdict on one frame after the connect (``text`` is ``None`` for a binary frame),
        arriving at monotonic time ``now``."""
        try:
            event = self._check(text, now)
        except ProtocolError as exc:
            return Rejected(exc.code, self._strike(exc.code))
        self.strikes.clear()
        return Accepted(event)

    def _check(self, text: str | None, now: float) -> ev.ClientEvent:
        self.in_sequence += 1
        if text is None:
            raise ProtocolError("binary frame", code=ErrorCode.MALFORMED_EVENT)
        if utf8_size_over(text, self.limits.max_frame_bytes):
            raise ProtocolError("frame too large", code=ErrorCode.FRAME_TOO_LARGE)
        if not self.rate.admit(now):
            raise ProtocolError("rate", code=ErrorCode.RATE_LIMITED)
        event = codec.decode_client(text)
        self._check_envelope(event)
        return event

    def _check_envelope(self, event: ev.ClientEvent) -> None:
        data = event.data
        if data.sequence != self.in_sequence:
            raise ProtocolError("sequence", code=ErrorCode.SEQUENCE_VIOLATION)
        if data.session_id != self.session_id:
            raise ProtocolError("session id", code=ErrorCode.SESSION_MISMATCH)
        if isinstance(event, ev.AudioInputDeltaV1):
            audio = event.data.payload
            if audio.sample_rate != PCM16_SAMPLE_RATE or len(audio.audio) % 2:
                raise ProtocolError("audio format", code=ErrorCode.INVALID_PAYLOAD)
            if len(audio.audio) / PCM16_BYTES_PER_MS > self.limits.max_audio_ms:
                raise ProtocolError("audio too long", code=ErrorCode.FRAME_TOO_LARGE)
        if isinstance(event, ev.SessionConnectV1):
            raise ProtocolError("already connected", code=ErrorCode.INVALID_STATE)

    def _strike(self, code: ErrorCode) -> int | None:
        """Count a rejected frame; the close code once the client keeps misbehaving."""
        if not self.strikes.hit():
            return None
        if code == ErrorCode.FRAME_TOO_LARGE:
            return CloseCode.MESSAGE_TOO_BIG
        return CloseCode.POLICY_VIOLATION


def utf8_size_over(text: str, limit: int) -> bool:
    """Whether the frame's UTF-8 size exceeds ``limit``, without encoding frames that cannot
    (a character is at most 4 bytes; audio frames are ASCII JSON)."""
    if len(text) > limit:
        return True
    return len(text) * 4 > limit and len(text.encode()) > limit
