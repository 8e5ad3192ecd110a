"""One scenario's caller: a WebSocket session (docs/protocol.md) driven turn by turn."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from websockets.sync.client import ClientConnection, connect

from vocero.evals.audio import FRAME_BYTES, SAMPLE_RATE, Voice

REPORTS_PER_S = 40
"""Playout reports sent in any second: with 50 audio frames a second in audio mode this stays
under the relay's 100 client frames a second (docs/protocol.md "Envelope rules")."""
IDLE = {"LISTENING", "AWAITING_CONFIRMATION", "FAILED", "DEGRADED"}
TRAILING_SILENCE_MS = 6000
"""Audio mode: silence streamed after the caller's words until the agent answers (at most)."""
PLAYOUT_TICK_S = 1 / REPORTS_PER_S
"""While the speaker plays in real time, how often it moves on and reports."""


@dataclass
class Speaker:
    """The caller's loudspeaker for one generation, played in real time: from its first frame
    at the speed of speech, stalling when nothing more has arrived, and silent from a flush on.
    ``played_ms`` is what a person beside it has heard."""

    received_ms: float = 0.0
    played_ms: float = 0.0
    clock: float | None = None
    """When ``played_ms`` was last moved on (monotonic seconds); None before the first frame."""
    flushed: bool = False

    def receive(self, ms: float, now: float) -> None:
        if self.flushed:
            return
        self.advance(now)
        if self.clock is None:
            self.clock = now
        self.received_ms += ms

    def advance(self, now: float) -> None:
        if self.clock is None or self.flushed:
            return
        self.played_ms = min(self.received_ms, self.played_ms + (now - self.clock) * 1000)
        self.clock = now

    def flush(self, now: float) -> None:
        self.advance(now)
        self.flushed = True

    @property
    def playing(self) -> bool:
        return not self.flushed and self.played_ms < self.received_ms


@dataclass
class TurnResult:
    index: int
    say: str = ""
    then: str = ""
    action: str = "say"
    skipped: bool = False
    sent_at: float = 0.0
    spoken_until: float = 0.0
    """Audio mode: when the caller's streamed words end (time to first audio counts from it)."""
    ended_at: float = 0.0
    frames: list[dict[str, Any]] = field(default_factory=list)
    generations: list[str] = field(default_factory=list)
    heard: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    text: str = ""
    transcripts: list[str] = field(default_factory=list)
    ttfa_ms: float | None = None
    confirmations: list[dict[str, Any]] = field(default_factory=list)
    tool_statuses: list[dict[str, Any]] = field(default_factory=list)
    stops: list[dict[str, Any]] = field(default_factory=list)
    stopped_at: dict[str, float] = field(default_factory=dict)
    """When each stopped generation's ``output.stop_and_flush.v1`` arrived (epoch seconds): the
    server is local, so its units' ``admitted_at`` are on the same clock."""
    after_stop: list[str] = field(default_factory=list)
    first_audio_at: float | None = None
    barged_at: float | None = None
    barged_heard_ms: float | None = None
    """The agent's audio the caller had heard when it spoke over it (``barge_in_after_ms``)."""
    barge_in_stop_ms: float | None = None
    barged_generation: str = ""
    errors: list[dict[str, Any]] = field(default_factory=list)
    timed_out: bool = False
    agent_audio: bytearray = field(default_factory=bytearray)
    agent_rate: int = 0
    caller_audio: bytes = b""
    units: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)

    @property
    def heard_text(self) -> str:
        return " / ".join(part for part in self.heard if part)


