"""A caller's browser over a real WebSocket, as the protocol sees it (SPEC §2): it plays the
audio it receives in real time and reports ``played_ms`` as it plays, and it keeps, with the
time each happened on its side, every frame it received and every report it sent, so a test can
check the server's guarantees from where the caller sits (``vocero bench network``,
``tests/realtime/test_impaired_network.py``).

The player model is a browser worklet's: playback of a generation starts when its first audio
arrives, advances at real time while audio is buffered, starves (waits) when none is, and a
``output.stop_and_flush.v1`` drops what is buffered. A report goes every ``REPORT_S`` while a
generation plays (and one more when it stops), so at most 20 a second.
"""

from __future__ import annotations

import base64
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

REPORT_S = 0.05
TICK_S = 0.01


def envelope(name: str, payload: dict[str, Any], *, sequence: int, session_id: str = "") -> str:
    """One client frame (SPEC §2)."""
    return json.dumps({
        "specversion": "1.0", "type": f"vocero.{name}", "id": f"evt_{sequence}",
        "time": "2026-12-07T00:00:00Z", "source": "web-client",
        "data": {"session_id": session_id, "sequence": sequence, "payload": payload},
    })


@dataclass(slots=True)
class Played:
    """What the caller's side knows of one generation."""

    units: list[str] = field(default_factory=list)
    text: dict[str, str] = field(default_factory=dict)
    audio_ms: dict[str, float] = field(default_factory=dict)
    received_ms: float = 0.0
    played_ms: float = 0.0
    arrivals: list[tuple[float, float]] = field(default_factory=list)
    """(arrival time, audio received so far in ms) at each audio delta."""
    reports: list[tuple[float, int]] = field(default_factory=list)
    """(time sent, played_ms) of each report."""
    flushed: bool = False

    def reported_by(self, moment: float) -> int:
        """The most this client had reported played by ``moment`` (0: nothing yet)."""
        return max((ms for at, ms in self.reports if at <= moment), default=0)

    def spoken(self) -> str:
        return "".join(self.text[u] for u in self.units)

    def playable_text(self, played_ms: float, ms_per_char: float = 0.0) -> str:
        """The text whose audio had begun playing by ``played_ms``, a unit's characters spread
        evenly over its audio: the audio received of it, or, with ``ms_per_char`` (the sim
        voice's rate), its whole length even where it has not all arrived (a cut or a stop)."""
        out, start = "", 0.0
        for unit in self.units:
            text = self.text[unit]
            ms = max(self.audio_ms.get(unit, 0.0), len(text) * ms_per_char)
            if ms <= 0 or played_ms <= start:
                break
            if played_ms >= start + ms:
                out += text
            else:
                return out + text[: math.ceil(len(text) * (played_ms - start) / ms)]
            start += ms
        return out


