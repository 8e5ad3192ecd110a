"""One decoder for client frames and one encoder for server frames, with stable error codes."""

from __future__ import annotations

import os
import random
import time
from typing import Any, get_args, get_type_hints

import msgspec

from vocero.contracts import events as ev
from vocero.contracts.errors import ErrorCode, ProtocolError

_client_decoder: msgspec.json.Decoder[ev.ClientEvent] = msgspec.json.Decoder(ev.ClientEvent)
_server_decoder: msgspec.json.Decoder[ev.ServerEvent] = msgspec.json.Decoder(ev.ServerEvent)
_encoder = msgspec.json.Encoder()

_SERVER_ENVELOPE_BY_PAYLOAD: dict[type[Any], type[ev.ServerEnvelope]] = {}
for _cls in ev.SERVER_EVENT_TYPES:
    (_payload,) = get_args(get_type_hints(_cls)["data"])
    _SERVER_ENVELOPE_BY_PAYLOAD.setdefault(_payload, _cls)


def decode_client(frame: str | bytes) -> ev.ClientEvent:
    """Decode one client frame, or raise :class:`ProtocolError` with the code SPEC §2 names."""
    try:
        return _client_decoder.decode(frame)
    except msgspec.ValidationError as exc:
        message = str(exc)
        if message.endswith("at `$.type`") or "missing required field `type`" in message:
            raise ProtocolError(message, code=ErrorCode.UNKNOWN_EVENT) from None
        if "at `$.data.payload" in message:
            raise ProtocolError(message, code=ErrorCode.INVALID_PAYLOAD) from None
        raise ProtocolError(message, code=ErrorCode.MALFORMED_EVENT) from None
    except msgspec.DecodeError as exc:
        raise ProtocolError(str(exc), code=ErrorCode.MALFORMED_EVENT) from None


def decode_server(frame: str | bytes) -> ev.ServerEvent:
    """Decode one server frame (for clients, tests and benchmarks)."""
    return _server_decoder.decode(frame)


_ids = random.Random(os.urandom(32))
"""Event ids must be unique, not secret: drawn in process, not with a system call per frame."""


def new_event_id() -> str:
    """``evt_`` and 128 random bits in hex (the shape of a UUID4 hex)."""
    return f"evt_{_ids.getrandbits(128):032x}"


_minute_prefix: tuple[int, str] = (-1, "")


def now_rfc3339() -> str:
    """UTC now as ``2026-01-01T12:34:56.789Z`` (milliseconds, truncated). Every server frame is
    stamped, so the date and time up to the minute are formatted once a minute."""
    global _minute_prefix
    minute, ms = divmod(time.time_ns() // 1_000_000, 60_000)
    cached_minute, prefix = _minute_prefix
    if minute != cached_minute:
        prefix = time.strftime("%Y-%m-%dT%H:%M:", time.gmtime(minute * 60))
        _minute_prefix = (minute, prefix)
    second, ms = divmod(ms, 1000)
    return f"{prefix}{second:02d}.{ms:03d}Z"


def server_envelope(
    payload: msgspec.Struct,
    *,
    session_id: str,
    sequence: int,
    traceparent: str = "",
    turn_id: str = "",
    envelope: type[ev.ServerEnvelope] | None = None,
) -> ev.ServerEvent:
    """Wrap a payload in its server envelope. Payloads shared by two events (transcripts) need
    ``envelope`` to say which one."""
    cls = envelope or _SERVER_ENVELOPE_BY_PAYLOAD[type(payload)]
    data = ev.Data(session_id=session_id, sequence=sequence, payload=payload, turn_id=turn_id)
    return cls(  # type: ignore[call-arg,return-value]
        id=new_event_id(),
        time=now_rfc3339(),
        subject=f"session/{session_id}" if session_id else "",
        traceparent=traceparent,
        data=data,
    )


def encode(event: msgspec.Struct) -> bytes:
    return _encoder.encode(event)


def client_envelope(
    payload: msgspec.Struct, cls: type[ev.ClientEnvelope], *, session_id: str, sequence: int
) -> ev.ClientEvent:
    """Build a client frame (used by the bundled clients, tests and benchmarks)."""
    data = ev.Data(session_id=session_id, sequence=sequence, payload=payload)
    return cls(id=new_event_id(), time=now_rfc3339(), data=data)  # type: ignore[call-arg,return-value]
