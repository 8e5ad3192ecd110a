"""The server ``vocero eval`` starts: its operator token reaches it whatever its first character,
and never on the command line (where every local user can read it)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.polling import wait_for
from vocero.evals import server as eval_server

pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[2]


def sim_server(work: Path) -> eval_server.Server:
    """The server on the simulator, the fixture profiles and identities, and the eval script."""
    return eval_server.Server(
        runners="sim", profiles=REPO / "fixtures" / "profiles",
        identities=REPO / "fixtures" / "identities.yaml", work=work,
        sim_script=str(REPO / "fixtures" / "eval" / "sim.yaml"),
    )


def test_a_token_starting_with_a_dash_starts_the_server_and_stays_off_its_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eval_server.secrets, "token_urlsafe", lambda n: "-starts-with-a-dash")
    server = sim_server(tmp_path)
    try:
        server.wait_ready()
        command = Path(f"/proc/{server.process.pid}/cmdline").read_bytes()
        assert b"-starts-with-a-dash" not in command
        assert server.get("/v1/sessions") == [], "the token is the operator's: listed, empty"
    finally:
        server.stop()


def test_what_the_server_logs_while_a_scenario_runs_is_kept_for_its_report(
    tmp_path: Path,
) -> None:
    """A 1011 close says nothing on the wire: the server's warnings and errors of the
    scenario's time are attached to its result, and its whole log is kept."""
    server = sim_server(tmp_path)
    try:
        server.wait_ready()
        mark = server.lines
        assert server.problems_since(mark) == []
        refused = httpx.get(f"{server.base}/v1/realtime", headers={
            "Origin": "https://evil.example", "Connection": "Upgrade", "Upgrade": "websocket",
            "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
        assert refused.status_code == 403
        wait_for("the warning in the server's log", lambda: server.problems_since(mark),
                 timeout_s=10.0)
    finally:
        server.stop()
    problems = server.problems_since(mark)
    assert len(problems) == 1 and "relay.origin_refused" in problems[0]
    assert "relay.origin_refused" in server.log_path.read_text(encoding="utf-8")
    assert "vocero listening on" in server.log_path.read_text(encoding="utf-8")
    assert server.problems_since(server.lines) == []
