"""Versioned profiles end to end (issue 32): a real ``vocero serve`` and real WebSockets.

An operator edits a profile: new sessions get the new version (``configuration_applied``'s
``profile_version``). They roll back with ``vocero profiles rollback`` and through the operator
API: new sessions get the old version at once, without a restart, while a session started
earlier keeps the version it started with (on the wire and in its record). The audit records
both rollbacks with who did them. Runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import websockets.sync.client as ws_client
import yaml

from tests.support.pg import BACKENDS, fresh_db
from tests.support.servers import READY_LINE, ServerProcess, free_port
from tests.support.wsclient import envelope
from vocero.app.settings import REPO_ROOT

pytestmark = pytest.mark.process

ADMIN, OWNER, SECURITY = "admin-token-32", "owner-token-32", "security-token-32"
OPERATORS = [
    {"token": ADMIN, "name": "ada", "roles": ["admin"]},
    {"token": OWNER, "name": "bo", "roles": ["business_owner"]},
    {"token": SECURITY, "name": "sec", "roles": ["security"]},
]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/vocero.db"
    else:
        with fresh_db() as url:
            yield url


class Server:
    def __init__(self, base: str) -> None:
        self.base = base

    def call(self, method: str, path: str, token: str = ADMIN,
             body: dict[str, Any] | None = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.base + path, method=method, headers={"authorization": f"Bearer {token}",
                                                      "content-type": "application/json"},
            data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)

    @contextmanager
    def session(self, token: str = "demo-token") -> Iterator[tuple[ws_client.ClientConnection,
                                                                    dict[str, Any]]]:
        url = self.base.replace("http", "ws", 1) + "/v1/realtime"
        with ws_client.connect(url, open_timeout=10) as conn:
            conn.send(envelope("session.connect.v1", {"token": token}, sequence=1))
            frame = json.loads(conn.recv(timeout=30))
            assert frame["type"] == "vocero.session.configuration_applied.v1", frame
            yield conn, frame["data"]["payload"]


def profile_copy(tmp_path: Path) -> Path:
    """The shipped profiles, in a directory the test may edit (their MCP servers linked)."""
    fixtures = tmp_path / "fixtures"
    shutil.copytree(REPO_ROOT / "fixtures" / "profiles", fixtures / "profiles")
    (fixtures / "mcp_servers").symlink_to(REPO_ROOT / "fixtures" / "mcp_servers")
    return fixtures / "profiles"


@contextmanager
def serving(profiles: Path, db: str, tmp_path: Path) -> Iterator[Server]:
    operators = tmp_path / "operators.yaml"
    operators.write_text(yaml.safe_dump(OPERATORS))
    command = [sys.executable, "-m", "vocero", "serve", "--runners", "sim", "--port",
               str(free_port()), "--profiles", str(profiles), "--db", db, "--operators",
               str(operators)]
    with ServerProcess("vocero serve", command, ready_line=READY_LINE,
                       log=tmp_path / "serve.log") as process:
        assert process.announced.startswith("vocero listening on http://"), process.announced
        yield Server(process.announced.removeprefix("vocero listening on "))


def cli(*args: str) -> tuple[int, Any]:
    done = subprocess.run([sys.executable, "-m", "vocero", "profiles", *args],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, json.loads(done.stdout)


def edit(profile: Path, version: int, words: str) -> None:
    data = yaml.safe_load(profile.read_text())
    data["version"] = version
    data["instructions"] = f"{data.get('instructions', '')} {words}"
    profile.write_text(yaml.safe_dump(data, sort_keys=False))


def effective(payload: dict[str, Any]) -> str:
    return str(payload["effective"]["profile_version"])


def test_edit_then_roll_back_by_cli_and_api(tmp_path: Path, db_url: str) -> None:
    profiles = profile_copy(tmp_path)
    demo = profiles / "demo.yaml"
    with serving(profiles, db_url, tmp_path) as server, ExitStack() as held:
        first, opened = held.enter_context(server.session())
        assert effective(opened) == "1"

        edit(demo, 2, "Always greet the caller by name.")
        _held_open, on_two = held.enter_context(server.session())
        assert effective(on_two) == "2"
        status, history = server.call("GET", "/v1/profiles/demo/versions")
        assert status == 200
        assert [(i["version"], i["revision"], i["active"]) for i in history["items"]] == [
            ("1", 1, False), ("2", 2, True)]
        assert history["items"][0]["content_hash"] != history["items"][1]["content_hash"]

        code, rolled = cli("rollback", "demo", "1", "--db", db_url)
        assert code == 0, rolled
        assert (rolled["version"], rolled["revision"], rolled["from_revision"]) == ("1", 1, 2)
        with server.session() as (_, after_cli):
            assert effective(after_cli) == "1"
        assert effective(on_two) == "2"
        status, record = server.call("GET", f"/v1/sessions/{on_two['session_id']}")
        assert status == 200 and record["profile"] == {"id": "demo", "version": "2"}

        edit(demo, 3, "Keep answers short.")
        with server.session() as (_, on_three):
            assert effective(on_three) == "3"
        assert server.call("POST", "/v1/profiles/demo/rollback", SECURITY,
                           {"version": "1"}) == (403, {"error": "forbidden"})
        status, rolled = server.call("POST", "/v1/profiles/demo/rollback", OWNER,
                                     {"version": "2", "reason": "bad greeting"})
        assert status == 200, rolled
        assert (rolled["version"], rolled["revision"], rolled["from_revision"]) == ("2", 2, 3)
        with server.session() as (_, after_api):
            assert effective(after_api) == "2"
        code, listing = cli("list", "--db", db_url)
        assert code == 0
        demo_head = next(i for i in listing["items"] if i["profile_id"] == "demo")
        assert (demo_head["version"], demo_head["change"], demo_head["changed_by"]) == (
            "2", "rollback", "bo")

        status, record = server.call("GET", f"/v1/sessions/{opened['session_id']}")
        assert record["profile"] == {"id": "demo", "version": "1"}
        first.close()

        status, audit = server.call("GET", "/v1/audit?limit=1000")
        assert status == 200 and audit["chain"]["ok"]
        rollbacks = [
            (e["actor"], e["data"]["via"], e["data"]["version"], e["data"]["from_revision"])
            for e in audit["items"] if e["kind"] == "profile.rolled_back"]
        assert len(rollbacks) == 2
        assert rollbacks[0][0].startswith("cli") and rollbacks[0][1:] == ("cli", "1", 2)
        assert rollbacks[1] == ("bo", "api", "2", 3)
        loads = [e["data"]["version"] for e in audit["items"] if e["kind"] == "profile.loaded"
                 and e["data"]["profile_id"] == "demo"]
        assert loads == ["1", "2", "3"]
        opened_versions = [e["data"]["profile_version"] for e in audit["items"]
                           if e["kind"] == "session.opened"]
        assert opened_versions == ["1", "2", "1", "3", "2"]


def test_bad_requests_change_nothing(tmp_path: Path, db_url: str) -> None:
    profiles = profile_copy(tmp_path)
    with serving(profiles, db_url, tmp_path) as server:
        assert server.call("POST", "/v1/profiles/demo/rollback", ADMIN, {"version": "9"}) == (
            400, {"error": {"code": "invalid_request", "field": "version",
                            "reason": "unknown_version"}})
        status, body = server.call("POST", "/v1/profiles/demo/rollback", ADMIN, {"wrong": 1})
        assert status == 400 and body["error"]["field"] in ("version", "wrong")
        assert server.call("POST", "/v1/profiles/nobody/rollback", ADMIN,
                           {"version": "1"})[0] == 404
        assert cli("rollback", "demo", "7", "--db", db_url) == (2, {"error": {
            "code": "invalid_request", "field": "version", "reason": "unknown_version"}})
        assert cli("history", "nobody", "--db", db_url)[0] == 2
        (profiles / "demo.yaml").write_text("id: demo\nversion: 2\nmax_lead_ms: lots\n")
        with server.session() as (_, payload):  # a broken edit: the current version serves
            assert effective(payload) == "1"
        with urllib.request.urlopen(server.base + "/metrics", timeout=10) as response:
            text = response.read().decode()
        assert "vocero_profile_reload_failures_total 1.0" in text
        code, listing = cli("history", "demo", "--db", db_url)
        assert code == 0 and [i["version"] for i in listing["items"]] == ["1"]
