"""Load-generator worker of ``vocero bench sessions``: one process, many protocol sessions.

The parent (:mod:`vocero.bench.sessions`) starts several of these so that the generator is not
the bottleneck. Each worker speaks the realtime protocol (docs/protocol.md) over the websockets
library's sans-I/O client protocol on a plain :class:`asyncio.Protocol` (no task per session, no
per-frame awaits):

* one ticker walks the worker's sessions in ten phase groups every 20 ms and writes each one's
  ``audio.input.delta.v1`` frame (20 ms of quiet room noise, below the VAD threshold, from a
  pre-encoded set) plus, every 50 ms while the agent speaks, an ``output.playout_progress.v1``
  report;
* received frames are parsed in ``data_received``; only ``type``, ``time`` and a few payload
  fields are decoded. Each ``response.audio_delta.v1`` goes into a real-time playout model (a
  browser worklet's jitter buffer): its lag (arrival minus the server's ``time`` stamp) is recorded
  and a frame that arrives after the buffer ran dry counts as late (the caller would hear a gap);
* ``response.completed.v1`` starts the next typed turn, so the agent keeps talking.

Parent and worker talk in JSON lines: argv carries the :class:`WorkerPlan`, stdout the
:class:`Ready` line and then the :class:`WorkerResult`, stdin the start time.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import resource
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from typing import cast

import msgspec
import numpy as np
from websockets.client import ClientProtocol
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

FRAME_S = 0.02
PHASES = 10
"""Sessions are spread over ten send phases per 20 ms so writes do not come in one burst."""
REPORT_S = 0.05
NOISE_FRAMES = 50
NOISE_RMS = 0.003
"""Caller audio level (full scale 1.0): a quiet room, well under the simulator VAD's 0.02."""
TEXTS = (b"where is my order", b"and my other order?")

AUDIO = "vocero.response.audio_delta.v1"
COMPLETED = "vocero.response.completed.v1"
APPLIED = "vocero.session.configuration_applied.v1"
ERROR = "vocero.error.v1"


# --------------------------------------------------------------------------- parent <-> worker


class WorkerPlan(msgspec.Struct, kw_only=True):
    host: str
    port: int
    sessions: int
    first_index: int
    """Index of this worker's first session among all N (spreads phases and start offsets)."""
    total: int
    warmup_s: float
    duration_s: float
    ramp_s: float = 1.0
    """First turns start spread over this long, like callers who do not all dial at once."""
    connect_concurrency: int = 16
    deflate: bool = True
    """Offer permessage-deflate, as browsers do; used only where the server accepts it."""


class Ready(msgspec.Struct, kw_only=True):
    connected: int
    failed: int
    deflate: int
    """Sessions on which the server accepted permessage-deflate."""


class Start(msgspec.Struct, kw_only=True):
    at: float
    """Wall-clock time (``time.time()``) at which every worker starts streaming."""


class WorkerResult(msgspec.Struct, kw_only=True):
    connected: int
    dropped: int
    sent: int
    received: int
    reports: int
    errors: dict[str, int]
    late_frames: int
    gap_ms: float
    lags_ms: list[float]
    send_slip_ms: list[float]
    cpu_s: float
    """This worker's CPU time (user + system) during the measured window."""


# ----------------------------------------------------------------------------------- wire helpers


def noise_payloads(count: int = NOISE_FRAMES, rms: float = NOISE_RMS) -> list[bytes]:
    """``audio.input.delta.v1`` payloads of 20 ms of room noise, all different (so that a
    compressing server cannot match one frame against the last)."""
    rng = np.random.default_rng(7)
    payloads = []
    for _ in range(count):
        pcm = (rng.standard_normal(320) * rms * 32768.0).astype("<i2").tobytes()
        payloads.append(b'{"audio":"%s","sample_rate":16000}' % base64.b64encode(pcm))
    return payloads


class _Effective(msgspec.Struct):
    output_sample_rate: int = 16000


class _Payload(msgspec.Struct):
    session_id: str = ""
    generation_id: str = ""
    audio: str = ""
    code: str = ""
    effective: _Effective | None = None


class _Data(msgspec.Struct):
    payload: _Payload


class _Frame(msgspec.Struct):
    """The few members of a server envelope the generator looks at; the rest is skipped."""

    type: str
    time: str
    data: _Data


_decode_frame = msgspec.json.Decoder(_Frame).decode
_minute_epoch: dict[str, float] = {}


def stamp_epoch(stamp: str) -> float:
    """``2026-01-01T12:34:56.789Z`` as a Unix time, parsing each minute prefix only once."""
    prefix = stamp[:17]
    base = _minute_epoch.get(prefix)
    if base is None:
        base = datetime.fromisoformat(prefix + "00").replace(tzinfo=UTC).timestamp()
        _minute_epoch[prefix] = base
    return base + float(stamp[17:].rstrip("Z"))


