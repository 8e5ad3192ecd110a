"""``vocero bench client``: the platform's own cost as a client sees it (issue 46 item 5).

Measured the way ``../shared/peers/pipecat/bench_pipecat.py`` measures Pipecat: a real ``vocero
serve --runners sim`` (zero-time models) in its own process, this process the client, over a
loopback WebSocket. Two figures, on the client's clock (``time.perf_counter``):

* **overhead**: just before ``input.text.v1`` is sent, the agent idle → the first
  ``response.audio_delta.v1`` of the answer received and decoded (its audio base64-decoded, as a
  player would). Each reply then plays out in full (``response.completed.v1``) before the next
  turn, like the peer's bench waits for its reply to finish.
* **barge-in**: ``input.speech_started.v1`` sent while a long reply streams → the
  ``output.stop_and_flush.v1`` of that reply received. ``stale_frames``: audio or text deltas of
  the stopped reply received after its flush (the protocol allows none);
  ``frames_after_send``: those received after the barge-in was sent (in flight before the
  server saw it; the peer counts these as its stale frames).

The replies are the peer's: a two-sentence answer (2.35 s of audio) and a six-sentence one
(19.5 s), both at 50 ms of audio a character. ``--pipecat PYTHON`` runs the peer's bench right
after (PYTHON: an interpreter with ``pipecat-ai`` installed, see the peer's README) with the
same counts, and reports both and their ratios; the machine is shared and noisy, so only runs
taken back to back compare.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import msgspec
import yaml

from vocero.bench.stats import percentiles

SHORT_REPLY = "Sure, I can help with that. Here is the answer."
LONG_REPLY = (
    "Okay, let me walk you through the whole thing step by step. "
    "First, you open the settings page from the main menu at the top. "
    "Then you scroll all the way down to the section called advanced. "
    "There you will find a switch that turns the feature on or off. "
    "Flip it on, wait a few seconds, and the change is applied for you. "
    "If anything goes wrong, just ask me again and we will try it together."
)
SCRIPT = {
    "tts": {"ms_per_char": 50},
    "llm": [{"match": r"\blong\b", "reply": LONG_REPLY}, {"match": ".*", "reply": SHORT_REPLY}],
}
PEER_SCRIPT = Path(__file__).resolve().parents[3] / "shared/peers/pipecat/bench_pipecat.py"
"""The peer's bench, where the repository sits beside ``shared/``."""
GOALS = {"overhead_p95_ms": 3.0, "overhead_p95_of_peer": 0.40, "barge_in_p95_ms": 1.5,
         "stale_frames": 0}  # fmt: skip
SPEECH_S = 0.1
"""Gap before each typed turn (the peer's ``--speech-ms``)."""
QUIET_S = 0.2
"""After a stop, audio silent this long counts as stopped (the peer's ``--quiet-ms``)."""
DWELL_S = (0.3, 1.5)
"""How long the agent speaks before the barge-in, drawn uniformly (the peer's dwell)."""
WARMUP_TURNS = 10
WARMUP_BARGES = 3

AUDIO = "vocero.response.audio_delta.v1"
TEXT = "vocero.response.text_delta.v1"
FLUSH = "vocero.output.stop_and_flush.v1"
COMPLETED = "vocero.response.completed.v1"
APPLIED = "vocero.session.configuration_applied.v1"


class _Payload(msgspec.Struct):
    session_id: str = ""
    generation_id: str = ""
    audio: bytes = b""
    """Base64 on the wire: decoded as a player must before it can play."""


class _Data(msgspec.Struct):
    payload: _Payload


class _Frame(msgspec.Struct):
    type: str
    data: _Data


decode_frame = msgspec.json.Decoder(_Frame).decode


def client_frame(name: str, payload: dict[str, Any], *, session_id: str, sequence: int) -> str:
    """A client envelope (docs/protocol.md) as text."""
    return json.dumps({
        "specversion": "1.0", "type": f"vocero.{name}", "id": f"c{sequence}",
        "time": "2026-01-01T00:00:00Z", "source": "web-client",
        "data": {"session_id": session_id, "sequence": sequence, "payload": payload},
    })  # fmt: skip


@dataclass
class _Log:
    """Everything the reader saw, stamped on arrival."""

    frames: list[tuple[float, str, str]] = field(default_factory=list)
    """(time, type, generation_id) of every frame."""
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    session_id: str = ""

    def first(self, kind: str, since: int, generation: str = "") -> tuple[int, float, str] | None:
        for index in range(since, len(self.frames)):
            t, k, g = self.frames[index]
            if k == kind and (not generation or g == generation):
                return index, t, g
        return None


