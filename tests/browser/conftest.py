"""Browser-test fixtures: the real server as a subprocess on a free port, and headless Chromium
(the system build, driven by Playwright) whose fake microphone plays a WAV file."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Self

import pytest
import yaml
from playwright.sync_api import BrowserContext, Page, sync_playwright

from tests.support.servers import READY_LINE, ServerProcess, free_port

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("VOCERO_CHROMIUM", "/usr/bin/chromium")
STARTUP_TIMEOUT_S = 60.0
CHROMIUM_ARGS = [
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

OpenPage = Callable[..., Page]


class SimServer(ServerProcess):
    """``python -m vocero serve --runners sim`` (and ``flags``); its output is kept for failure
    messages. ``url`` is http until it announces where it listens (https with TLS flags)."""

    def __init__(self, workdir: Path, script: dict[str, Any], flags: Sequence[str] = ()) -> None:
        workdir.mkdir(parents=True)
        sim_script = workdir / "sim.yaml"
        sim_script.write_text(yaml.safe_dump(script))
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        super().__init__("vocero serve", [
            sys.executable, "-m", "vocero", "serve", "--runners", "sim",
            "--port", str(port), "--db", f"sqlite+aiosqlite:///{workdir / 'v.db'}",
            "--sim-script", str(sim_script), *flags,
        ], port=port, ready_line=READY_LINE, cwd=REPO)  # fmt: skip

    def wait_ready(self, timeout_s: float = 60.0) -> Self:
        super().wait_ready(timeout_s)
        self.url = self.announced.removeprefix(READY_LINE)  # http://... or https://...
        return self

    def log_tail(self, lines: int = 40) -> str:
        return self.tail(lines)


StartServer = Callable[..., SimServer]


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    """Starts a sim server with the given SPEC §6 script (and ``vocero serve`` flags) and waits
    until it listens."""
    servers: list[SimServer] = []

    def start(script: dict[str, Any], *flags: str) -> SimServer:
        servers.append(SimServer(tmp_path / f"server-{len(servers)}", script, flags))
        servers[-1].spawn().wait_ready(STARTUP_TIMEOUT_S)
        return servers[-1]

    yield start
    for server in servers:
        server.stop(grace_s=10)


@pytest.fixture
def open_page(tmp_path: Path) -> Iterator[OpenPage]:
    """Launches headless Chromium (fresh profile) and returns a blank page; ``fake_audio`` is a
    WAV file the fake microphone plays, in a loop (without one, Chromium's fake device beeps);
    ``home`` is the browser's ``HOME`` (its NSS certificate database is ``home/.pki/nssdb``)."""
    if not Path(CHROMIUM).exists() and shutil.which(CHROMIUM) is None:
        pytest.fail(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set VOCERO_CHROMIUM)")
    contexts: list[BrowserContext] = []
    with sync_playwright() as playwright:

        def open_(fake_audio: Path | None = None, home: Path | None = None) -> Page:
            args = list(CHROMIUM_ARGS)
            if fake_audio is not None:
                args.append(f"--use-file-for-fake-audio-capture={fake_audio}")
            context = playwright.chromium.launch_persistent_context(
                tmp_path / f"chromium-profile-{len(contexts)}",  # a fresh --user-data-dir
                executable_path=CHROMIUM,
                headless=True,
                args=args,
                viewport={"width": 900, "height": 700},
                env={**os.environ, "HOME": str(home)} if home is not None else None,
            )
            contexts.append(context)
            return context.pages[0] if context.pages else context.new_page()

        yield open_
        for context in contexts:
            context.close()
