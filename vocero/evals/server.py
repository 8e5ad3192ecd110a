"""The server under test: profiles rewritten through the tap, one ``vocero serve`` subprocess."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import httpx
import yaml

from vocero.evals.proxy import RecordingProxy

READY_TIMEOUT_S = 180.0
"""How long the server may take to listen and warm its runners (CPU models load in minutes)."""


class ServerError(RuntimeError):
    """The server did not start; the message carries the end of its output."""


def tap_profiles(source: Path, target: Path, taps: Path,
                 proxies: list[RecordingProxy] | None = None) -> dict[str, set[tuple[str, str]]]:
    """Copy the profile folder to ``target`` with every stdio server wrapped in the tap.

    Relative server paths (``./``, ``../``) are resolved against the original profile file and
    ``python`` is this interpreter, as the server does itself. Streamable-HTTP servers are left as
    through a :class:`RecordingProxy` on loopback when ``proxies`` collects them (else left as they
are, their calls read from Vocero's own records, docs/eval.md). Returns each
    model-facing tool name's (server, server tool) pairs, so an expectation may name either."""
    shutil.copytree(source, target)
    taps.mkdir(parents=True, exist_ok=True)
    aliases: dict[str, set[tuple[str, str]]] = {}
    proxies_by_url: dict[str, RecordingProxy] = {}
    for original in sorted(source.glob("*.y*ml")):
        data = yaml.safe_load(original.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            continue
        for tool in data.get("tools") or []:
            if isinstance(tool, dict) and "name" in tool:
                aliases.setdefault(str(tool["name"]), set()).add(
                    (str(tool.get("server", "")), str(tool.get("resolves_to", tool["name"]))))
        servers = data.get("mcp_servers") or {}
        for name, spec in servers.items():
            if not isinstance(spec, dict):
                continue
            if spec.get("url") and proxies is not None:
                proxy = proxies_by_url.get(str(spec["url"]))
                if proxy is None:
                    (taps / f"{name}.jsonl").touch()
                    proxy = RecordingProxy(str(spec["url"]), str(taps / f"{name}.jsonl"),
                                           str(name)).start()
                    proxies_by_url[str(spec["url"])] = proxy
                    proxies.append(proxy)
                spec["url"] = proxy.url
                continue
            if not spec.get("command"):
                continue
            command = str(spec["command"])
            if command in ("python", "python3"):
                command = sys.executable
            args = [_resolve(original.parent, str(arg)) for arg in spec.get("args") or []]
            record = taps / f"{name}.jsonl"  # a server shared by profiles is one server
            record.touch()
            spec["command"] = sys.executable
            spec["args"] = ["-m", "vocero.evals.tap", "--record", str(record), "--server",
                            str(name), "--", command, *args]
        (target / original.name).write_text(yaml.safe_dump(data, sort_keys=False),
                                            encoding="utf-8")
    return aliases


def _resolve(folder: Path, arg: str) -> str:
    if arg.startswith(("./", "../")):
        return str((folder / arg).resolve())
    return arg


def read_taps(taps: Path) -> list[dict[str, Any]]:
    """Every tools/call the taps recorded so far, in the order they were answered."""
    records: list[dict[str, Any]] = []
    for file in sorted(taps.glob("*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                records.append(json.loads(line))
    return sorted(records, key=lambda r: r.get("at") or 0.0)


_LEVEL = re.compile(r"\[(warning|error|critical|exception)\s*\]"
                    r"|\"level\":\s*\"(warning|error|critical)\"")
"""A warning or error event of the server's log, in the console or the JSON format."""
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Group)\b")


def _continues(line: str) -> bool:
    """A line of a traceback printed outside the log (indented frames, the chained ones, and
    the exception's own line)."""
    return line.startswith((" ", "\t", "During handling", "The above")) or bool(
        _RAISED.match(line)) or not line.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """One ``vocero serve`` for a group of scenarios (the same sim script)."""

    def __init__(self, *, runners: str, profiles: Path, identities: Path, work: Path,
                 sim_script: str = "", telephony: bool = False) -> None:
        self.port = free_port()
        self.token = secrets.token_urlsafe(24)
        self.base = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}/v1/realtime"
        self.twilio_auth_token = secrets.token_urlsafe(24) if telephony else ""
        """``--transport twilio``: the phone leg's signing secret, generated for this run."""
        self.output: deque[str] = deque(maxlen=60)
        self.log_path = work / "server.log"
        """Everything the server printed (its structlog events), kept for the report."""
        self.lines = 0
        """How many lines it has printed so far (see :meth:`problems_since`)."""
        self._problems: list[tuple[int, str]] = []
        command = [
            sys.executable, "-m", "vocero", "serve", "--runners", runners,
            "--profiles", str(profiles), "--identities", str(identities),
            "--db", f"sqlite:///{work / 'vocero.db'}", "--host", "127.0.0.1",
            "--port", str(self.port),
        ]
        if sim_script:
            command += ["--sim-script", sim_script]
        # The token through the environment: on the command line it would be visible to every
        # local user, and one starting with "-" read as an option (serve exits 2).
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "VOCERO_OPERATOR_TOKEN": self.token}
        if telephony:  # the carrier reaches this server on loopback; signatures are over it
            command += ["--public-url", self.base]
            env["VOCERO_TWILIO_AUTH_TOKEN"] = self.twilio_auth_token
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            cwd=str(work))
        self._listening = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.process.stdout is not None
        in_traceback = False
        with self.log_path.open("w", encoding="utf-8") as log:
            for line in self.process.stdout:
                log.write(line)
                log.flush()
                self.lines += 1
                self.output.append(line.rstrip())
                problem = line.startswith("Traceback") or bool(_LEVEL.search(line))
                in_traceback = problem or (in_traceback and _continues(line))
                if in_traceback:  # an error event's traceback follows it on indented lines
                    self._problems.append((self.lines, line.rstrip()))
                if "vocero listening on" in line:
                    self._listening.set()

    def problems_since(self, mark: int, limit: int = 80) -> list[str]:
        """The warnings, errors and tracebacks the server printed after line ``mark``: why a
        session was closed with 1011, for instance, which the wire does not say."""
        return [line for number, line in list(self._problems) if number > mark][:limit]

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while not self._listening.wait(0.1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise ServerError(self._failure("did not start listening"))
        with httpx.Client(timeout=5.0) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    break
                try:
                    if client.get(f"{self.base}/readyz").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)  # polling the server's readiness
        raise ServerError(self._failure("never became ready (GET /readyz)"))

    def _failure(self, what: str) -> str:
        tail = "\n".join(f"  {line}" for line in self.output)
        return f"vocero serve {what} (exit {self.process.poll()}):\n{tail}"

    def get(self, route: str, **params: str) -> list[dict[str, Any]]:
        """The ``items`` of an operator API list (docs/operators.md "Paging")."""
        items: list[dict[str, Any]] = self.get_json(route, **params).get("items", [])
        return items

    def get_json(self, route: str, **params: str) -> dict[str, Any]:
        response = httpx.get(f"{self.base}{route}", params=params, timeout=10.0,
                             headers={"Authorization": f"Bearer {self.token}"})
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
