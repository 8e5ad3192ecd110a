"""A scripted protocol client over Starlette's in-process TestClient WebSocket."""

from __future__ import annotations

import base64
import json
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from starlette.testclient import WebSocketTestSession
from starlette.websockets import WebSocketDisconnect

Frame = dict[str, Any]

REPORTS_PER_S = 60
"""Playout reports this client sends in any second: the relay admits 100 client frames a second
(SPEC §4), and an answer whose audio is acknowledged as soon as it arrives comes in bursts of
dozens of deltas within milliseconds (a real client reports as it plays, a few times a second)."""


def envelope(name: str, payload: dict[str, Any], *, sequence: int, session_id: str = "") -> str:
    return json.dumps(
        {
            "specversion": "1.0",
            "type": f"vocero.{name}",
            "id": f"evt_{sequence}",
            "time": "2026-11-30T10:00:00Z",
            "source": "web-client",
            "data": {"session_id": session_id, "sequence": sequence, "payload": payload},
        }
    )


class ProtocolClient:
    def __init__(self, ws: WebSocketTestSession) -> None:
        self.ws = ws
        self.sequence = 0
        self.session_id = ""
        self.frames: list[Frame] = []
        self.close_code: int | None = None
        self.auto_playout = True
        self._reported: deque[float] = deque()
        self._deferred: dict[str, Any] | None = None
        """The newest playout report held back by :data:`REPORTS_PER_S`, sent before the next
        wait for a frame (the server may be waiting for it to finish the answer)."""

    # ------------------------------------------------------------------ sending

    def send(self, name: str, payload: dict[str, Any] | None = None) -> None:
        self.sequence += 1
        self.ws.send_text(
            envelope(name, payload or {}, sequence=self.sequence, session_id=self.session_id)
        )

    def send_raw(self, text: str) -> None:
        self.sequence += 1
        self.ws.send_text(text)

    def connect(self, token: str = "demo-token") -> Frame:
        self.send("session.connect.v1", {"token": token})
        applied = self.expect("session.configuration_applied.v1")
        self.session_id = applied["data"]["payload"]["session_id"]
        self.expect("session.state.v1")
        return applied

    def audio(self, pcm16: bytes) -> None:
        self.send(
            "audio.input.delta.v1",
            {"audio": base64.b64encode(pcm16).decode(), "sample_rate": 16000},
        )

    # ---------------------------------------------------------------- receiving

    def receive(self) -> Frame:
        if self._deferred is not None:
            report, self._deferred = self._deferred, None
            self._report(report, wait=True)
        try:
            frame: Frame = json.loads(self.ws.receive_text())
        except WebSocketDisconnect as exc:
            self.close_code = exc.code
            raise
        self.frames.append(frame)
        payload = frame["data"]["payload"]
        if self.auto_playout and frame["type"] == "vocero.response.audio_delta.v1":
            self._report(
                {"generation_id": payload["generation_id"], "played_ms": 10**7, "buffered_ms": 0}
            )
        return frame

    def _report(self, report: dict[str, Any], *, wait: bool = False) -> None:
        """Report everything received as played, within :data:`REPORTS_PER_S`: past it the
        report is held back (``wait``: sent once the window has room)."""
        now = time.monotonic()
        while self._reported and now - self._reported[0] >= 1.0:
            self._reported.popleft()
        if len(self._reported) >= REPORTS_PER_S:
            if not wait:
                self._deferred = report
                return
            time.sleep(max(0.0, self._reported[0] + 1.0 - now))  # rate pacing, not a sync wait
            self._reported.popleft()
        self._reported.append(time.monotonic())
        self.send("output.playout_progress.v1", report)

    def expect(
        self, name: str, where: Callable[[dict[str, Any]], bool] = lambda p: True, limit: int = 2000
    ) -> Frame:
        """Receive until a frame of this type whose payload satisfies ``where``."""
        for _ in range(limit):
            frame = self.receive()
            if frame["type"] == f"vocero.{name}" and where(frame["data"]["payload"]):
                return frame
        raise AssertionError(f"no {name} within {limit} frames")

    def expect_close(self) -> int:
        try:
            for _ in range(1000):
                self.receive()
        except WebSocketDisconnect:
            assert self.close_code is not None
            return self.close_code
        raise AssertionError("connection did not close")

    def of_type(self, name: str) -> list[dict[str, Any]]:
        return [f["data"]["payload"] for f in self.frames if f["type"] == f"vocero.{name}"]

    def types(self) -> list[str]:
        return [f["type"].removeprefix("vocero.") for f in self.frames]
