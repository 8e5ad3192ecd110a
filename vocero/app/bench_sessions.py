"""``vocero bench sessions --n N``: N concurrent realtime sessions against a server subprocess.

Each session streams 20 ms of caller audio 50 times a second and receives the agent's audio at
50 frames a second (the simulator speaks in 20 ms chunks and the client reports playout in real
time). Frame lag is arrival time minus the server's envelope timestamp; memory is the server's
peak resident set.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import websockets
import yaml

from vocero.app.stats import percentiles

SCRIPT = {
    "tts": {"ms_per_char": 60, "chunk_ms": 20},
    "llm": [
        {
            "match": ".*",
            "reply": "Thanks for calling. Your order left our warehouse this "
            "morning and should reach you by Thursday afternoon.",
        }
    ],
}
SILENCE = base64.b64encode(b"\x00\x00" * 320).decode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class _Client:
    def __init__(self, url: str, lags: list[float], counters: dict[str, int]) -> None:
        self.url, self.lags, self.counters = url, lags, counters
        self.sequence = 0
        self.session_id = ""
        self.playing: tuple[str, float] | None = None

    async def _send(self, ws: Any, name: str, payload: dict[str, Any]) -> None:
        self.sequence += 1
        await ws.send(
            json.dumps(
                {
                    "specversion": "1.0",
                    "type": f"vocero.{name}",
                    "id": f"e{self.sequence}",
                    "time": "2026-01-01T00:00:00Z",
                    "source": "web-client",
                    "data": {
                        "session_id": self.session_id,
                        "sequence": self.sequence,
                        "payload": payload,
                    },
                }
            )
        )

    async def run(self, until: float) -> None:
        try:
            await self._run(until)
        except* (websockets.ConnectionClosed, OSError, TimeoutError):
            if time.monotonic() < until - 0.5:
                self.counters["dropped"] += 1

    async def _run(self, until: float) -> None:
        async with websockets.connect(
            self.url, max_size=2**20, open_timeout=30, ping_interval=None
        ) as ws:
            await self._send(ws, "session.connect.v1", {"token": "demo-token"})
            applied = json.loads(await ws.recv())
            self.session_id = applied["data"]["payload"]["session_id"]
            await self._send(
                ws,
                "session.update_requested.v1",
                {"client_capabilities": {"supports_playout_ack": True}},
            )
            await self._send(ws, "input.text.v1", {"text": "where is my order"})
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._speak, ws, until)
                tg.start_soon(self._report, ws, until)
                await self._listen(ws, until)
                tg.cancel_scope.cancel()

    async def _speak(self, ws: Any, until: float) -> None:
        next_at = time.monotonic()
        while time.monotonic() < until:
            await self._send(ws, "audio.input.delta.v1", {"audio": SILENCE, "sample_rate": 16000})
            self.counters["sent"] += 1
            next_at += 0.02
            await anyio.sleep(max(0.0, next_at - time.monotonic()))

    async def _report(self, ws: Any, until: float) -> None:
        """Like a browser's playback worklet: report real-time playout every 50 ms."""
        while time.monotonic() < until:
            await anyio.sleep(0.05)
            if self.playing:
                gen, started = self.playing
                played = int((time.monotonic() - started) * 1000)
                await self._send(
                    ws,
                    "output.playout_progress.v1",
                    {"generation_id": gen, "played_ms": played, "buffered_ms": 0},
                )

    async def _listen(self, ws: Any, until: float) -> None:
        while time.monotonic() < until:
            frame: dict[str, Any] | None = None
            with anyio.move_on_after(max(0.01, until - time.monotonic())):
                frame = json.loads(await ws.recv())
            if frame is None:
                return
            kind = frame["type"]
            if kind == "vocero.response.audio_delta.v1":
                sent_at = datetime.fromisoformat(frame["time"].replace("Z", "+00:00")).timestamp()
                self.lags.append((time.time() - sent_at) * 1000)
                self.counters["received"] += 1
                gen = frame["data"]["payload"]["generation_id"]
                if self.playing is None or self.playing[0] != gen:
                    self.playing = (gen, time.monotonic())
            elif kind == "vocero.response.completed.v1":
                self.playing = None
                await self._send(ws, "input.text.v1", {"text": "and my other order?"})
            elif kind == "vocero.error.v1":
                self.counters["errors"] += 1


async def _wait_ready(port: int) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(600):
            try:
                if (
                    await http.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
                ).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await anyio.sleep(0.1)
    raise RuntimeError("server never became ready")


async def run_sessions(n: int, *, duration_s: float = 10.0) -> dict[str, Any]:
    port = _free_port()
    workdir = Path(tempfile.mkdtemp(prefix="vocero-bench-"))
    script = workdir / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    env = {**os.environ, "VOCERO_MAX_SESSIONS": str(n + 10)}
    command = [
        sys.executable,
        "-m",
        "vocero",
        "serve",
        "--runners",
        "sim",
        "--port",
        str(port),
        "--sim-script",
        str(script),
        "--db",
        f"sqlite+aiosqlite:///{workdir}/bench.db",
        "--log-format",
        "json",
    ]
    server = await anyio.open_process(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        await _wait_ready(port)
        lags: list[float] = []
        counters = {"sent": 0, "received": 0, "errors": 0, "dropped": 0}
        peak_rss = 0.0
        until = time.monotonic() + duration_s
        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(
                    _Client(f"ws://127.0.0.1:{port}/v1/realtime", lags, counters).run, until
                )
                await anyio.sleep(0.005)
            while time.monotonic() < until:
                peak_rss = max(peak_rss, _rss_mb(server.pid))
                await anyio.sleep(0.5)
        warm = lags[len(lags) // 5 :]
        return {
            "benchmark": "sessions",
            "sessions": n,
            "duration_s": duration_s,
            "outbound_frame_lag_ms": percentiles(warm),
            "frames_received_per_s": round(counters["received"] / duration_s, 1),
            "frames_sent_per_s": round(counters["sent"] / duration_s, 1),
            "errors": counters["errors"],
            "dropped_sessions": counters["dropped"],
            "server_peak_rss_mb": round(peak_rss, 1),
            "goal": "500 sessions, p95 lag <= 20 ms",
        }
    finally:
        server.terminate()
        with anyio.move_on_after(15):
            await server.wait()
