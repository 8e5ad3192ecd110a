"""A phone carrier, as the tests play it: Twilio's Voice webhook (signed as Twilio signs it) and
its bidirectional Media Streams client over Starlette's in-process TestClient WebSocket.

:class:`CarrierClient` reads the server's messages on a thread of its own, as a carrier does
while the call goes on: it keeps every message, plays the audio (echoes each ``mark`` once the
audio before it would have played; here at once) unless told to hold the marks, and, after a
``clear``, echoes the marks it held, as Twilio does (those do not count as played), and plays
on. The test's
thread speaks (μ-law ``media``), presses keys, hangs up, and waits on what arrived.
"""

from __future__ import annotations

import base64
import json
import math
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import numpy as np
from starlette.testclient import TestClient, WebSocketTestSession
from starlette.websockets import WebSocketDisconnect

from vocero.relay.telephony import twilio

AUTH_TOKEN = "twilio-test-auth-token-0123456789"
PUBLIC_URL = "https://voice.example.test"
ULAW_RATE = 8000
Message = dict[str, Any]


def ulaw_frames(ms: int, *, loud: bool) -> list[bytes]:
    """20 ms frames of 8 kHz μ-law: a 300 Hz tone (speech to the sim VAD) or silence."""
    import g711

    samples = ULAW_RATE * ms // 1000
    t = np.arange(samples) / ULAW_RATE
    wave = 0.3 * np.sin(2 * math.pi * 300.0 * t) if loud else np.zeros(samples)
    data: bytes = g711.encode_ulaw(wave.astype(np.float32))
    return [data[i : i + 160] for i in range(0, len(data), 160)]


def webhook(
    client: TestClient,
    params: dict[str, str],
    *,
    signature: str | None = "sign",
    token: str = AUTH_TOKEN,
    query: str = "",
) -> Any:
    """POST the Voice webhook as Twilio does; ``signature="sign"`` signs it with ``token``
    over ``PUBLIC_URL`` + the route (+ ``?query``, as an outbound call's ``Url`` has it;
    ``None``: no signature header)."""
    path = twilio.VOICE_PATH + (f"?{query}" if query else "")
    headers = {"content-type": "application/x-www-form-urlencoded"}
    if signature == "sign":  # Twilio's own library signs it, not the code under test
        from twilio.request_validator import RequestValidator

        signature = RequestValidator(token).compute_signature(
            PUBLIC_URL + path, params
        )
    if signature is not None:
        headers["x-twilio-signature"] = signature
    return client.post(path, content=urlencode(params), headers=headers)