class _Client:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.log = _Log()
        self.sequence = 0

    async def send(self, name: str, payload: dict[str, Any]) -> float:
        self.sequence += 1
        text = client_frame(name, payload, session_id=self.log.session_id,
                            sequence=self.sequence)
        t = time.perf_counter()
        await self.ws.send(text)
        return t

    async def read(self) -> None:
        log = self.log
        async for message in self.ws:
            t = time.perf_counter()
            frame = decode_frame(message)
            payload = frame.data.payload
            if frame.type == APPLIED and payload.session_id:
                log.session_id = payload.session_id
            log.frames.append((t, frame.type, payload.generation_id))
            log.changed.set()

    async def wait(self, kind: str, since: int, generation: str = "") -> tuple[int, float, str]:
        """The first frame of ``kind`` (of ``generation``) from index ``since`` on."""
        async with asyncio.timeout(30):
            while (found := self.log.first(kind, since, generation)) is None:
                self.log.changed.clear()
                await self.log.changed.wait()
        return found

    async def wait_quiet(self, generation: str, quiet_s: float) -> None:
        """Until no frame of ``generation`` arrived for ``quiet_s``."""
        async with asyncio.timeout(30):
            while True:
                last = max((t for t, _, g in self.log.frames if g == generation), default=0.0)
                left = last + quiet_s - time.perf_counter()
                if left <= 0:
                    return
                await asyncio.sleep(left)


async def _turn(client: _Client, text: str) -> tuple[float, float, str]:
    """A typed turn: (sent at, first audio at, generation id)."""
    await asyncio.sleep(SPEECH_S)
    mark = len(client.log.frames)
    sent = await client.send("input.text.v1", {"text": text})
    _, first, generation = await client.wait(AUDIO, mark)
    return sent, first, generation


async def drive(
    url: str, turns: int, interruptions: int, *, seed: int = 1234,
    warmup: tuple[int, int] = (WARMUP_TURNS, WARMUP_BARGES),
) -> dict[str, Any]:
    """Connect, run the overhead turns then the barge-ins (each after its unmeasured
    ``warmup``), and summarise."""
    warmup_turns, warmup_barges = warmup
    from websockets.asyncio.client import connect

    rng = random.Random(seed)
    overhead: list[float] = []
    barge: list[float] = []
    stale: list[int] = []
    in_flight: list[int] = []
    async with connect(url, max_size=None, compression=None) as ws:
        client = _Client(ws)
        reader = asyncio.ensure_future(client.read())
        try:
            await client.send("session.connect.v1", {"token": "demo-token"})
            await client.wait(APPLIED, 0)
            for k in range(warmup_turns + turns):
                sent, first, generation = await _turn(client, f"turn {k} short")
                await client.wait(COMPLETED, 0, generation)
                if k >= warmup_turns:
                    overhead.append(first - sent)
            for j in range(warmup_barges + interruptions):
                _, _, generation = await _turn(client, f"turn {j} long")
                await asyncio.sleep(rng.uniform(*DWELL_S))
                mark = len(client.log.frames)
                sent = await client.send("input.speech_started.v1", {})
                flush_index, flushed, _ = await client.wait(FLUSH, mark, generation)
                await client.wait(COMPLETED, mark, generation)
                await client.wait_quiet(generation, QUIET_S)
                if j < warmup_barges:
                    continue
                barge.append(flushed - sent)
                frames = client.log.frames
                kinds = (AUDIO, TEXT)
                stale.append(sum(1 for _, k, g in frames[flush_index + 1:]
                                 if k in kinds and g == generation))
                in_flight.append(sum(1 for _, k, g in frames[mark:]
                                     if k in kinds and g == generation))
        finally:
            reader.cancel()
    return {
        "overhead_ms": percentiles(overhead, scale=1000.0, digits=3),
        "barge_in_ms": percentiles(barge, scale=1000.0, digits=3),
        "stale_frames": sum(stale),
        "stale_frames_max": max(stale, default=0),
        "frames_after_send": sum(in_flight),
        "turns": turns,
        "interruptions": interruptions,
    }