def envelope(name: bytes, payload: bytes, *, session_id: bytes, sequence: int) -> bytes:
    seq = str(sequence).encode()
    return b"".join(
        (
            b'{"specversion":"1.0","type":"vocero.',
            name,
            b'","id":"e',
            seq,
            b'","time":"2026-01-01T00:00:00Z","source":"web-client","data":{"session_id":"',
            session_id,
            b'","sequence":',
            seq,
            b',"payload":',
            payload,
            b"}}",
        )
    )


# ------------------------------------------------------------------------------------ measuring


class Window:
    """What all sessions of one worker count, and the window they count in."""

    def __init__(self) -> None:
        self.start = float("inf")
        self.end = float("inf")
        self.sent = 0
        self.received = 0
        self.reports = 0
        self.late = 0
        self.gap_s = 0.0
        self.dropped = 0
        self.errors: Counter[str] = Counter()
        self.lags_ms: list[float] = []

    def counts(self, now: float) -> bool:
        return self.start <= now < self.end


class Session(asyncio.Protocol):
    """One caller: a WebSocket on an asyncio transport, driven by the worker's ticker."""

    def __init__(self, plan: WorkerPlan, index: int, window: Window) -> None:
        self.plan, self.index, self.window = plan, index, window
        self.transport: asyncio.Transport | None = None
        extensions = [ClientPerMessageDeflateFactory()] if plan.deflate else None
        self.ws = ClientProtocol(
            parse_uri(f"ws://{plan.host}:{plan.port}/v1/realtime"), extensions=extensions
        )
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future[None] = loop.create_future()
        self.applied: asyncio.Future[None] = loop.create_future()
        self.closed = False
        self.sequence = 0
        self.session_id = b""
        self.sample_rate = 16000
        self.talking = False
        self.turn = 0
        self.generation = ""
        self.cursor = 0.0
        """Wall time at which the buffered agent audio runs out."""
        self.received_ms = 0.0
        self.next_report = 0.0

    # ---------------------------------------------------------------- transport events
    # The WebSocket protocol itself (handshake, framing, masking, compression, pings, close) is
    # the websockets library's sans-I/O ClientProtocol; this class only moves its bytes.

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.ws.send_request(self.ws.connect())
        self._flush()

    def data_received(self, data: bytes) -> None:
        self.ws.receive_data(data)
        for event in self.ws.events_received():
            if isinstance(event, Response):
                if self.ws.state is State.OPEN:
                    self.opened.set_result(None)
                else:
                    self.opened.set_exception(ConnectionError(f"HTTP {event.status_code}"))
            elif isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                self._on_text(bytes(event.data))
        self._flush()  # pongs, close replies

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost()

    def _lost(self) -> None:
        if not self.closed and self.applied.done():  # an admitted session the server ended
            self.window.dropped += 1
        self.closed = True
        for future in (self.opened, self.applied):
            if not future.done():
                future.set_exception(ConnectionError("closed"))
                future.exception()  # whoever awaits it still gets the error; nobody else logs it

    def _flush(self) -> None:
        for data in self.ws.data_to_send():
            if self.transport is None:
                return
            if data:
                self.transport.write(data)
            else:  # the protocol's signal that the TCP connection should be closed
                self._lost()
                self.transport.close()

    # ---------------------------------------------------------------------------- protocol

    def send(self, name: bytes, payload: bytes) -> None:
        if self.closed or self.ws.state is not State.OPEN:
            return
        self.sequence += 1
        self.ws.send_text(
            envelope(name, payload, session_id=self.session_id, sequence=self.sequence)
        )
        self._flush()

    def _on_text(self, text: bytes) -> None:
        frame = _decode_frame(text)
        kind = frame.type
        if kind == AUDIO:
            self._on_audio(frame)
        elif kind == COMPLETED:
            self.generation, self.talking = "", False
            self.turn += 1
            self.send(b"input.text.v1", b'{"text":"%s"}' % TEXTS[self.turn % len(TEXTS)])
        elif kind == APPLIED:
            payload = frame.data.payload
            self.session_id = payload.session_id.encode()
            if payload.effective is not None:
                self.sample_rate = payload.effective.output_sample_rate
            if not self.applied.done():
                self.applied.set_result(None)
        elif kind == ERROR:
            self.window.errors[frame.data.payload.code] += 1

    def _on_audio(self, frame: _Frame) -> None:
        now = time.time()
        window = self.window
        counted = window.counts(now)
        if counted:
            window.received += 1
            window.lags_ms.append(round((now - stamp_epoch(frame.time)) * 1000.0, 3))
        payload = frame.data.payload
        if payload.generation_id != self.generation:
            self.generation, self.talking = payload.generation_id, True
            self.cursor, self.received_ms, self.next_report = now, 0.0, now + REPORT_S
        audio = payload.audio
        size = len(audio) * 3 // 4 - audio.count("=", -2)
        duration_s = size / 2 / self.sample_rate
        if now > self.cursor:  # the caller's buffer ran dry: a gap they would hear
            if counted and self.received_ms:
                window.late += 1
                window.gap_s += now - self.cursor
            self.cursor = now
        self.cursor += duration_s
        self.received_ms += duration_s * 1000.0

    # ------------------------------------------------------------------------------ ticking

    def begin(self) -> None:
        self.send(
            b"session.update_requested.v1",
            b'{"client_capabilities":{"supports_playout_ack":true}}',
        )
        self.send(b"input.text.v1", b'{"text":"%s"}' % TEXTS[0])

    def tick(self, now: float, audio: bytes) -> None:
        """One 20 ms step: the caller's audio frame, and a playout report when one is due."""
        if self.closed:
            return
        self.send(b"audio.input.delta.v1", audio)
        counted = self.window.counts(now)
        if counted:
            self.window.sent += 1
        if self.talking and now >= self.next_report:
            self.next_report += REPORT_S
            buffered_ms = max(0.0, self.cursor - now) * 1000.0
            played = int(self.received_ms - buffered_ms)
            self.send(
                b"output.playout_progress.v1",
                b'{"generation_id":"%s","played_ms":%d,"buffered_ms":%d}'
                % (self.generation.encode(), played, int(buffered_ms)),
            )
            if counted:
                self.window.reports += 1

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.create_connection(lambda: self, self.plan.host, self.plan.port)
        await self.opened
        self.send(b"session.connect.v1", b'{"token":"demo-token"}')
        await self.applied