class CarrierClient:
    """One call's media stream, as the carrier speaks it."""

    def __init__(self, ws: WebSocketTestSession, call_sid: str, stream_sid: str = "") -> None:
        self.ws = ws
        self.call_sid = call_sid
        self.stream_sid = stream_sid or "MZ" + call_sid.removeprefix("CA")
        self.received: list[Message] = []
        self.echoed: list[str] = []
        """Mark names echoed, in order (those after a ``clear`` included)."""
        self.echoed_before_clear: list[str] = []
        self.hold_marks = False
        self.echo_limit: int | None = None
        """Echo only this many marks in all, holding the rest (a caller who stopped hearing)."""
        self.close_code: int | None = None
        self._held: list[str] = []
        self._changed = threading.Condition()
        self._timestamp = 0
        self._sequence = 0
        self._reader: threading.Thread | None = None

    # ------------------------------------------------------------------ the call

    def start(self, ticket: str | None, *, call_sid: str | None = None) -> None:
        """``connected`` then ``start`` with the ticket (``None``: no ticket parameter)."""
        self._send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        parameters = {} if ticket is None else {"ticket": ticket}
        self._send({
            "event": "start",
            "streamSid": self.stream_sid,
            "start": {
                "accountSid": "ACtest", "streamSid": self.stream_sid,
                "callSid": call_sid or self.call_sid, "tracks": ["inbound"],
                "customParameters": parameters,
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            },
        })
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def say(self, speech_ms: int = 400, silence_ms: int = 600) -> None:
        """A caller turn: speech, then the silence that ends it."""
        for frame in ulaw_frames(speech_ms, loud=True) + ulaw_frames(silence_ms, loud=False):
            self.media(frame)

    def media(self, ulaw: bytes) -> None:
        self._timestamp += 20
        self._send({
            "event": "media", "streamSid": self.stream_sid,
            "media": {"track": "inbound", "chunk": str(self._sequence),
                      "timestamp": str(self._timestamp),
                      "payload": base64.b64encode(ulaw).decode()},
        })

    def dtmf(self, digit: str) -> None:
        self._send({"event": "dtmf", "streamSid": self.stream_sid,
                    "dtmf": {"track": "inbound_track", "digit": digit}})

    def hang_up(self) -> None:
        self._send({"event": "stop", "streamSid": self.stream_sid,
                    "stop": {"accountSid": "ACtest", "callSid": self.call_sid}})

    def release_marks(self) -> None:
        """Play what was held: echo the held marks and every later one."""
        with self._changed:
            self.hold_marks, self.echo_limit = False, None
            held, self._held = self._held, []
        for name in held:
            self._echo(name)

    # ------------------------------------------------------------------ what arrived

    def events(self) -> list[str]:
        with self._changed:
            return [m["event"] for m in self.received]

    def of(self, event: str) -> list[Message]:
        with self._changed:
            return [m for m in self.received if m["event"] == event]

    def wait(self, what: str, check: Callable[[], Any], timeout_s: float = 20.0) -> Any:
        """Until ``check()`` holds, woken by every message that arrives (or the close)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not (found := check()):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}; got {self._summary()}")
                self._changed.wait(left)
            return found

    def wait_closed_reading(self, timeout_s: float = 20.0) -> int:
        """Read (without starting the call) until the server closes the socket."""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self.wait_closed(timeout_s)

    def wait_closed(self, timeout_s: float = 20.0) -> int:
        self.wait("the socket to close", lambda: self.close_code is not None, timeout_s)
        assert self.close_code is not None
        return self.close_code

    def audio_ms(self, messages: list[Message] | None = None) -> int:
        """Milliseconds of μ-law received (8 bytes a ms)."""
        media = [m for m in (messages or self.received) if m["event"] == "media"]
        return sum(len(base64.b64decode(m["media"]["payload"])) for m in media) // 8

    def _summary(self) -> str:
        counts: dict[str, int] = {}
        for m in self.received:
            counts[m["event"]] = counts.get(m["event"], 0) + 1
        return f"{counts}, closed={self.close_code}"

    # ------------------------------------------------------------------ the wire

    def _send(self, message: Message) -> None:
        self._sequence += 1
        self.ws.send_text(json.dumps({**message, "sequenceNumber": str(self._sequence)}))

    def _echo(self, name: str) -> None:
        with self._changed:
            self.echoed.append(name)
            if not any(m["event"] == "clear" for m in self.received):
                self.echoed_before_clear.append(name)
        self._send({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": name}})

    def _closed(self, code: int) -> None:
        with self._changed:
            self.close_code = code
            self._changed.notify_all()

    def _read(self) -> None:
        while True:
            try:
                message: Message = json.loads(self.ws.receive_text())
            except WebSocketDisconnect as exc:
                self._closed(exc.code)
                return
            except Exception:  # the test left the socket's context: the call is over
                self._closed(-1)
                return
            held: list[str] = []
            with self._changed:
                self.received.append(message)
                hold = self.hold_marks or (
                    self.echo_limit is not None and len(self.echoed) >= self.echo_limit
                )
                echo = message["event"] == "mark" and not hold
                if message["event"] == "mark" and hold:
                    self._held.append(message["mark"]["name"])
                if message["event"] == "clear":  # Twilio returns the marks it dropped
                    held, self._held = self._held, []
                    self.hold_marks, self.echo_limit = False, None  # the next answer plays
                self._changed.notify_all()
            if echo:
                self._echo(message["mark"]["name"])
            for name in held:
                self._echo(name)
