"""Console fixtures: a real ``vocero serve --runners sim`` with operators, the demo profile (its
MCP fixture servers, follow-ups held for approval, an orders tool whose definition changes after
its first call), a demo call driven over the WebSocket, and headless Chromium (Debian's build,
driven by Playwright; never a browser download)."""

from __future__ import annotations

import base64
import datetime
import json
import os
import shutil
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

from tests.support.audio import tone_frames
from tests.support.polling import wait_for as poll
from tests.support.servers import READY_LINE, ServerProcess, free_port
from vocero.mcp_gateway.consent import PendingConsent
from vocero.mcp_gateway.oauth_store import SqlConsentRepository
from vocero.store.engine import Store

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
CHROMIUM = os.environ.get("VOCERO_CHROMIUM", "/usr/bin/chromium")
ADMIN_TOKEN = "console-admin-token"
OPERATORS = [
    {"token": "owner-token", "name": "olga", "roles": ["business_owner"]},
    {"token": "sec-token", "name": "sam", "roles": ["security"]},
    {"token": "viewer-token", "name": "vic", "roles": ["viewer"]},
    {"token": "acme-sec-token", "name": "sue", "roles": ["security"], "tenants": ["acme"]},
]
MOVE_TO = (datetime.date.today() + datetime.timedelta(days=10)).isoformat()
CALL = [
    "what is the status of order A123",
    "what are my appointments",
    f"can you move appointment APT-1001 to {MOVE_TO} at 11:00",
    "yes",
    "please close my account",
    "please call me back tomorrow at 9 about my invoice",
]
"""The demo call, one push-to-talk utterance per line (the sim recogniser hears these)."""
SCRIPT: dict[str, Any] = {
    "stt": CALL,
    "tts": {"ms_per_char": 4},
    "llm": [
        {"match": "status of order (?P<order>[A-Za-z0-9-]+)", "tool": "orders.status",
         "arguments": {"order_id": "{order}"}, "reply": "Order {order} is {result.status}."},
        {"match": "my appointments", "tool": "appointments.list", "arguments": {}, "reply": "Ok."},
        {"match": r"move appointment (?P<id>[A-Za-z0-9-]+) to (?P<date>\d{4}-\d{2}-\d{2}) at "
                  r"(?P<time>\d{1,2}:\d{2})", "tool": "appointments.reschedule",
         "arguments": {"appointment_id": "{id}", "new_date": "{date}", "new_time": "{time}",
                       "timezone": "Europe/Madrid"},
         "reply": "Done."},
        {"match": "close my account", "tool": "account.close", "arguments": {}, "reply": "Ok."},
        {"match": "call me back (?P<when>.+?) about (?P<reason>.+)", "tool": "followups.record",
         "arguments": {"when": "{when}", "reason": "{reason}", "channel": "phone"},
         "reply": "I have recorded a call-back {when}."},
        {"match": r"^(yes|yeah|go ahead)\b", "intent": "confirm"},
        {"match": r"^(yes|yeah|go ahead)\b", "reply": "All set."},
        {"match": ".*", "reply": "I can help with orders, appointments and call-backs."},
    ],
}
STARTUP_TIMEOUT_S = 60.0


def demo_profile(workdir: Path, record: Path) -> Path:
    """fixtures/profiles/demo.yaml with absolute paths, follow-ups held for an operator, and the
    orders server changing its tool definition after the first call."""
    profile = yaml.safe_load((FIXTURES / "profiles" / "demo.yaml").read_text())
    profile["claims"] = str(FIXTURES / "profiles" / profile["claims"])
    for server in profile["mcp_servers"].values():
        server["args"] = [str((FIXTURES / "profiles" / a).resolve()) if a.endswith(".py") else a
                          for a in server["args"]]
    profile["mcp_servers"]["orders"]["env"] = {
        "VOCERO_MCP_MUTATE": "get_order_status", "VOCERO_MCP_MUTATE_AFTER": "1",
        "VOCERO_MCP_RECORD": str(record),
    }
    profile["followups"]["autonomy"] = "approve"
    directory = workdir / "profiles"
    directory.mkdir()
    (directory / "demo.yaml").write_text(yaml.safe_dump(profile))
    return directory


