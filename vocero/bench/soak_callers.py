"""The soak's simulated callers (``vocero bench soak``, vocero/bench/soak.py): ``N`` seats, each
kept busy by one caller after another; a caller opens a WebSocket session, runs a few random
steps (a lookup, a confirmed write, a barge-in, a follow-up, a dropped-and-resumed socket, bad
input) and ends, and what they did is counted in a :class:`Tally`.
"""

from __future__ import annotations

import contextlib
import json
import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

TOKEN = "demo-token"
"""A fixture caller allowed to read, write and ask for call-backs (fixtures/identities.yaml)."""
TURN_TIMEOUT_S = 20.0
IDLE = {"LISTENING", "AWAITING_CONFIRMATION", "FAILED", "DEGRADED"}
OVERSIZED_BYTES = 80 * 1024
"""Over the relay's 64 KiB frame limit, under the WebSocket server's 1 MiB message limit."""
STEPS = ("lookup", "write", "barge_in", "followup", "resume", "bad_input")
WEIGHTS = (30, 15, 15, 10, 15, 15)


@dataclass
class Tally:
    """What the callers did, counted over the run."""

    steps: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    sessions_started: int = 0
    sessions_ended: int = 0
    connect_failures: int = 0


class Caller:
    """One caller's WebSocket session, frames read as they come."""

    def __init__(self, url: str, tally: Tally, rng: random.Random) -> None:
        self.url, self.tally, self.rng = url, tally, rng
        self.ws: ClientConnection | None = None
        self.session_id = ""
        self.resume_token = ""
        self.sequence = 0
        self.state = "LISTENING"
        self.pending: dict[str, Any] | None = None
        self.received_ms: dict[str, float] = {}
        self.rate = 16000

    async def send(self, name: str, payload: dict[str, Any] | None = None) -> None:
        assert self.ws is not None
        self.sequence += 1
        await self.ws.send(json.dumps({
            "specversion": "1.0", "type": f"vocero.{name}", "id": f"evt_{uuid.uuid4().hex}",
            "time": datetime.now(UTC).isoformat(), "source": "web-client",
            "data": {"session_id": self.session_id, "sequence": self.sequence,
                     "payload": payload or {}},
        }))

    async def open(self, resume: str = "") -> None:
        self.ws = await connect(self.url, open_timeout=15, max_size=2**22, close_timeout=2)
        self.sequence = 0  # each connection counts its own frames from 1
        await self.send("session.connect.v1", {"token": TOKEN, **(
            {"resume_token": resume} if resume else {})})
        await self.until(lambda kind, _: kind == "session.configuration_applied.v1")
        await self.send("session.update_requested.v1", {
            "client_capabilities": {"audio_codecs": ["pcm16"], "supports_playout_ack": True}})

    async def frame(self) -> tuple[str, dict[str, Any]]:
        assert self.ws is not None
        envelope = json.loads(await self.ws.recv())
        kind = str(envelope.get("type", "")).removeprefix("vocero.")
        payload = dict(envelope.get("data", {}).get("payload", {}))
        if kind == "response.audio_delta.v1":
            # played as it arrives: the read-back is heard once all of it was acknowledged
            generation = str(payload.get("generation_id", ""))
            size = len(str(payload.get("audio", ""))) * 3 // 4
            ms = size / 2 / int(payload.get("sample_rate") or self.rate) * 1000
            self.received_ms[generation] = self.received_ms.get(generation, 0.0) + ms
            await self.send("output.playout_progress.v1", {
                "generation_id": generation, "played_ms": int(self.received_ms[generation]),
                "buffered_ms": 0})
        elif kind == "session.configuration_applied.v1":
            self.session_id = str(payload.get("session_id", self.session_id))
            self.resume_token = str(payload.get("resume_token", ""))
            self.rate = int(payload.get("effective", {}).get("output_sample_rate") or self.rate)
            for rejected in payload.get("rejected_fields") or []:
                if rejected.get("field") == "resume_token":
                    self.tally.outcomes[f"resume_refused_{rejected.get('reason')}"] += 1
        elif kind == "session.state.v1":
            self.state = str(payload.get("state", ""))
        elif kind == "tool.confirmation_required.v1":
            self.pending = payload
        elif kind == "tool.status.v1":
            self.tally.outcomes[f"tool_{payload.get('kind', '')}_{payload.get('status', '')}"] += 1
        elif kind == "error.v1":
            self.tally.errors[str(payload.get("code", ""))] += 1
        return kind, payload

    async def until(self, done: Any, timeout_s: float = TURN_TIMEOUT_S) -> tuple[str, Any]:
        with anyio.fail_after(timeout_s):
            while True:
                kind, payload = await self.frame()
                if done(kind, payload):
                    return kind, payload

    async def turn(self, text: str) -> None:
        """Say ``text`` and read until its answers are done and the session idles."""
        await self.send("input.text.v1", {"text": text})
        await self._settle()

    async def _settle(self) -> None:
        created: set[str] = set()
        finished: set[str] = set()

        def done(kind: str, payload: dict[str, Any]) -> bool:
            generation = str(payload.get("generation_id", ""))
            if kind == "response.created.v1":
                created.add(generation)
            elif kind == "response.completed.v1":
                finished.add(generation)
            return bool(created) and created <= finished and self.state in IDLE

        await self.until(done)

    async def confirm(self) -> None:
        """The read-back was heard (its audio acknowledged, its answer completed): "yes"."""
        if self.pending is None:
            self.tally.outcomes["no_confirmation_asked"] += 1
            return
        self.pending = None
        await self.turn("yes")
        self.tally.outcomes["confirmed"] += 1

    # -------------------------------------------------------------------------- steps

    async def step(self, name: str) -> bool:
        """One step; False when it ended the session (the caller is then replaced)."""
        rng = self.rng
        if name == "lookup":
            await self.turn(rng.choice(("where is my order A123", "track order A124",
                                        "what appointments do I have", "status of order B777")))
        elif name == "write":
            # the agent learns the appointment's current version from the list, then moves it
            await self.turn("what appointments do I have")
            day = rng.choice(("monday", "tuesday", "wednesday", "thursday", "friday"))
            await self.turn(f"move appointment APT-1001 to {day} at {rng.randint(1, 5)} pm")
            await self.confirm()
        elif name == "followup":
            await self.turn(f"call me back tomorrow about my order A12{rng.choice((3, 4))}")
            if self.pending is not None:
                await self.confirm()
        elif name == "barge_in":
            await self.send("input.text.v1", {"text": "what appointments do I have"})
            await self.until(lambda kind, _: kind == "response.audio_delta.v1")
            await self.send("input.speech_started.v1")
            await self.turn("where is my order A123")
        elif name == "resume":
            await self._drop()
            await self.open(resume=self.resume_token)
        elif name == "bad_input":
            assert self.ws is not None
            kind = rng.choice(("malformed", "unknown_type", "oversized"))
            self.tally.outcomes[f"bad_{kind}"] += 1
            if kind == "malformed":
                await self.ws.send('{"specversion": "1.0", "type": ')
                self.sequence += 1  # a rejected frame counts too (docs/protocol.md)
            elif kind == "unknown_type":
                await self.send("no.such_event.v1", {})
            else:
                await self.send("input.text.v1", {"text": "x" * OVERSIZED_BYTES})
            with contextlib.suppress(TimeoutError):
                await self.until(lambda kind, _: kind == "error.v1", timeout_s=5)
        return True

    async def _drop(self) -> None:
        """End the connection without ``session.close.v1`` (a network loss)."""
        if self.ws is not None:
            self.ws.transport.abort()
            with contextlib.suppress(Exception):
                await self.ws.wait_closed()
            self.ws = None

    async def end(self, abrupt: bool) -> None:
        if self.ws is None:
            return
        if abrupt:
            await self._drop()
            return
        with contextlib.suppress(Exception):
            await self.send("session.close.v1")
            await self.ws.close()
        self.ws = None


