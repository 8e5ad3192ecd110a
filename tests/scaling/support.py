"""Real processes for the scale-out tests: ``vocero serve`` on a shared PostgreSQL, the fixture
appointments server (recording every call, its state in a file), a private PostgreSQL cluster to
restart, and a protocol client over a real WebSocket.

Waiting is on readiness lines and on what the processes answer (``tests/support/servers.py``):
``vocero listening on`` on standard output, then ``/readyz`` polled with a deadline.
Everything listens on loopback.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets.sync.client as ws_client
import yaml
from starlette.websockets import WebSocketDisconnect
from websockets.exceptions import ConnectionClosed

from tests.support.servers import READY_LINE, RecordingServer, ServerProcess, free_port
from tests.support.wsclient import ProtocolClient
from vocero.app.settings import REPO_ROOT
from vocero.contracts.domain import Caller

ADMIN_TOKEN = "op-admin-token-scaling"
ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}
PG_SCRIPT = REPO_ROOT / "scripts" / "pg.sh"
SCRIPT: dict[str, Any] = {
    "tts": {"ms_per_char": 2},
    "llm": [
        {"match": r"^(yes|yeah|go ahead)\b", "intent": "confirm"},
        {"match": r"list my appointments", "tool": "appointments.list",
         "reply": "I found your appointments."},
        {"match": r"move my appointment (?P<apt>[\w-]+) to (?P<day>\w+) at (?P<at>\w+)",
         "tool": "appointments.reschedule",
         "arguments": {"appointment_id": "{apt}", "new_date": "{day}", "new_time": "{at}"},
         "reply": "{result.summary}"},
        {"match": r"what did you say", "reply": "I said: {last_assistant}"},
        {"match": r"tell me a story", "reply": "Once upon a time there was a very long story. "
         "It went on for quite a while, with many words in it. And then it ended."},
        {"match": ".*", "reply": "I can help with appointments."},
    ],
}
CALLERS = ("alice", "bob", "frank", "grace")
"""Callers of tenant acme allowed to reschedule (tokens ``<name>-token``)."""


# ------------------------------------------------------------------------ the MCP server


@dataclass
class Appointments(RecordingServer):
    """The fixture appointments server with appointments of its own and optional delays."""

    name = "appointments"
    delays: str = ""

    def start(self, appointments: int = 4) -> None:
        if not self.state.exists():
            seed = {f"APT-{2001 + i}": {
                "appointment_id": f"APT-{2001 + i}", "tenant": "acme", "date": "2026-12-03",
                "time": "10:00", "timezone": "Europe/Madrid", "service": "Boiler inspection",
                "status": "scheduled", "version": 1} for i in range(appointments)}
            self.state.write_text(json.dumps({"appointments": seed, "receipts": {}}))
        self.spawn({"VOCERO_MCP_DELAY_MS": self.delays})

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        lines = [json.loads(line) for line in self.record.read_text().splitlines() if line]
        return [line for line in lines if tool is None or line["tool"] == tool]

    def state_data(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.state.read_text())
        return data

    def receipts(self) -> dict[str, Any]:
        known: dict[str, Any] = self.state_data()["receipts"]
        return known


# ----------------------------------------------------------------------------- config


@dataclass
class Config:
    """Profiles, identities and the simulator script of one test."""

    folder: Path
    appointments: Appointments
    subjects: dict[str, str] = field(default_factory=dict)
    script: dict[str, Any] = field(default_factory=lambda: SCRIPT)
    """The simulator script (default :data:`SCRIPT`)."""
    profile: dict[str, Any] = field(default_factory=dict)
    """Fields of the demo profile to change (e.g. ``word_budget``)."""

    def write(self, *, server_concurrency: int = 8) -> None:
        profile = yaml.safe_load((REPO_ROOT / "fixtures" / "profiles" / "demo.yaml").read_text())
        profile["mcp_servers"] = {"appointments": {"url": self.appointments.url,
                                                   "max_concurrency": server_concurrency}}
        profile["tools"] = [t for t in profile["tools"] if t["server"] == "appointments"]
        profile.pop("claims", None)
        profile.update(self.profile)
        (self.folder / "profiles").mkdir(exist_ok=True)
        (self.folder / "profiles" / "demo.yaml").write_text(yaml.safe_dump(profile))
        callers = []
        for name in CALLERS:
            self.subjects[name] = f"{name}-{uuid.uuid4().hex[:12]}"
            callers.append({"token": f"{name}-token", "subject": self.subjects[name],
                            "tenant": "acme", "roles": ["customer"],
                            "scopes": ["appointments:read", "appointments:write"],
                            "locale": "en-US", "timezone": "Europe/Madrid"})
        (self.folder / "identities.yaml").write_text(yaml.safe_dump({"callers": callers}))
        (self.folder / "script.yaml").write_text(yaml.safe_dump(self.script))

    def subject_ref(self, name: str) -> str:
        return Caller(token="x", subject=self.subjects[name], tenant="acme").subject_ref

    def flags(self) -> list[str]:
        return ["--profiles", str(self.folder / "profiles"),
                "--identities", str(self.folder / "identities.yaml"),
                "--sim-script", str(self.folder / "script.yaml")]


# ------------------------------------------------------------------------------ serve


class Vocero(ServerProcess):
    """``python -m vocero serve --runners sim`` on a port of its own, started at once."""

    def __init__(self, folder: Path, db: str, flags: list[str], *, name: str = "vocero",
                 env: dict[str, str] | None = None) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "vocero", "serve", "--runners", "sim",
                   "--port", str(port), "--db", db, "--operator-token", ADMIN_TOKEN,
                   "--log-format", "json", "--followups-tick-s", "0", *flags]
        super().__init__(name, command, port=port, ready_line=READY_LINE, ready=self._ready,
                         env=env, log=folder / f"{name}-{port}.log")
        self.spawn()

    def _ready(self) -> bool:
        """``/readyz`` answers 200: runners warm, MCP servers tried."""
        try:
            with urllib.request.urlopen(self.url + "/readyz", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def start(self) -> Vocero:
        """Listening, then ready (the process was started by the constructor)."""
        return self.wait_ready(timeout_s=90)

    def rss_mb(self) -> float:
        """The process's resident memory now (``VmRSS`` of ``/proc``), in MiB."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")

    def get(self, path: str) -> Any:
        request = urllib.request.Request(self.url + path, headers=ADMIN)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def events(self, name: str) -> list[dict[str, Any]]:
        """This process's JSON log lines of one event (it writes its log file itself)."""
        out = []
        for line in self.log.read_text().splitlines():
            if line.startswith("{") and f'"{name}"' in line:
                event = json.loads(line)
                if event.get("event") == name:
                    out.append(event)
        return out


