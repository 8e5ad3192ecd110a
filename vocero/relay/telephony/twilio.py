"""Twilio's side of a call, as data: the Media Streams messages, the webhook signature and the
TwiML answers (SPEC §10; https://www.twilio.com/docs/voice/media-streams/websocket-messages).

Everything Twilio-specific lives here and nothing else does: Telnyx, SignalWire and Plivo copy
the stream's shape with their own names and signatures, and would be a module beside this one
(``docs/telephony.md``, "Another carrier"). Sans-IO: text in, values out.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import xml.etree.ElementTree as ET
from collections.abc import Iterable

import msgspec

from vocero.relay.telephony.carrier import (
    CarrierEvent,
    Connected,
    Key,
    MarkEchoed,
    Media,
    Start,
    Stop,
)

SIGNATURE_HEADER = "x-twilio-signature"
ENCODING = "audio/x-mulaw"
STREAM_PATH = "/v1/telephony/twilio"
VOICE_PATH = "/v1/telephony/twilio/voice"
REFUSAL = "Sorry, this number is not registered for this service. Goodbye."
"""What an unknown number hears before the call is hung up."""


# ------------------------------------------------------------------------ stream messages in
# (field names are Twilio's own, camelCase)


class _MediaFormat(msgspec.Struct):
    encoding: str = ""
    sampleRate: int = 0
    channels: int = 1


class _StartBody(msgspec.Struct):
    streamSid: str = ""
    callSid: str = ""
    customParameters: dict[str, str] = {}
    mediaFormat: _MediaFormat = msgspec.field(default_factory=_MediaFormat)


class _MediaBody(msgspec.Struct):
    payload: str = ""
    track: str = "inbound"


class _DtmfBody(msgspec.Struct):
    digit: str = ""


class _MarkBody(msgspec.Struct):
    name: str = ""


class _Connected(msgspec.Struct, tag_field="event", tag="connected"):
    pass


class _Start(msgspec.Struct, tag_field="event", tag="start"):
    start: _StartBody
    streamSid: str = ""


class _Media(msgspec.Struct, tag_field="event", tag="media"):
    media: _MediaBody


class _Dtmf(msgspec.Struct, tag_field="event", tag="dtmf"):
    dtmf: _DtmfBody


class _Mark(msgspec.Struct, tag_field="event", tag="mark"):
    mark: _MarkBody


class _Stop(msgspec.Struct, tag_field="event", tag="stop"):
    pass


_Inbound = _Connected | _Start | _Media | _Dtmf | _Mark | _Stop
_decoder = msgspec.json.Decoder(_Inbound)


class TwilioStream:
    """Twilio Media Streams messages (:class:`~.carrier.CarrierProtocol`)."""

    encoding = ENCODING

    def parse(self, text: str) -> CarrierEvent | None:
        try:
            message = _decoder.decode(text)
        except msgspec.DecodeError:  # malformed, or an event Vocero does not know
            return None
        match message:
            case _Connected():
                return Connected()
            case _Start(start=body):
                return Start(
                    stream_sid=body.streamSid or message.streamSid,
                    call_sid=body.callSid,
                    parameters=dict(body.customParameters),
                    encoding=body.mediaFormat.encoding,
                    sample_rate=body.mediaFormat.sampleRate,
                    channels=body.mediaFormat.channels,
                )
            case _Media(media=body):
                if body.track not in ("inbound", "inbound_track"):
                    return None
                try:
                    return Media(base64.b64decode(body.payload, validate=True))
                except (binascii.Error, ValueError):
                    return None
            case _Dtmf(dtmf=body):
                return Key(body.digit)
            case _Mark(mark=body):
                return MarkEchoed(body.name)
            case _Stop():
                return Stop()
        return None

    def media(self, stream_sid: str, ulaw: bytes) -> str:
        payload = base64.b64encode(ulaw).decode()
        return _json({"event": "media", "streamSid": stream_sid, "media": {"payload": payload}})

    def mark(self, stream_sid: str, name: str) -> str:
        return _json({"event": "mark", "streamSid": stream_sid, "mark": {"name": name}})

    def clear(self, stream_sid: str) -> str:
        return _json({"event": "clear", "streamSid": stream_sid})


def _json(value: object) -> str:
    return msgspec.json.encode(value).decode()


# ------------------------------------------------------------------------ webhook signature


def signature(auth_token: str, url: str, params: Iterable[tuple[str, str]]) -> str:
    """``X-Twilio-Signature`` as Twilio computes it: HMAC-SHA1 keyed with the auth token over
    the full URL of the request followed by each POST parameter, sorted by name, name then
    value (a repeated name's values sorted too), base64."""
    values: dict[str, set[str]] = {}
    for name, value in params:
        values.setdefault(name, set()).add(value)
    text = url + "".join(name + value for name in sorted(values) for value in sorted(values[name]))
    digest = hmac.new(auth_token.encode(), text.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def signature_valid(
    auth_token: str, url: str, params: Iterable[tuple[str, str]], presented: str
) -> bool:
    """Whether ``presented`` is the request's signature (compared in constant time)."""
    expected = signature(auth_token, url, params)
    return hmac.compare_digest(expected.encode(), presented.encode())


# ------------------------------------------------------------------------ TwiML


def connect_twiml(stream_url: str, parameters: dict[str, str]) -> str:
    """Connect the call to a bidirectional media stream, with ``parameters`` handed to it in
    ``start.customParameters``."""
    response = ET.Element("Response")
    stream = ET.SubElement(ET.SubElement(response, "Connect"), "Stream", url=stream_url)
    for name, value in parameters.items():
        ET.SubElement(stream, "Parameter", name=name, value=value)
    return _document(response)


def refusal_twiml(words: str = REFUSAL) -> str:
    """Say a short refusal and hang up."""
    response = ET.Element("Response")
    ET.SubElement(response, "Say").text = words
    ET.SubElement(response, "Hangup")
    return _document(response)


def _document(root: ET.Element) -> str:
    return '<?xml version="1.0" encoding="UTF-8"?>' + ET.tostring(root, encoding="unicode")
