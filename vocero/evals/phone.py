"""``--transport twilio`` (docs/eval.md "Over the phone"): a scenario's caller rings the server as
Twilio would. The Voice webhook is signed here (HMAC-SHA1, as Twilio signs it: the eval imports
neither the relay nor the ``twilio`` package), the media stream opens with the TwiML's ticket,
the caller's Piper audio goes out as 8 kHz μ-law 20 ms ``media`` frames in real time, and every
``mark`` is echoed when the audio before it would have played. What the agent said is read from
the session record (history as heard), the proposals and the taps: the phone carries no events.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from vocero.evals.audio import SAMPLE_RATE, Voice
from vocero.evals.client import IDLE, TurnResult
from vocero.evals.format import Scenario

VOICE_PATH = "/v1/telephony/twilio/voice"
"""The number's Voice webhook (SPEC §10)."""
PHONE_RATE = 8000
FRAME_BYTES = PHONE_RATE // 50
"""20 ms of 8 kHz μ-law (one byte a sample)."""
POLL_S = 0.1
"""How often the session record is read while a turn's answer is awaited."""
QUIET_S = 0.4
"""A turn's answer is over once no media has come for this long (and the record says so)."""
SETTLE_S = 1.0
"""...and the record has said so, unchanged, for this long: a caller's line the server heard as
two utterances (a pause in it) is answered twice, and the second answer belongs to this turn."""
SILENCE = b"\xff" * FRAME_BYTES
"""20 ms of μ-law silence."""
KEYS = {"confirm": "1", "reject": "2"}
"""``confirm: button`` / ``reject: button`` on the phone: the keys of SPEC §10."""
CONFIRMATION_KEYS = {"proposal_id", "revision", "tool", "summary", "expires_at"}
"""What a confirmation expectation may name over the phone: the fields ``GET /v1/proposals``
carries of a revision (``fields`` is only on the WebSocket's event)."""


