"""The command line as a user runs it: serve (ready line, health, SIGTERM drain), db, schema."""

from __future__ import annotations

import argparse
import json
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import websockets.sync.client as ws_client
from websockets.exceptions import ConnectionClosed

from tests.support.servers import READY_LINE, ServerProcess, free_port
from tests.support.wsclient import envelope
from vocero.app.commands.schema import schema_drift
from vocero.app.settings import add_serve_arguments, settings_from


def drain(conn: ws_client.ClientConnection) -> None:
    for _ in range(20):
        conn.recv(timeout=5)


@pytest.mark.process
@pytest.mark.slow
def test_serve_announces_answers_health_and_drains_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    server = ServerProcess("vocero serve", [
        sys.executable, "-m", "vocero", "serve", "--runners", "sim", "--port", str(port),
        "--db", f"sqlite:///{tmp_path}/v.db", "--log-format", "json",
    ], ready_line=READY_LINE, log=tmp_path / "serve.log")
    with server:
        assert server.lines[0].strip() == f"vocero listening on http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            assert json.load(response) == {"status": "ok"}
        with ws_client.connect(f"ws://127.0.0.1:{port}/v1/realtime", open_timeout=10) as conn:
            conn.send(envelope("session.connect.v1", {"token": "demo-token"}, sequence=1))
            applied = json.loads(conn.recv(timeout=30))
            assert applied["type"] == "vocero.session.configuration_applied.v1"
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(timeout=10) == 0
            with pytest.raises(ConnectionClosed):
                drain(conn)
    rows = (
        sqlite3.connect(tmp_path / "v.db")
        .execute("select state, closed_at is not null from sessions")
        .fetchall()
    )
    assert rows == [("CLOSING", 1)]


@pytest.mark.process
def test_db_upgrade_creates_the_schema(tmp_path: Path) -> None:
    db = tmp_path / "fresh.db"
    result = subprocess.run(
        [sys.executable, "-m", "vocero", "db", "upgrade", "--db", f"sqlite:///{db}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    tables = {r[0] for r in sqlite3.connect(db).execute("select name from sqlite_master")}
    assert {"sessions", "audit_events", "operations", "outbox", "tool_pins"} <= tables


@pytest.mark.process
def test_bad_profile_fails_fast_naming_file_and_field(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "broken.yaml").write_text(
        "id: x\nversion: 1\nmatch: {tenant: acme}\nmax_lead_ms: lots\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "vocero",
            "serve",
            "--runners",
            "sim",
            "--profiles",
            str(profiles),
            "--db",
            f"sqlite:///{tmp_path}/v.db",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "broken.yaml" in result.stderr and "max_lead_ms" in result.stderr


def test_committed_schemas_match_the_code() -> None:
    assert schema_drift() == []


@pytest.mark.process
def test_schema_check_fails_when_a_schema_is_stale(tmp_path: Path) -> None:
    target = tmp_path / "schemas"
    subprocess.run(
        [sys.executable, "-m", "vocero", "schema", "--out", str(target)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    stale = target / "vocero.input.text.v1.json"
    stale.write_text(stale.read_text().replace('"text"', '"txt"'))
    assert schema_drift(str(target)) == ["vocero.input.text.v1.json"]
    result = subprocess.run(
        [sys.executable, "-m", "vocero", "schema", "--check", "--out", str(target)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1


@pytest.mark.process
@pytest.mark.slow
def test_bench_prints_only_json_on_stdout() -> None:
    """Benchmarks start runtimes that log; none of it may reach the JSON on standard output."""
    result = subprocess.run(
        [sys.executable, "-m", "vocero", "bench", "mcp", "--iterations", "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["benchmark"] == "mcp" and report["calls"] == 5


def test_the_question_timeout_is_a_serve_flag_and_an_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def parsed(*argv: str) -> float:
        parser = argparse.ArgumentParser()
        add_serve_arguments(parser)
        return settings_from(parser.parse_args(list(argv))).mcp_input_timeout_s

    assert parsed() == 60.0
    assert parsed("--mcp-input-timeout-s", "20") == 20.0
    monkeypatch.setenv("VOCERO_MCP_INPUT_TIMEOUT_S", "45")
    assert parsed() == 45.0