# -------------------------------------------------------------------------------------- worker


async def _connect_all(sessions: list[Session], concurrency: int) -> int:
    gate = asyncio.Semaphore(concurrency)

    async def one(session: Session) -> bool:
        async with gate:
            try:
                await asyncio.wait_for(session.open(), timeout=60)
            except (OSError, ConnectionError, TimeoutError):
                session.closed = True  # not admitted: never counted, never driven
                if session.transport is not None:
                    session.transport.abort()
                return False
            return True

    results = await asyncio.gather(*(one(s) for s in sessions))
    return sum(results)


async def _drive(
    sessions: list[Session], plan: WorkerPlan, start: float, window: Window
) -> list[float]:
    """Tick every session every 20 ms, in phase groups; returns the ticker's lateness (ms)."""
    audio = noise_payloads()
    groups: list[list[Session]] = [[] for _ in range(PHASES)]
    begins: list[tuple[float, Session]] = []
    for session in sessions:
        groups[session.index % PHASES].append(session)
        begins.append((start + plan.ramp_s * session.index / max(1, plan.total), session))
    begins.sort(key=lambda pair: pair[0], reverse=True)
    slot_s = FRAME_S / PHASES
    slips: list[float] = []
    slot = 0
    while True:
        due = start + slot * slot_s
        if due >= window.end:
            return slips
        now = time.time()
        if now < due:
            await asyncio.sleep(due - now)
            now = time.time()
        if window.counts(now):
            slips.append(round((now - due) * 1000.0, 3))
        while begins and begins[-1][0] <= now:
            begins.pop()[1].begin()
        for session in groups[slot % PHASES]:
            session.tick(now, audio[slot // PHASES % len(audio)])
        slot += 1


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _emit(message: msgspec.Struct) -> None:
    sys.stdout.buffer.write(msgspec.json.encode(message) + b"\n")
    sys.stdout.buffer.flush()


async def run_worker(plan: WorkerPlan) -> None:
    window = Window()
    sessions = [Session(plan, plan.first_index + i, window) for i in range(plan.sessions)]
    connected = await _connect_all(sessions, plan.connect_concurrency)
    live = [s for s in sessions if not s.closed and s.applied.done()]
    deflate = sum(1 for s in live if s.ws.extensions)
    _emit(Ready(connected=connected, failed=plan.sessions - connected, deflate=deflate))
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.buffer.readline)
    start = msgspec.json.decode(line, type=Start).at
    window.start = start + plan.warmup_s
    window.end = window.start + plan.duration_s
    ticker = asyncio.ensure_future(_drive(live, plan, start, window))
    await asyncio.sleep(max(0.0, window.start - time.time()))
    cpu_before = _cpu_s()
    slips = await ticker
    await asyncio.sleep(max(0.0, window.end - time.time()))
    cpu = _cpu_s() - cpu_before
    for session in live:
        session.closed = True
        if session.transport is not None:
            session.transport.abort()
    _emit(
        WorkerResult(
            connected=connected,
            dropped=window.dropped,
            sent=window.sent,
            received=window.received,
            reports=window.reports,
            errors=dict(window.errors),
            late_frames=window.late,
            gap_ms=round(window.gap_s * 1000.0, 1),
            lags_ms=window.lags_ms,
            send_slip_ms=slips,
            cpu_s=round(cpu, 3),
        )
    )


def main(argv: list[str]) -> int:
    plan = msgspec.json.decode(argv[0], type=WorkerPlan)
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        asyncio.run(run_worker(plan))
    else:
        with contextlib.suppress(KeyboardInterrupt):
            uvloop.run(run_worker(plan))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
