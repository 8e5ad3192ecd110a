"""Shared pieces of the attack tests: the secrets in play, log capture, a socket that stops
reading, and a real ``vocero serve`` subprocess."""

from __future__ import annotations

import base64
import io
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import structlog
import yaml
from starlette.datastructures import Address

from tests.conftest import DEMO_SCRIPT
from tests.support.db import migrated_copy
from tests.support.servers import READY_LINE, ServerProcess, free_port
from tests.support.wsclient import envelope
from vocero.app.settings import Settings
from vocero.observability.logging import LogFormat, configure_logging

CALLER_TOKEN = "demo-token"
"""The demo caller's credential (public, but a credential all the same)."""
ADMIN_TOKEN = "op-admin-token-7f3a9c"
"""The single admin of ``--operator-token``."""
VAULT_KEY = base64.urlsafe_b64encode(bytes(range(32))).decode()
"""``VOCERO_VAULT_KEY``: the key that seals voice references."""
ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}
FIXTURE_ADMIN = {"authorization": "Bearer op-admin-token"}
"""The admin of the ``client`` fixture (``tests/conftest.py``)."""


def settings(tmp_path: Path, **overrides: Any) -> Settings:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(DEMO_SCRIPT))
    base = Settings(
        runners="sim",
        db=migrated_copy(tmp_path / "vocero.db", driver="sqlite+aiosqlite"),
        sim_script=str(script),
        operator_token=ADMIN_TOKEN,
    )
    from dataclasses import replace

    return replace(base, **overrides)


@contextmanager
def captured_logs(fmt: LogFormat) -> Iterator[io.StringIO]:
    """Everything the process logs (structlog and the standard library), rendered in ``fmt``
    exactly as ``vocero serve`` renders it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    out = io.StringIO()
    configure_logging(fmt, file=out, route_stdlib=True)
    try:
        yield out
    finally:
        structlog.reset_defaults()
        structlog.contextvars.clear_contextvars()
        root.handlers[:] = handlers
        root.setLevel(level)


def leaked(text: str, secrets: list[str]) -> list[str]:
    """The secrets found anywhere in ``text`` (each one shortened, so a failure does not print
    it whole)."""
    return [secret[:6] + "…" for secret in secrets if secret and secret in text]


def frame(name: str, payload: Any, *, sequence: int, session_id: str = "") -> str:
    return envelope(name, payload, sequence=sequence, session_id=session_id)


def nested(depth: int, leaf: str = "1") -> str:
    """A JSON object nested ``depth`` levels deep: ``{"a":{"a":…1…}}``."""
    return '{"a":' * depth + leaf + "}" * depth


class StalledSocket:
    """A WebSocket whose client stops reading after ``reads`` server frames: every later
    ``send_text`` waits forever, as it does when the peer's receive window is full."""

    def __init__(self, reads: int, *, origin: str | None = None, host: str = "10.0.0.9") -> None:
        self.reads = reads
        self.sent: list[dict[str, Any]] = []
        self.close_codes: list[int] = []
        self.headers: dict[str, str] = {} if origin is None else {"origin": origin}
        self.client = Address(host, 40000)
        self.scope: dict[str, Any] = {"type": "websocket", "extensions": {}}
        self.state = 0  # WebSocketState.CONNECTING
        self.read_all = anyio.Event()
        """Set once the client has read its ``reads`` frames (later sends never complete)."""
        self._send, self._receive = anyio.create_memory_object_stream[str](100_000)

    @property
    def application_state(self) -> Any:
        from starlette.websockets import WebSocketState

        return WebSocketState(self.state)

    # the client's side
    def feed(self, text: str) -> None:
        self._send.send_nowait(text)

    # what the relay calls
    async def accept(self) -> None:
        self.state = 1

    async def receive(self) -> dict[str, Any]:
        text = await self._receive.receive()
        return {"type": "websocket.receive", "text": text}

    async def send_text(self, text: str) -> None:
        if len(self.sent) >= self.reads:
            await anyio.sleep_forever()
        self.sent.append(json.loads(text))
        if len(self.sent) == self.reads:
            self.read_all.set()

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        self.close_codes.append(code)
        self.state = 2


class Server(ServerProcess):
    """``python -m vocero serve --runners sim`` on a free port, its log kept in a file; started
    at once."""

    def __init__(self, tmp_path: Path, db: Path, *, log_format: str = "console") -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        script = tmp_path / "script.yaml"
        script.write_text(yaml.safe_dump(DEMO_SCRIPT))
        command = [
            sys.executable, "-m", "vocero", "serve", "--runners", "sim",
            "--port", str(port), "--db", f"sqlite:///{db}", "--sim-script", str(script),
            "--operator-token", ADMIN_TOKEN, "--log-format", log_format,
        ]  # fmt: skip
        super().__init__("vocero serve", command, port=port, ready_line=READY_LINE,
                         log=tmp_path / f"serve-{port}.log")
        self.spawn()

    def wait_listening(self, timeout_s: float = 60.0) -> None:
        self.wait_ready(timeout_s)