async def run_vocero(
    turns: int, interruptions: int, *, warmup: tuple[int, int] = (WARMUP_TURNS, WARMUP_BARGES)
) -> dict[str, Any]:
    """One ``vocero serve --runners sim`` in its own process, driven from this one."""
    from vocero.bench.sessions import free_port, wait_ready

    workdir = Path(tempfile.mkdtemp(prefix="vocero-bench-client-"))
    script = workdir / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    port = free_port()
    command = [
        sys.executable, "-m", "vocero", "serve", "--runners", "sim", "--port", str(port),
        "--sim-script", str(script), "--db", f"sqlite+aiosqlite:///{workdir}/bench.db",
        "--log-format", "json",
    ]  # fmt: skip
    log = (workdir / "server.log").open("wb")
    server = await anyio.open_process(command, stdout=log, stderr=log)
    try:
        await wait_ready(port)
        started = time.monotonic()
        result = await drive(f"ws://127.0.0.1:{port}/v1/realtime", turns, interruptions,
                             warmup=warmup)
        result["wall_s"] = round(time.monotonic() - started, 1)
        result["server_log"] = str(workdir / "server.log")
        return result
    finally:
        if server.returncode is None:  # a server killed under the bench is gone already
            with contextlib.suppress(ProcessLookupError):
                server.terminate()
            with anyio.move_on_after(15):
                await server.wait()
        log.close()


async def run_peer(python: str, script: Path, turns: int, interruptions: int) -> dict[str, Any]:
    """The peer's bench (``bench_pipecat.py --no-rtvi``) with the same counts."""
    out = Path(tempfile.mkdtemp(prefix="vocero-bench-peer-")) / "pipecat.json"
    command = [python, str(script), "--no-rtvi", "--turns", str(turns), "--interruptions",
               str(interruptions), "--json", str(out)]  # fmt: skip
    # Its summary is read from its --json file; standard output carries this bench's JSON only.
    await anyio.run_process(command, stdout=subprocess.DEVNULL, stderr=None, check=True)
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def compare(vocero: dict[str, Any], peer: dict[str, Any]) -> dict[str, Any]:
    """The two runs side by side: ratios (Vocero / peer) and the item's goals."""
    v_oh, p_oh = vocero["overhead_ms"], peer["overhead"]
    v_b, p_b = vocero["barge_in_ms"], peer["barge_in"]["flush_msg_ms"]

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(a / b, 3) if a is not None and b else None

    return {
        "pipecat": {
            "overhead_ms": {"p50": p_oh.get("p50_ms"), "p95": p_oh.get("p95_ms")},
            "barge_in_flush_ms": {"p50": p_b.get("p50_ms"), "p95": p_b.get("p95_ms")},
            "stale_frames_mean": peer["barge_in"].get("stale_frames_mean"),
            "version": peer.get("pipecat_version"),
            "wall_s": peer.get("wall_s"),
        },
        "ratio_overhead_p50": ratio(v_oh.get("p50"), p_oh.get("p50_ms")),
        "ratio_overhead_p95": ratio(v_oh.get("p95"), p_oh.get("p95_ms")),
        "ratio_barge_in_p95": ratio(v_b.get("p95"), p_b.get("p95_ms")),
    }


def goals(vocero: dict[str, Any], versus: dict[str, Any] | None) -> dict[str, bool]:
    checks = {
        "overhead_p95": vocero["overhead_ms"].get("p95", float("inf"))
        <= GOALS["overhead_p95_ms"],
        "barge_in_p95": vocero["barge_in_ms"].get("p95", float("inf"))
        <= GOALS["barge_in_p95_ms"],
        "no_stale_frames": vocero["stale_frames"] == GOALS["stale_frames"],
    }
    if versus is not None and versus["ratio_overhead_p95"] is not None:
        checks["overhead_p95_vs_pipecat"] = (
            versus["ratio_overhead_p95"] <= GOALS["overhead_p95_of_peer"]
        )
    return checks


async def client(args: argparse.Namespace) -> dict[str, Any]:
    """``vocero bench client [--turns N] [--interruptions N] [--pipecat PYTHON]``."""
    turns, interruptions = args.turns, args.interruptions
    vocero = await run_vocero(turns, interruptions)
    result: dict[str, Any] = {
        "benchmark": "client",
        "measure": "client process over loopback WebSocket: input.text.v1 sent -> first "
        "response.audio_delta.v1 received (overhead); input.speech_started.v1 sent during a "
        "long reply -> output.stop_and_flush.v1 received (barge-in)",
        "vocero": vocero,
        "goals": GOALS,
        "cores": os.cpu_count() or 1,
        "loadavg": os.getloadavg(),
    }
    versus = None
    if args.pipecat:
        script = Path(args.pipecat_script or PEER_SCRIPT)
        peer = await run_peer(args.pipecat, script, turns, interruptions)
        versus = compare(vocero, peer)
        result["versus"] = versus
    result["checks"] = goals(vocero, versus)
    result["goals_met"] = all(result["checks"].values())
    return result