class Caller:
    """A WebSocket client of one session; every received frame is kept on its turn."""

    def __init__(self, url: str, token: str, *, locale: str | None, timeout_s: float,
                 mode: str = "text", voice: Voice | None = None) -> None:
        self.url, self.token, self.locale = url, token, locale
        self.timeout_s, self.mode, self.voice = timeout_s, mode, voice
        self.sequence = 0
        self.session_id = ""
        self.output_rate = 24_000
        self.lock = threading.Lock()
        self.ws: ClientConnection | None = None
        self.pending_confirmation: dict[str, Any] | None = None
        self._reported: list[float] = []
        self._deferred: dict[str, Any] | None = None
        self._speakers: dict[str, Speaker] = {}
        self._realtime = False
        """This turn's speaker plays in real time (a turn that speaks over the agent); otherwise
        audio counts as played when it arrives, so a suite is not slowed to speaking pace."""
        self.turn = TurnResult(index=0)
        self.closed = False
        self._last_state = "LISTENING"
        self._stream_id = 0

    # ------------------------------------------------------------------ wire

    def send(self, name: str, payload: dict[str, Any] | None = None) -> None:
        assert self.ws is not None
        with self.lock:
            self.sequence += 1
            self.ws.send(json.dumps({
                "specversion": "1.0", "type": f"vocero.{name}", "id": f"evt_{uuid.uuid4().hex}",
                "time": datetime.now(UTC).isoformat(), "source": "web-client",
                "data": {"session_id": self.session_id, "sequence": self.sequence,
                         "payload": payload or {}},
            }))

    def open(self) -> TurnResult:
        """Connect, authenticate and apply the locale; the frames go on turn 0."""
        self.ws = connect(self.url, open_timeout=self.timeout_s, max_size=2**22)
        self.send("session.connect.v1", {"token": self.token})
        applied = self._until(lambda f: f["type"] == "session.configuration_applied.v1")
        if applied is None:
            raise ConnectionError(f"no session.configuration_applied.v1: {self.turn.errors}")
        self._configured(applied["payload"])
        self.send("session.update_requested.v1", {
            "client_capabilities": {"audio_codecs": ["pcm16"], "supports_playout_ack": True},
            "preferences": {
                **({"locale": self.locale} if self.locale else {}),
                "turn_mode": "server_vad",
            },
        })
        again = self._until(lambda f: f["type"] == "session.configuration_applied.v1")
        if again is not None:
            self._configured(again["payload"])
        return self.turn

    def _configured(self, payload: dict[str, Any]) -> None:
        self.session_id = payload.get("session_id", self.session_id)
        self.output_rate = int(payload.get("effective", {}).get("output_sample_rate")
                               or self.output_rate)

    def close(self) -> None:
        if self.ws is not None and not self.closed:
            with contextlib.suppress(Exception):  # closing a dead socket is no failure
                self.send("session.close.v1")
            self.ws.close()
            self.closed = True

    # ----------------------------------------------------------------- turns

    def say(self, turn: TurnResult, *, text: str | None, confirm: str | None,
            barge_in_after_ms: int | None, then: str | None, pause: tuple[int, int],
            noise_db: float | None) -> TurnResult:
        """Play one caller turn and receive until its answer is done."""
        self.turn = turn
        turn.sent_at = time.time()
        self._realtime = barge_in_after_ms is not None
        stop_audio = threading.Event()
        if confirm is not None:
            pending = self.pending_confirmation or {}
            turn.action = confirm
            self.send("tool.confirmation_submitted.v1", {
                "proposal_id": pending.get("proposal_id", ""),
                "revision": pending.get("revision", 1), "decision": confirm})
        elif self.mode == "audio" and self.voice is not None and text is not None:
            turn.caller_audio = self.voice.speak(text, pause_after_words=pause[0],
                                                 pause_ms=pause[1], noise_db=noise_db)
            # Time to first audio counts from the end of the caller's words, as in text mode it
            # counts from the typed line: the audio is streamed in real time from now.
            turn.spoken_until = time.time() + len(turn.caller_audio) / (2 * SAMPLE_RATE)
            self._stream(turn.caller_audio, stop_audio)
        else:
            self.send("input.text.v1", {"text": text or ""})
        state = {"barged": barge_in_after_ms is None, "need_new": False}

        def barge_when_due() -> None:
            if not state["barged"] and self._agent_ms() >= (barge_in_after_ms or 0):
                self._barge(turn, then or "", stop_audio)
                state["barged"], state["need_new"] = True, True

        def done(frame: dict[str, Any]) -> bool:
            if frame["type"] == "response.created.v1":
                state["need_new"] = False
            barge_when_due()
            created = set(turn.generations)
            finished = {f["payload"].get("generation_id") for f in turn.frames
                        if f["type"] == "response.completed.v1"}
            return bool(created) and created <= finished and not state["need_new"] and (
                self._state() in IDLE)

        self._until(done, on_tick=barge_when_due)
        stop_audio.set()
        turn.ended_at = time.time()
        return turn

    def _barge(self, turn: TurnResult, then: str, stop_audio: threading.Event) -> None:
        turn.barged_at = time.time()
        turn.barged_heard_ms = self._agent_ms()
        turn.barged_generation = turn.generations[-1] if turn.generations else ""
        self.send("input.speech_started.v1")
        turn.then = then
        if self.mode == "audio" and self.voice is not None:
            audio = self.voice.speak(then)
            turn.caller_audio += audio
            self._stream(audio, stop_audio)
        else:
            self.send("input.text.v1", {"text": then})

    def _stream(self, pcm: bytes, stop: threading.Event) -> None:
        """Stream ``pcm`` in 20 ms frames in real time, then silence until ``stop``."""
        silence = b"\x00" * FRAME_BYTES
        frames = [pcm[i:i + FRAME_BYTES] for i in range(0, len(pcm), FRAME_BYTES)]
        frames += [silence] * (TRAILING_SILENCE_MS // 20)

        self._stream_id += 1
        mine = self._stream_id

        def run() -> None:
            start = time.monotonic()
            for index, frame in enumerate(frames):
                if mine != self._stream_id:
                    return  # a newer stream (speech over the agent) took the microphone
                if index >= len(frames) - TRAILING_SILENCE_MS // 20 and stop.is_set():
                    return
                delay = start + index * 0.02 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)  # real-time pacing of the caller's audio
                try:
                    self.send("audio.input.delta.v1", {
                        "audio": base64.b64encode(frame.ljust(FRAME_BYTES, b"\x00")).decode(),
                        "sample_rate": SAMPLE_RATE})
                except Exception:
                    return

        threading.Thread(target=run, daemon=True).start()

    # -------------------------------------------------------------- receiving

    def _state(self) -> str:
        return self._last_state

    def _agent_ms(self) -> float:
        """The agent's audio of this turn the caller has heard (received, when not real time)."""
        speakers = [self._speakers[g] for g in self.turn.generations if g in self._speakers]
        return sum(s.played_ms if self._realtime else s.received_ms for s in speakers)

    def _until(self, done: Callable[[dict[str, Any]], bool],
               on_tick: Callable[[], None] | None = None) -> dict[str, Any] | None:
        """Receive (acknowledging playout) until ``done(frame)``; None at the turn's timeout.
        While a real-time speaker plays, every :data:`PLAYOUT_TICK_S` it moves on, reports
        and ``on_tick`` runs, frame or not."""
        assert self.ws is not None
        deadline = time.monotonic() + self.timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.turn.timed_out = True
                return None
            wait = remaining
            if self._realtime and self._play(time.monotonic()):
                wait = min(wait, PLAYOUT_TICK_S)
                if on_tick is not None:
                    on_tick()
            if self._deferred is not None:
                report, self._deferred = self._deferred, None
                self._report(report)
                if self._deferred is not None:
                    wait = max(0.0, min(wait, self._reported[0] + 1.0 - time.monotonic()))
            try:
                raw = self.ws.recv(timeout=wait)
            except TimeoutError:
                continue
            frame = self._keep(json.loads(raw))
            if done(frame):
                return frame

    def _play(self, now: float) -> bool:
        """Move the real-time speakers on and report the ones still playing; whether any is."""
        playing = False
        for generation, speaker in self._speakers.items():
            if speaker.playing:
                speaker.advance(now)
                self._report_playout(generation, speaker)
                playing = True
        return playing

    def _report_playout(self, generation: str, speaker: Speaker) -> None:
        played = speaker.played_ms if self._realtime else speaker.received_ms
        self._report({"generation_id": generation, "played_ms": int(played),
                      "buffered_ms": int(speaker.received_ms - played)})

    @staticmethod
    def _ttfa_origin(turn: TurnResult, at: float) -> float:
        """When the turn's wait for the agent began: the typed line's sending; for a spoken line
        the end of its words, or, when a pause in them ended the turn before they were all
        streamed, the arrival of the turn's final transcript."""
        if not turn.spoken_until or at >= turn.spoken_until:
            return turn.spoken_until or turn.sent_at
        finals = [f["at"] for f in turn.frames if f["type"] == "transcript.final.v1"]
        return finals[-1] if finals else turn.sent_at

    def _keep(self, envelope: dict[str, Any]) -> dict[str, Any]:
        kind = str(envelope.get("type", "")).removeprefix("vocero.")
        payload = dict(envelope.get("data", {}).get("payload", {}))
        turn = self.turn
        at = time.time()
        if kind == "response.audio_delta.v1":
            pcm = base64.b64decode(payload.pop("audio", ""))
            generation = str(payload.get("generation_id", ""))
            rate = int(payload.get("sample_rate") or self.output_rate)
            turn.agent_rate = turn.agent_rate or rate
            turn.agent_audio += pcm
            if turn.first_audio_at is None:
                turn.first_audio_at = at
            if turn.ttfa_ms is None and turn.sent_at:
                turn.ttfa_ms = (at - self._ttfa_origin(turn, at)) * 1000
            speaker = self._speakers.setdefault(generation, Speaker())
            speaker.receive(len(pcm) / 2 / rate * 1000, time.monotonic())
            self._report_playout(generation, speaker)
        frame = {"type": kind, "at": at, "payload": payload}
        turn.frames.append(frame)
        generation = str(payload.get("generation_id", ""))
        if kind in ("response.audio_delta.v1", "response.text_delta.v1") and any(
                stop.get("generation_id") == generation for stop in turn.stops):
            turn.after_stop.append(kind)
        if kind == "response.created.v1":
            turn.generations.append(str(generation))
        elif kind == "response.text_delta.v1":
            turn.text += str(payload.get("text", ""))
        elif kind == "response.completed.v1":
            turn.heard.append(str(payload.get("heard_text", "")))
            turn.statuses.append(str(payload.get("status", "")))
        elif kind == "transcript.final.v1":
            turn.transcripts.append(str(payload.get("text", "")))
        elif kind == "tool.confirmation_required.v1":
            turn.confirmations.append(payload)
            self.pending_confirmation = payload
        elif kind == "tool.status.v1":
            turn.tool_statuses.append(payload)
        elif kind == "output.stop_and_flush.v1":
            turn.stops.append(payload)
            turn.stopped_at.setdefault(generation, at)
            self._speakers.setdefault(generation, Speaker()).flush(time.monotonic())
            if turn.barged_at is not None and turn.barge_in_stop_ms is None:
                turn.barge_in_stop_ms = (at - turn.barged_at) * 1000
        elif kind == "session.state.v1":
            self._last_state = str(payload.get("state", ""))
        elif kind == "error.v1":
            turn.errors.append(payload)
        return frame

    def _report(self, report: dict[str, Any]) -> None:
        """Acknowledge playout within :data:`REPORTS_PER_S` (the newest report past it waits)."""
        now = time.monotonic()
        self._reported = [t for t in self._reported if now - t < 1.0]
        if len(self._reported) >= REPORTS_PER_S:
            self._deferred = report
            return
        self._reported.append(now)
        if self._deferred is not None and self._deferred["generation_id"] == report[
                "generation_id"]:
            self._deferred = None
        self.send("output.playout_progress.v1", report)
