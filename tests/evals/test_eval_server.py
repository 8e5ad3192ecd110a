"""The server ``vocero eval`` starts: its operator token reaches it whatever its first character,
and never on the command line (where every local user can read it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vocero.evals import server as eval_server

REPO = Path(__file__).resolve().parents[2]


def test_a_token_starting_with_a_dash_starts_the_server_and_stays_off_its_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eval_server.secrets, "token_urlsafe", lambda n: "-starts-with-a-dash")
    server = eval_server.Server(
        runners="sim", profiles=REPO / "fixtures" / "profiles",
        identities=REPO / "fixtures" / "identities.yaml", work=tmp_path,
        sim_script=str(REPO / "fixtures" / "eval" / "sim.yaml"),
    )
    try:
        server.wait_ready()
        command = Path(f"/proc/{server.process.pid}/cmdline").read_bytes()
        assert b"-starts-with-a-dash" not in command
        assert server.get("/v1/sessions") == [], "the token is the operator's: listed, empty"
    finally:
        server.stop()