async def _caller(url: str, tally: Tally, rng: random.Random, stop: anyio.Event) -> None:
    """One caller's life: connect, a few steps, end; a failure ends it early."""
    caller = Caller(url, tally, rng)
    tally.sessions_started += 1
    try:
        await caller.open()
    except (OSError, WebSocketException, TimeoutError) as exc:
        tally.connect_failures += 1
        tally.sessions_ended += 1
        tally.errors[f"connect_{type(exc).__name__}"] += 1
        await anyio.sleep(1.0)  # refused (capacity): wait a moment, as a caller redialling
        return
    abrupt = rng.random() < 0.2
    try:
        for _ in range(rng.randint(3, 8)):
            if stop.is_set():
                break
            name = rng.choices(STEPS, WEIGHTS)[0]
            tally.steps[name] += 1
            await caller.step(name)
            await anyio.sleep(rng.uniform(0.2, 1.5))  # the caller thinks before the next line
    except TimeoutError:
        tally.errors["turn_timeout"] += 1
    except (OSError, WebSocketException) as exc:
        tally.errors[f"closed_{type(exc).__name__}"] += 1
    except (ValueError, KeyError, TypeError) as exc:  # a frame this caller did not expect
        tally.errors[f"unexpected_{type(exc).__name__}"] += 1
    finally:
        tally.outcomes["abrupt_end" if abrupt else "closed_end"] += 1
        with anyio.CancelScope(shield=True):
            await caller.end(abrupt)
        tally.sessions_ended += 1


async def _seat(url: str, tally: Tally, seed: int, stop: anyio.Event) -> None:
    """One of the N seats: a new caller as soon as the last one ended, until ``stop``."""
    rng = random.Random(seed)
    await anyio.sleep(rng.uniform(0, 2.0))  # callers do not all dial at once
    while not stop.is_set():
        await _caller(url, tally, rng, stop)