# ------------------------------------------------------------------------- WebSocket


class _Socket:
    """A real WebSocket seen through the interface ``ProtocolClient`` drives."""

    def __init__(self, connection: ws_client.ClientConnection, timeout_s: float) -> None:
        self.connection = connection
        self.timeout_s = timeout_s

    def send_text(self, text: str) -> None:
        self.connection.send(text)

    def receive_text(self) -> str:
        try:
            message = self.connection.recv(timeout=self.timeout_s)
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd is not None else 1006
            raise WebSocketDisconnect(code) from None
        assert isinstance(message, str)
        return message


SMALL_RECEIVE_BUFFER = 4096
"""Bytes of kernel receive buffer of a :func:`client` with ``small_buffers``."""


def _small_buffer_socket(node: Vocero) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_RECEIVE_BUFFER)
    sock.settimeout(15)
    sock.connect(("127.0.0.1", node.port))
    return sock


@contextmanager
def client(node: Vocero, token: str, *, resume_token: str = "", timeout_s: float = 30.0,
           small_buffers: bool = False,
           kind: Callable[[Any], ProtocolClient] = ProtocolClient) -> Iterator[ProtocolClient]:
    """A caller on ``node``: connected (or resumed), its frames read with a deadline each.
    ``small_buffers``: a 4 KiB kernel receive buffer and at most two frames queued in the
    client library, so that a caller who stops reading stops the TCP window within a few
    frames (the library stops reading the socket while its queue is full). ``kind``: the
    :class:`ProtocolClient` (sub)class that drives it."""
    url = node.url.replace("http", "ws") + "/v1/realtime"
    with ws_client.connect(url, open_timeout=15, max_size=2**22,
                           sock=_small_buffer_socket(node) if small_buffers else None,
                           max_queue=2 if small_buffers else 16) as connection:
        pc = kind(_Socket(connection, timeout_s))
        payload = {"token": token} | ({"resume_token": resume_token} if resume_token else {})
        pc.send("session.connect.v1", payload)
        applied = pc.expect("session.configuration_applied.v1")
        pc.session_id = applied["data"]["payload"]["session_id"]
        pc.expect("session.state.v1", lambda p: p["state"] == "LISTENING")
        yield pc


def applied(pc: ProtocolClient) -> dict[str, Any]:
    """The caller's last ``session.configuration_applied.v1`` payload."""
    return pc.of_type("session.configuration_applied.v1")[-1]


def say(pc: ProtocolClient, text: str) -> dict[str, Any]:
    pc.send("input.text.v1", {"text": text})
    return pc.expect("response.completed.v1")["data"]["payload"]


def ask_to_move(pc: ProtocolClient, appointment: str, day: str = "friday") -> dict[str, Any]:
    pc.send("input.text.v1", {"text": f"move my appointment {appointment} to {day} at 3pm"})
    question = pc.expect("tool.confirmation_required.v1")["data"]["payload"]
    pc.expect("response.completed.v1")
    return dict(question)


def status_of(pc: ProtocolClient, wanted: str) -> dict[str, Any]:
    payload: dict[str, Any] = pc.expect("tool.status.v1", lambda p: p["status"] == wanted)[
        "data"]["payload"]
    return payload


# ------------------------------------------------------------------------ PostgreSQL


@dataclass
class Cluster:
    """A PostgreSQL cluster of the test's own (``scripts/pg.sh``), so it can be restarted."""

    folder: Path
    port: int = field(default_factory=free_port)
    url: str = ""

    def start(self) -> str:
        done = subprocess.run(["bash", str(PG_SCRIPT), "start", str(self.folder),
                               str(self.port)], capture_output=True, text=True, timeout=120,
                              check=True)
        self.url = done.stdout.strip().splitlines()[-1]
        return self.url

    def stop(self) -> None:
        subprocess.run(["bash", str(PG_SCRIPT), "stop", str(self.folder)], capture_output=True,
                       timeout=120, check=False)


@contextmanager
def own_cluster() -> Iterator[Cluster]:
    """A running cluster of the test's own, removed afterwards. Its folder is made directly
    under the system's temporary directory: run as root, the server runs as ``postgres``, which
    could not reach a folder inside pytest's (private) ``tmp_path``."""
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="vocero-test-pg-")))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(cluster.folder, ignore_errors=True)