class ConsoleServer(ServerProcess):
    def __init__(self, workdir: Path, extra_env: dict[str, str] | None = None) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.record = workdir / "orders.jsonl"
        self.profiles = workdir / "profiles"
        (workdir / "sim.yaml").write_text(yaml.safe_dump(SCRIPT))
        (workdir / "operators.yaml").write_text(yaml.safe_dump(OPERATORS))
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.http = httpx.Client(base_url=self.url, timeout=30)
        super().__init__("vocero serve", [
            sys.executable, "-m", "vocero", "serve", "--runners", "sim", "--port", str(port),
            "--db", f"sqlite+aiosqlite:///{workdir / 'v.db'}",
            "--sim-script", str(workdir / "sim.yaml"),
            "--profiles", str(demo_profile(workdir, self.record)),
            "--operator-token", ADMIN_TOKEN, "--operators", str(workdir / "operators.yaml"),
            "--followups-tick-s", "0",
        ], port=port, ready_line=READY_LINE, env=extra_env, cwd=REPO,
           ready=lambda: self.http.get("/readyz").status_code == 200)  # fmt: skip
        try:
            self.spawn().wait_ready(STARTUP_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise

    def log_tail(self, lines: int = 60) -> str:
        return self.tail(lines)

    def get(self, path: str, token: str = ADMIN_TOKEN) -> Any:
        answer = self.http.get(path, headers={"authorization": f"Bearer {token}"})
        assert answer.status_code == 200, (path, answer.text)
        return answer.json()

    def post(self, path: str, body: Any = None, token: str = ADMIN_TOKEN) -> httpx.Response:
        return self.http.post(path, json=body, headers={"authorization": f"Bearer {token}"})

    def stop(self, grace_s: float = 15.0) -> None:
        self.http.close()
        super().stop(grace_s)


def until(predicate: Any, what: str, timeout_s: float = 30.0) -> None:
    """Wait for a condition of the other process, polled (it has no event to wait on)."""
    poll(what, predicate, timeout_s)


@dataclass
class Call:
    session_id: str
    frames: list[dict[str, Any]] = field(default_factory=list)

    def of(self, name: str) -> list[dict[str, Any]]:
        return [f["data"]["payload"] for f in self.frames if f["type"] == f"vocero.{name}"]


def demo_call(url: str, traceparents: list[str] | None = None) -> Call:
    """Drive the :data:`CALL` over the WebSocket, push-to-talk, acknowledging playout, until each
    turn's answer completed; ``traceparents[i]`` rides on the frames of turn ``i``."""
    from websockets.sync.client import connect

    sequence = 0
    call = Call("")

    def send(ws: Any, name: str, payload: dict[str, Any], traceparent: str = "") -> None:
        nonlocal sequence
        sequence += 1
        envelope: dict[str, Any] = {
            "specversion": "1.0", "type": f"vocero.{name}", "id": f"evt_{sequence}",
            "time": "2026-12-01T10:00:00Z", "source": "web-client",
            "data": {"session_id": call.session_id, "sequence": sequence, "payload": payload},
        }
        if traceparent:
            envelope["traceparent"] = traceparent
        ws.send(json.dumps(envelope))

    def until_frame(ws: Any, name: str, where: Any = lambda p: True) -> dict[str, Any]:
        for _ in range(5000):
            frame = json.loads(ws.recv(timeout=30))
            call.frames.append(frame)
            payload = frame["data"]["payload"]
            if frame["type"] == "vocero.response.audio_delta.v1":
                send(ws, "output.playout_progress.v1", {
                    "generation_id": payload["generation_id"], "played_ms": 10**7,
                    "buffered_ms": 0})
            if frame["type"] == f"vocero.{name}" and where(payload):
                return payload
        raise AssertionError(f"no {name}")

    ws_url = url.replace("http://", "ws://") + "/v1/realtime"
    with connect(ws_url, max_size=2**22) as ws:
        send(ws, "session.connect.v1", {"token": "demo-token"})
        call.session_id = until_frame(ws, "session.configuration_applied.v1")["session_id"]
        send(ws, "session.update_requested.v1", {
            "client_capabilities": {"audio_codecs": ["pcm16"], "supports_playout_ack": True},
            "preferences": {"locale": "en-US", "turn_mode": "push_to_talk"}})
        until_frame(ws, "session.configuration_applied.v1")
        for index, _line in enumerate(CALL):
            traceparent = traceparents[index] if traceparents and index < len(traceparents) else ""
            tone = tone_frames(400)
            for frame in (b"".join(tone[:10]), b"".join(tone[10:])):  # two 200 ms frames
                send(ws, "audio.input.delta.v1", {
                    "audio": base64.b64encode(frame).decode(), "sample_rate": 16000}, traceparent)
            send(ws, "audio.input.commit.v1", {}, traceparent)
            until_frame(ws, "response.completed.v1")
        send(ws, "session.close.v1", {})
        try:
            for _ in range(200):
                call.frames.append(json.loads(ws.recv(timeout=10)))
        except Exception:  # the server closed the connection: the call is over
            pass
    return call


@pytest.fixture(scope="module")
def console_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleServer]:
    server = ConsoleServer(tmp_path_factory.mktemp("console") / "server")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists() and shutil.which(CHROMIUM) is None:
        pytest.fail(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set VOCERO_CHROMIUM)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update"],
        )
        try:
            yield launched
        finally:
            launched.close()


VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) =>
  window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
"""
"""Collects, in every document of a page, what the Content-Security-Policy refused."""


class Console:
    """A page of the console (or the browser client) in Chromium: what it logged as errors or
    warnings, and what the Content-Security-Policy refused (:meth:`violations`)."""

    def __init__(self, page: Page, server: ConsoleServer, shots: Path) -> None:
        self.page, self.server, self.shots = page, server, shots
        self.problems: list[str] = []
        page.add_init_script(VIOLATIONS)
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.problems.append(f"pageerror: {exc}"))

    def violations(self) -> list[str]:
        return list(self.page.evaluate("window.__violations"))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            self.problems.append(f"{message.type}: {message.text}")

    def sign_in(self, token: str = ADMIN_TOKEN) -> None:
        self.page.goto(self.server.url + "/operator")
        self.page.fill("#token", token)
        self.page.click("#login button[type=submit]")
        self.page.wait_for_selector("body[data-loaded=sessions]")

    def tab(self, name: str) -> None:
        self.page.evaluate("delete document.body.dataset.loaded")
        self.page.click(f"#tabs [data-tab={name}]")
        self.page.wait_for_selector(f"body[data-loaded={name}]")

    def open_session(self, session_id: str) -> None:
        self.page.click(f"#sessions tr[data-session='{session_id}']")
        self.page.wait_for_selector(f"body[data-session='{session_id}']")

    def shot(self, name: str) -> Path:
        path = self.shots / f"console-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def texts(self, selector: str) -> list[str]:
        return [t.strip() for t in self.page.locator(selector).all_inner_texts()]


@contextmanager
def watched_page(
    browser: Browser, server: ConsoleServer, tmp_path: Path, *, width: int, height: int,
    what: str,
) -> Iterator[Console]:
    """A fresh browser context's page of ``server``; it must log no error by its end."""
    context = browser.new_context(viewport={"width": width, "height": height})
    opened = Console(context.new_page(), server, tmp_path)
    try:
        yield opened
    finally:
        context.close()
    assert opened.problems == [], f"{what} logged errors"


@pytest.fixture
def console(
    browser: Browser, console_server: ConsoleServer, tmp_path: Path
) -> Iterator[Console]:
    with watched_page(browser, console_server, tmp_path, width=1280, height=900,
                      what="the console") as opened:
        yield opened


def record_consents(server: ConsoleServer, *consents: tuple[str, str, str, int]) -> None:
    """Pending consents ``(server, node, authorization page, minutes after now)`` in the
    server's store, as a node's background flow records them when an MCP server wants the
    authorization-code grant (tests/mcp/test_operator_consent.py runs that flow for real)."""
    url = f"sqlite+aiosqlite:///{Path(server.record).parent / 'v.db'}"
    now = datetime.datetime.now(datetime.UTC)

    async def record() -> None:
        store = Store.open(url)
        try:
            for name, node, page, minutes in consents:
                await SqlConsentRepository(store).open(PendingConsent(
                    id=f"cns_{name}_{node}", server=name, node_id=node, authorization_url=page,
                    status="pending", created_at=now + datetime.timedelta(minutes=minutes),
                    expires_at=now + datetime.timedelta(minutes=15),
                ), f"{name}-{node}".ljust(64, "0"))
        finally:
            await store.close()

    # A thread of its own: Playwright's sync API may be running an event loop in this one.
    with ThreadPoolExecutor(max_workers=1) as worker:
        worker.submit(anyio.run, record).result()
