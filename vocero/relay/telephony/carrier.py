"""What a carrier's media stream says, in the carrier's own terms but no carrier's wire format:
the events one carrier module (:mod:`.twilio`) parses into and the messages it writes. The
stream glue (:mod:`.stream`) speaks only these, so a second carrier is a second module."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Connected:
    """The carrier opened the stream (nothing to act on yet)."""


@dataclass(frozen=True, slots=True)
class Start:
    stream_sid: str
    call_sid: str
    parameters: dict[str, str] = field(default_factory=dict)
    """The ``<Parameter>`` values of the webhook's answer (the ticket)."""
    encoding: str = ""
    sample_rate: int = 0
    channels: int = 1


@dataclass(frozen=True, slots=True)
class Media:
    payload: bytes
    """The caller's audio: μ-law, 8 kHz, mono, no header."""


@dataclass(frozen=True, slots=True)
class Key:
    digit: str


@dataclass(frozen=True, slots=True)
class MarkEchoed:
    name: str


@dataclass(frozen=True, slots=True)
class Stop:
    """The call ended (the caller hung up, or the carrier stopped the stream)."""


CarrierEvent = Connected | Start | Media | Key | MarkEchoed | Stop


class CarrierProtocol(Protocol):
    """One carrier's media stream messages (sans-IO)."""

    encoding: str
    """The audio encoding the stream must announce (``audio/x-mulaw``)."""

    def parse(self, text: str) -> CarrierEvent | None:
        """One message from the carrier; ``None``: malformed or of no meaning to Vocero."""
        ...

    def media(self, stream_sid: str, ulaw: bytes) -> str: ...

    def mark(self, stream_sid: str, name: str) -> str: ...

    def clear(self, stream_sid: str) -> str: ...
