"""``pip install vocero && vocero serve`` from a wheel, outside the checkout (issue 31).

The wheel is built from a copy of the sources (so nothing stale in a ``build/`` directory and
nothing else of the checkout can leak in), installed into a fresh virtual environment that
borrows only the third-party packages of this one, and started from an empty directory with its
defaults: the demo profile, identities, MCP servers and migrations must all come from the wheel.
One typed turn then gets a spoken answer, and the order server the demo profile starts answered
the question that was asked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import websockets.sync.client as ws_client

from tests.support.servers import free_port
from tests.support.wsclient import envelope

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("vocero", "migrations", "fixtures/profiles", "fixtures/mcp_servers",
           "fixtures/identities.yaml", "setup.py", "pyproject.toml", "README.md")


def _build_wheel(tmp: Path) -> Path:
    source = tmp / "src"
    for name in SOURCES:
        origin, target = ROOT / name, source / name
        if origin.is_dir():
            shutil.copytree(origin, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target)
    dist = tmp / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(dist), str(source)],
                   check=True, timeout=300)
    (wheel,) = dist.glob("vocero-*.whl")
    return wheel


def _install(tmp: Path, wheel: Path) -> Path:
    env_dir = tmp / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    return env_dir


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.process
@pytest.mark.timeout(600)
def test_an_installed_wheel_serves_the_demo_from_an_empty_directory(tmp_path: Path) -> None:
    env_dir = _install(tmp_path, _build_wheel(tmp_path))
    home = tmp_path / "elsewhere"
    home.mkdir()
    # as a user's shell would be: no checkout on the path, no Vocero settings
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VOCERO_") and k != "PYTHONPATH"}
    located = subprocess.run([str(env_dir / "bin" / "python"), "-c",
                              "import vocero; print(vocero.__file__)"],
                             cwd=home, env=env, capture_output=True, text=True, check=True)
    assert Path(located.stdout.strip()).is_relative_to(env_dir), located.stdout

    port = free_port()
    proc = subprocess.Popen(
        [str(env_dir / "bin" / "vocero"), "serve", "--port", str(port)],
        cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == f"vocero listening on http://127.0.0.1:{port}", (
            line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        with ws_client.connect(f"ws://127.0.0.1:{port}/v1/realtime", open_timeout=30) as conn:
            conn.send(envelope("session.connect.v1", {"token": "demo-token"}, sequence=1))
            applied = json.loads(conn.recv(timeout=60))
            assert applied["type"] == "vocero.session.configuration_applied.v1", applied
            conn.send(envelope("input.text.v1", {"text": "Where is my order C19?"},
                               sequence=2, session_id=applied["data"]["session_id"]))
            said, audio, completed = "", 0, None
            while completed is None:
                frame = conn.recv(timeout=120)
                if isinstance(frame, bytes):
                    audio += len(frame)
                    continue
                event = json.loads(frame)
                if event["type"] == "vocero.response.text_delta.v1":
                    said += event["data"]["payload"]["text"]
                elif event["type"] == "vocero.response.audio_delta.v1":
                    audio += 1
                elif event["type"] == "vocero.response.completed.v1":
                    completed = event["data"]["payload"]
        assert completed["status"] == "completed", completed
        assert "C19" in said.replace(" ", "") or "c19" in said.lower().replace(" ", ""), said
        assert audio > 0, "the answer was not spoken"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert (home / "var" / "vocero.db").is_file()  # the default store, migrated from the wheel
