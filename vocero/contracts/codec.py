"""One decoder for client frames and one encoder for server frames, with stable error codes."""

from __future__ import annotations

import os
import random
import re
import time
from itertools import accumulate
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

_INT_FIELDS: dict[type[Any], tuple[str, ...]] = {}
"""The integer fields of each client payload (range-checked after decoding)."""
for _client_cls in ev.CLIENT_EVENT_TYPES:
    (_client_payload,) = get_args(get_type_hints(_client_cls)["data"])
    _INT_FIELDS[_client_payload] = tuple(
        f.name for f in msgspec.structs.fields(_client_payload) if f.type is int
    )


MAX_PAYLOAD_DEPTH = 32
"""A payload nested deeper than this (objects and arrays) is ``INVALID_PAYLOAD``."""
_ENVELOPE_DEPTH = 2
"""The envelope object and its ``data`` member hold the payload."""
_MAX_FRAME_DEPTH = MAX_PAYLOAD_DEPTH + _ENVELOPE_DEPTH
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_INT64 = range(-(2**63), 2**63)
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"{}[]")))
_STEP = [1 if byte in b"{[" else -1 for byte in range(256)]


def too_deep(frame: str | bytes) -> bool:
    """Whether objects and arrays nest deeper in this JSON text than a frame may (payload
    limit plus the envelope), brackets inside strings ignored.

    Linear, and in C: a frame with few opening brackets (audio frames have almost none) is
    answered by two counts; otherwise strings are cut out and the bracket depth is summed."""
    if isinstance(frame, str):
        if frame.count("{") + frame.count("[") <= _MAX_FRAME_DEPTH:
            return False
        frame = frame.encode()
    elif frame.count(b"{") + frame.count(b"[") <= _MAX_FRAME_DEPTH:
        return False
    brackets = _JSON_STRING.sub(b"", frame).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets), initial=0)) > _MAX_FRAME_DEPTH


def decode_client(frame: str | bytes) -> ev.ClientEvent:
    """Decode one client frame, or raise :class:`ProtocolError` with the code docs/protocol.md
    "Envelope rules" names.

    No input makes it raise anything else: nesting is bounded before decoding (the decoder
    recurses) and integers must fit in 64 bits (they are used as floats and SQL integers)."""
    if too_deep(frame):
        raise ProtocolError("payload nested too deeply", code=ErrorCode.INVALID_PAYLOAD)
    try:
        event = _client_decoder.decode(frame)
    except msgspec.ValidationError as exc:
        message = str(exc)
        if message.endswith("at `$.type`") or "missing required field `type`" in message:
            raise ProtocolError(message, code=ErrorCode.UNKNOWN_EVENT) from None
        if "at `$.data.payload" in message:
            raise ProtocolError(message, code=ErrorCode.INVALID_PAYLOAD) from None
        raise ProtocolError(message, code=ErrorCode.MALFORMED_EVENT) from None
    except msgspec.DecodeError as exc:
        raise ProtocolError(str(exc), code=ErrorCode.MALFORMED_EVENT) from None
    _check_integers(event)
    return event


def _check_integers(event: ev.ClientEvent) -> None:
    data = event.data
    if data.sequence not in _INT64:
        raise ProtocolError("sequence out of range", code=ErrorCode.MALFORMED_EVENT)
    payload = data.payload
    for name in _INT_FIELDS[type(payload)]:
        if getattr(payload, name) not in _INT64:
            raise ProtocolError(f"{name} out of range", code=ErrorCode.INVALID_PAYLOAD)


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
    payload: ev.ServerPayload,
    *,
    session_id: str,
    sequence: int,
    traceparent: str = "",
    turn_id: str = "",
    envelope: type[ev.ServerEnvelope] | None = None,
) -> ev.ServerEnvelope:
    """Wrap a payload in its server envelope. Payloads shared by two events (transcripts) need
    ``envelope`` to say which one."""
    cls = envelope or _SERVER_ENVELOPE_BY_PAYLOAD[type(payload)]
    data = ev.Data(session_id=session_id, sequence=sequence, payload=payload, turn_id=turn_id)
    return cls(
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
    event: ev.ClientEvent = cls(id=new_event_id(), time=now_rfc3339(), data=data)  # type: ignore[assignment]
    return event