class Player:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.sequence = 0
        self.session_id = ""
        self.frames: list[tuple[float, dict[str, Any]]] = []
        self.generations: dict[str, Played] = {}
        self.playing = ""
        self.closed = False
        self.applied: dict[str, Any] = {}
        self.sent_at: dict[str, float] = {}
        """When this client last sent each kind of frame (``input.text.v1``, ...)."""
        self._lock = anyio.Lock()
        self._changed = anyio.Event()

    # ------------------------------------------------------------------------- sending

    async def send(self, name: str, payload: dict[str, Any] | None = None) -> None:
        async with self._lock:
            self.sequence += 1
            text = envelope(name, payload or {}, sequence=self.sequence,
                            session_id=self.session_id)
            self.sent_at[name] = time.monotonic()
            await self.ws.send(text)

    async def connect(self, token: str, resume_token: str = "") -> dict[str, Any]:
        mark = len(self.frames)
        await self.send("session.connect.v1",
                        {"token": token} | ({"resume_token": resume_token} if resume_token else {}))
        applied = await self.expect("session.configuration_applied.v1", after=mark)
        self.session_id = applied["session_id"]
        self.applied = applied
        await self.expect("session.state.v1", lambda p: p["state"] == "LISTENING", after=mark)
        mark = len(self.frames)  # a browser player says it reports playout
        await self.send("session.update_requested.v1",
                        {"client_capabilities": {"supports_playout_ack": True}})
        await self.expect("session.configuration_applied.v1", after=mark)
        return applied

    # ----------------------------------------------------------------------- receiving

    async def run(self) -> None:
        """Read frames and play audio until the connection ends (run it in a task group)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._play)
            try:
                async for message in self.ws:
                    self._on_frame(json.loads(message))
            except ConnectionClosed:
                pass
            self.closed = True
            self._wake()
            tg.cancel_scope.cancel()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def _on_frame(self, frame: dict[str, Any]) -> None:
        now = time.monotonic()
        self.frames.append((now, frame))
        kind, payload = frame["type"].removeprefix("vocero."), frame["data"]["payload"]
        if kind == "response.text_delta.v1":
            played = self.generations.setdefault(payload["generation_id"], Played())
            if payload["unit_id"] not in played.text:
                played.units.append(payload["unit_id"])
                played.text[payload["unit_id"]] = ""
            played.text[payload["unit_id"]] += payload["text"]
        elif kind == "response.audio_delta.v1":
            played = self.generations.setdefault(payload["generation_id"], Played())
            ms = len(base64.b64decode(payload["audio"])) / 2 / payload["sample_rate"] * 1000
            played.audio_ms[payload["unit_id"]] = played.audio_ms.get(payload["unit_id"], 0) + ms
            played.received_ms += ms
            played.arrivals.append((now, played.received_ms))
            if not played.flushed:
                self.playing = payload["generation_id"]
        elif kind == "output.stop_and_flush.v1":
            played = self.generations.setdefault(payload["generation_id"], Played())
            played.flushed = True
        self._wake()

    async def _play(self) -> None:
        last, last_report = time.monotonic(), 0.0
        while True:
            await anyio.sleep(TICK_S)  # the sound card's clock
            now = time.monotonic()
            played = self.generations.get(self.playing)
            if played is not None and not played.flushed:
                played.played_ms = min(played.received_ms, played.played_ms + (now - last) * 1000)
            last = now
            if played is None or now - last_report < REPORT_S:
                continue
            reported = played.reports[-1][1] if played.reports else -1
            if int(played.played_ms) != reported:
                last_report = now
                played.reports.append((now, int(played.played_ms)))
                try:
                    await self.send("output.playout_progress.v1", {
                        "generation_id": self.playing, "played_ms": int(played.played_ms),
                        "buffered_ms": int(played.received_ms - played.played_ms)})
                except ConnectionClosed:
                    return

    async def interrupt(self, generation_id: str) -> None:
        """The caller starts speaking: the client stops its own playback at once (a browser
        with client-side VAD ducks the agent), reports what it played and sends the hint."""
        played = self.generations[generation_id]
        played.flushed = True
        played.reports.append((time.monotonic(), int(played.played_ms)))
        await self.send("output.playout_progress.v1", {
            "generation_id": generation_id, "played_ms": int(played.played_ms),
            "buffered_ms": 0})
        await self.send("input.speech_started.v1")

    # ------------------------------------------------------------------------- waiting

    async def until(self, check: Callable[[], Any], timeout_s: float = 20.0) -> Any:
        with anyio.fail_after(timeout_s):
            while not (found := check()):
                if self.closed:
                    raise AssertionError("connection closed while waiting")
                await self._changed.wait()
            return found

    def payloads(self, name: str, after: int = 0) -> list[dict[str, Any]]:
        return [f["data"]["payload"] for _, f in self.frames[after:]
                if f["type"] == f"vocero.{name}"]

    async def expect(self, name: str, where: Callable[[dict[str, Any]], bool] = lambda p: True,
                     after: int = 0, timeout_s: float = 20.0) -> dict[str, Any]:
        """The first frame of this type received at index ``after`` or later (take
        ``len(player.frames)`` before sending what it answers) whose payload satisfies
        ``where``."""
        start = after

        def found() -> dict[str, Any] | None:
            return next((p for p in self.payloads(name, start) if where(p)), None)

        result: dict[str, Any] = await self.until(found, timeout_s)
        return result

    def arrived(self, name: str, where: Callable[[dict[str, Any]], bool]) -> float:
        """When the first frame of this type satisfying ``where`` arrived."""
        return next(at for at, f in self.frames
                    if f["type"] == f"vocero.{name}" and where(f["data"]["payload"]))