def twilio_signature(token: str, url: str, params: dict[str, str]) -> str:
    """``X-Twilio-Signature``: base64 HMAC-SHA1 with the auth token over the URL followed by the
    POST parameters sorted by name, each name then value."""
    data = url + "".join(name + params[name] for name in sorted(params))
    digest = hmac.new(token.encode(), data.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def to_ulaw(pcm16: bytes, rate: int = SAMPLE_RATE) -> bytes:
    """PCM16 mono at ``rate`` as the phone carries it: 8 kHz μ-law (soxr, g711)."""
    import g711
    import numpy as np
    import soxr

    samples = np.frombuffer(pcm16[: len(pcm16) // 2 * 2], dtype="<i2").astype(np.float32)
    audio = soxr.resample(samples / 32768.0, rate, PHONE_RATE) if rate != PHONE_RATE else (
        samples / 32768.0)
    encoded: bytes = g711.encode_ulaw(np.clip(audio, -1.0, 1.0).astype(np.float32))
    return encoded


def ulaw_to_pcm16(ulaw: bytes) -> bytes:
    import g711
    import numpy as np

    audio = g711.decode_ulaw(ulaw)
    pcm: bytes = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    return pcm


def phone_unchecked(scenario: Scenario) -> list[str]:
    """The expectations of ``scenario`` the phone cannot check (reported, never passed)."""
    problems: list[str] = []
    for index, turn in enumerate(scenario.turns, start=1):
        confirmation = turn.expect.confirmation if turn.expect is not None else None
        if isinstance(confirmation, dict):
            extra = sorted(set(confirmation) - CONFIRMATION_KEYS)
            if extra:
                problems.append(f"turn {index} confirmation {', '.join(extra)} (only "
                                f"{', '.join(sorted(CONFIRMATION_KEYS))} are on record)")
    return problems


class Records(Protocol):
    """The operator API of the server under test (:class:`~vocero.evals.server.Server`)."""

    base: str

    def get(self, route: str, **params: str) -> list[dict[str, Any]]: ...

    def get_json(self, route: str, **params: str) -> dict[str, Any]: ...


@dataclass
class Received:
    """A ``media`` frame as the carrier got it."""

    at: float
    """Epoch seconds of its arrival."""
    played_at: float
    """Monotonic seconds when its audio has played (it waits behind the frames before it)."""
    ulaw: bytes
    generation: str = ""
    """The generation of the next mark (a mark names the generation of the audio before it)."""


class Carrier:
    """One call's media stream, played by a phone in real time: frames queue and play at 8 kHz,
    each mark is echoed once the audio before it has played, and a ``clear`` drops what has not
    played (its marks are returned at once, as Twilio does). Read on a thread of its own."""

    def __init__(self, ws: ClientConnection, call_sid: str) -> None:
        self.ws = ws
        self.call_sid = call_sid
        self.stream_sid = "MZ" + call_sid.removeprefix("CA")
        self.frames: list[Received] = []
        self.marks: list[tuple[float, str]] = []
        """(epoch seconds, name) of every mark received."""
        self.clears: list[tuple[float, str]] = []
        """(epoch seconds, the generation it stopped) of every ``clear``."""
        self.closed = False
        self.changed = threading.Condition()
        self._send_lock = threading.Lock()
        self._play_end = 0.0
        self._due: list[tuple[float, str]] = []
        self._unmarked: list[Received] = []
        self._sequence = 0
        self._timestamp = 0
        self._reader = threading.Thread(target=self._read, daemon=True)

    # ------------------------------------------------------------------ the caller

    def start(self, ticket: str) -> None:
        self._send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        self._send({"event": "start", "streamSid": self.stream_sid, "start": {
            "accountSid": "AC" + "0" * 32, "streamSid": self.stream_sid,
            "callSid": self.call_sid, "tracks": ["inbound"],
            "customParameters": {"ticket": ticket},
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": PHONE_RATE, "channels": 1},
        }})
        self._reader.start()

    def media(self, ulaw: bytes) -> None:
        self._timestamp += 20
        self._send({"event": "media", "streamSid": self.stream_sid, "media": {
            "track": "inbound", "chunk": str(self._sequence), "timestamp": str(self._timestamp),
            "payload": base64.b64encode(ulaw.ljust(FRAME_BYTES, b"\xff")).decode()}})

    def dtmf(self, digit: str) -> None:
        self._send({"event": "dtmf", "streamSid": self.stream_sid,
                    "dtmf": {"track": "inbound_track", "digit": digit}})

    def hang_up(self) -> None:
        with contextlib.suppress(Exception):  # the socket may be gone already
            self._send({"event": "stop", "streamSid": self.stream_sid,
                        "stop": {"accountSid": "AC" + "0" * 32, "callSid": self.call_sid}})
        self.closed = True
        self.ws.close()

    def _send(self, message: dict[str, Any]) -> None:
        with self._send_lock:
            self._sequence += 1
            self.ws.send(json.dumps({**message, "sequenceNumber": str(self._sequence)}))

    # ------------------------------------------------------------------ the phone's speaker

    def played_ms(self, since: float) -> float:
        """Audio received since ``since`` (epoch) that has played by now."""
        now = time.monotonic()
        with self.changed:
            return sum(len(f.ulaw) for f in self.frames if f.at >= since and f.played_at <= now) / 8

    def playing(self) -> bool:
        with self.changed:
            return bool(self._due) or self._play_end > time.monotonic()

    def last_media_at(self) -> float:
        with self.changed:
            return self.frames[-1].at if self.frames else 0.0

    def _read(self) -> None:
        while not self.closed:
            self._echo_due()
            with self.changed:
                wait = min([d for d, _ in self._due] + [time.monotonic() + 0.05])
            try:
                raw = self.ws.recv(timeout=max(0.0, wait - time.monotonic()))
            except TimeoutError:
                continue
            except (ConnectionClosed, OSError, RuntimeError):
                break
            self._keep(json.loads(raw))
        with self.changed:
            self.closed = True
            self.changed.notify_all()

    def _keep(self, message: dict[str, Any]) -> None:
        event, now, at = message.get("event"), time.monotonic(), time.time()
        returned: list[str] = []
        with self.changed:
            if event == "media":
                ulaw = base64.b64decode(message["media"]["payload"])
                self._play_end = max(self._play_end, now) + len(ulaw) / PHONE_RATE
                frame = Received(at=at, played_at=self._play_end, ulaw=ulaw)
                self.frames.append(frame)
                self._unmarked.append(frame)
            elif event == "mark":
                name = str(message["mark"]["name"])
                self.marks.append((at, name))
                for frame in self._unmarked:
                    frame.generation = name.split("@")[0]
                self._unmarked = []
                self._due.append((max(self._play_end, now), name))
            elif event == "clear":
                stopped = self.marks[-1][1].split("@")[0] if self.marks else ""
                self.clears.append((at, stopped))
                self._play_end = now  # what had not played is dropped
                returned = [name for _, name in self._due]
                self._due = []
            self.changed.notify_all()
        for name in returned:  # Twilio returns the dropped marks (they were not played)
            self._echo(name)

    def _echo_due(self) -> None:
        now = time.monotonic()
        with self.changed:
            due = [name for when, name in self._due if when <= now]
            self._due = [(w, n) for w, n in self._due if w > now]
        for name in due:
            self._echo(name)

    def _echo(self, name: str) -> None:
        with contextlib.suppress(Exception):  # the call may be over
            self._send({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": name}})


def open_stream(url: str, timeout_s: float = 10.0) -> ClientConnection:
    """The media stream's socket, closed by :meth:`Carrier.hang_up` (entered as websockets
    wants a connection used outside a ``with``)."""
    return connect(url, open_timeout=timeout_s, max_size=2**22).__enter__()


def answer_call(base: str, public_url: str, token: str, phone: str,
                call_sid: str) -> tuple[str, str]:
    """POST the signed Voice webhook; the (stream URL, ticket) of its TwiML."""
    params = {"CallSid": call_sid, "AccountSid": "AC" + "0" * 32, "From": phone,
              "To": "+10000000000", "CallStatus": "ringing", "Direction": "inbound"}
    signature = twilio_signature(token, public_url.rstrip("/") + VOICE_PATH, params)
    response = httpx.post(base + VOICE_PATH, content=urlencode(params), timeout=10.0, headers={
        "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature})
    response.raise_for_status()
    stream = ET.fromstring(response.text).find("./Connect/Stream")
    ticket = stream.find("./Parameter[@name='ticket']") if stream is not None else None
    if stream is None or ticket is None:
        raise ConnectionError(f"the call was not connected: {response.text}")
    return stream.attrib["url"], ticket.attrib["value"]


class PhoneCaller:
    """One scenario's caller on the phone: the same turns as
    :class:`~vocero.evals.client.Caller`, the answers read from the records."""

    def __init__(self, server: Records, *, public_url: str, auth_token: str, phone: str,
                 timeout_s: float, voice: Voice | None) -> None:
        self.server, self.public_url, self.auth_token = server, public_url, auth_token
        self.phone, self.timeout_s, self.voice = phone, timeout_s, voice
        self.call_sid = "CA" + uuid.uuid4().hex
        self.session_id = ""
        self.carrier: Carrier | None = None
        self.turn = TurnResult(index=0)
        self._last_state = ""
        self._history_seen = 0
        self._settling: tuple[int, float] | None = None
        """(history length, since when) while the record says the answer is over."""
        self._revisions: set[tuple[str, int]] = set()
        self._words: deque[bytes] = deque()
        self._line_lock = threading.Lock()

    def open(self) -> TurnResult:
        url, ticket = answer_call(self.server.base, self.public_url, self.auth_token,
                                  self.phone, self.call_sid)
        self.carrier = Carrier(open_stream(url, self.timeout_s), self.call_sid)
        self.carrier.start(ticket)
        threading.Thread(target=self._line, daemon=True).start()
        deadline = time.monotonic() + self.timeout_s
        while not self.session_id:
            listed = self.server.get("/v1/sessions")
            mine = [s for s in listed if s.get("call_sid") == self.call_sid]
            if mine:
                self.session_id = str(mine[0]["session_id"])
            elif self.carrier.closed or time.monotonic() > deadline:
                raise ConnectionError("the call's session never appeared in GET /v1/sessions")
            else:
                time.sleep(POLL_S)  # polling the operator API for the call's session
        return self.turn

    def close(self) -> None:
        if self.carrier is not None and not self.carrier.closed:
            self.carrier.hang_up()

    def _state(self) -> str:
        return self._last_state

    # ----------------------------------------------------------------- turns

    def say(self, turn: TurnResult, *, text: str | None, confirm: str | None,
            barge_in_after_ms: int | None, then: str | None, pause: tuple[int, int],
            noise_db: float | None) -> TurnResult:
        """Play one caller turn (words, or a key for a confirm/reject button) and wait until
        the answer has played and the record holds it."""
        carrier = self.carrier
        assert carrier is not None
        self.turn = turn
        turn.sent_at = time.time()
        if confirm is not None:
            turn.action = confirm
            if not self._revisions:  # the phone ignores a key with no question: no answer comes
                turn.errors.append({"code": "no_confirmation_asked",
                                    "detail": "no read-back was asked on this call: key "
                                              f"{KEYS[confirm]} not pressed"})
                turn.ended_at = time.time()
                return turn
            carrier.dtmf(KEYS[confirm])
        elif self.voice is not None and text is not None:
            turn.caller_audio = self.voice.speak(text, pause_after_words=pause[0],
                                                 pause_ms=pause[1], noise_db=noise_db)
            turn.spoken_until = time.time() + len(turn.caller_audio) / (2 * SAMPLE_RATE)
            self._stream(turn.caller_audio)
        barged = barge_in_after_ms is None
        barge_ended = 0.0
        deadline = time.monotonic() + self.timeout_s
        while True:
            if not barged and carrier.played_ms(turn.sent_at) >= (barge_in_after_ms or 0):
                barge_ended = self._barge(turn, then or "")
                barged = True
            if self._answered(turn, barged) or carrier.closed:
                break
            if time.monotonic() > deadline:
                turn.timed_out = True
                break
            time.sleep(POLL_S)  # the record is polled: the phone carries no events
        turn.ended_at = time.time()
        self._read_media(turn, barge_ended)
        self._read_confirmations(turn)
        return turn

    def _answered(self, turn: TurnResult, barged: bool) -> bool:
        carrier = self.carrier
        assert carrier is not None
        now = time.time()
        if now < turn.spoken_until or carrier.playing() or (
                now - carrier.last_media_at() < QUIET_S):
            return False
        record = self.server.get_json(f"/v1/sessions/{self.session_id}")
        self._last_state = str(record.get("state", ""))
        history = record.get("history") or []
        new = history[self._history_seen:]
        said = [h for h in new if h.get("role") == "assistant"]
        if barged and turn.barged_generation:
            said_after = [h for h in said if h.get("generation_id") != turn.barged_generation]
        else:
            said_after = said
        if not said_after or self._last_state not in IDLE:
            self._settling = None
            return False
        if self._settling is None or self._settling[0] != len(history):
            self._settling = (len(history), time.monotonic())
            return False
        if time.monotonic() - self._settling[1] < SETTLE_S:
            return False
        self._settling = None
        self._history_seen = len(history)
        turn.generations = [str(h.get("generation_id", "")) for h in said]
        turn.heard = [str(h.get("text") or "") for h in said]
        turn.statuses = [str(h.get("status", "")) for h in said]
        turn.transcripts = [str(h.get("text") or "") for h in new if h.get("role") == "user"]
        return True

    def _barge(self, turn: TurnResult, then: str) -> float:
        """Speak over the agent: the server's VAD hears it (the phone has no speech event).
        Returns when the caller's words over the agent end (epoch seconds)."""
        carrier = self.carrier
        assert carrier is not None
        turn.barged_at = time.time()
        turn.barged_heard_ms = carrier.played_ms(turn.sent_at)
        with carrier.changed:
            turn.barged_generation = (carrier.marks[-1][1].split("@")[0] if carrier.marks
                                      else "")
        turn.then = then
        audio = self.voice.speak(then) if self.voice is not None else b""
        turn.caller_audio += audio
        self._stream(audio)
        return turn.barged_at + len(audio) / (2 * SAMPLE_RATE)

    def _read_media(self, turn: TurnResult, barge_ended: float) -> None:
        """The turn's audio, its first frame and its ``clear``: what the WebSocket's events
        would have said, as the carrier received it."""
        carrier = self.carrier
        assert carrier is not None
        with carrier.changed:
            frames = [f for f in carrier.frames if turn.sent_at <= f.at <= turn.ended_at]
            clears = [c for c in carrier.clears if turn.sent_at <= c[0] <= turn.ended_at]
            marks = [m for m in carrier.marks if turn.sent_at <= m[0] <= turn.ended_at]
        if frames:
            turn.first_audio_at = frames[0].at
            origin = turn.spoken_until if frames[0].at >= turn.spoken_until else turn.sent_at
            turn.ttfa_ms = (frames[0].at - origin) * 1000
            turn.agent_audio = bytearray(ulaw_to_pcm16(b"".join(f.ulaw for f in frames)))
        turn.agent_rate = PHONE_RATE
        for at, generation in clears:
            turn.stops.append({"generation_id": generation, "reason": "clear"})
            turn.stopped_at.setdefault(generation, at)
            if turn.barged_at is not None and turn.barge_in_stop_ms is None:
                turn.barge_in_stop_ms = (at - turn.barged_at) * 1000
            # Stale audio: frames of the stopped generation after its clear (by the mark that
            # follows them), or any frame while the caller was still speaking over the agent
            # (no answer to it can have begun before its words ended).
            turn.after_stop += ["media" for f in frames if f.at > at and (
                f.generation == generation or f.at <= barge_ended)]
            turn.after_stop += ["mark" for m_at, name in marks
                                if m_at > at and name.split("@")[0] == generation]

    def _read_confirmations(self, turn: TurnResult) -> None:
        """The read-backs this turn asked to confirm: revisions ``GET /v1/proposals`` had not
        listed before it and says were ``asked`` (a tool that needs no confirmation has a
        proposal too, never read back)."""
        for proposal in self.server.get("/v1/proposals", session_id=self.session_id):
            for revision in proposal.get("revisions") or []:
                key = (str(proposal.get("proposal_id")), int(revision.get("revision", 0)))
                if key in self._revisions or not revision.get("asked", True):
                    continue
                self._revisions.add(key)
                turn.confirmations.append({
                    "proposal_id": key[0], "revision": key[1], "tool": proposal.get("tool"),
                    "summary": revision.get("summary"), "expires_at": revision.get("expires_at"),
                })

    def _stream(self, pcm: bytes) -> None:
        """The caller's words as 20 ms μ-law frames on the line (a newer line replaces what is
        left of an older one: speech over the agent takes the microphone)."""
        ulaw = to_ulaw(pcm)
        with self._line_lock:
            self._words = deque(ulaw[i:i + FRAME_BYTES] for i in range(0, len(ulaw), FRAME_BYTES))

    def _line(self) -> None:
        """The call's uplink, as a phone streams it for the whole call: a 20 ms frame every 20 ms,
        the caller's words when there are some, silence otherwise (the server's VAD ends an
        utterance on the silence it hears, so the line never goes quiet between turns)."""
        carrier = self.carrier
        assert carrier is not None
        start, index = time.monotonic(), 0
        while not carrier.closed:
            delay = start + index * 0.02 - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # real-time pacing of the line
            index += 1
            with self._line_lock:
                frame = self._words.popleft() if self._words else SILENCE
            try:
                carrier.media(frame)
            except Exception:
                return


def caller_phones(identities: dict[str, Any]) -> dict[str, str]:
    """Each caller token's ``phone`` (SPEC §4), from the identities file's data."""
    return {str(c["token"]): str(c["phone"]) for c in identities.get("callers") or []
            if isinstance(c, dict) and "token" in c and c.get("phone")}

