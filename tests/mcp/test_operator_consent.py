"""An operator authorizes an MCP server in a browser, end to end through the real composition root:
the server wants the authorization-code grant; ``GET /v1/mcp/authorizations`` lists the page to
open; the authorization server sends the browser back to ``/oauth/mcp/callback``; the caller's
call, which failed at once before, then runs. Against the local authorization server and the
bookings server as its resource server; the consent is stored (SQLite) and audited."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from oauth_support import ENV, Servers, oauth_servers
from starlette.testclient import TestClient

from tests.support.apps import sim_app
from tests.support.wsclient import ProtocolClient

ADMIN = {"authorization": "Bearer op-admin-token"}
SCRIPT = {
    "tts": {"ms_per_char": 2},
    "llm": [
        {"match": r"slots on (?P<d>\w+)", "tool": "bookings.slots", "arguments": {"day": "{d}"}},
        {"match": ".*", "reply": "I can help with bookings."},
    ],
}


def _profile(servers: Servers) -> dict[str, Any]:
    return {
        "id": "bookings",
        "version": "1",
        "match": {"tenant": "acme"},
        "mcp_servers": {
            "bookings": {
                "url": servers.bookings.url,
                "oauth": {
                    "grant": "authorization_code",
                    "client_id": "vocero-gateway",
                    "client_secret_env": "BOOKINGS_CLIENT_SECRET",
                    "issuer": servers.issuer,
                    "scopes": ["bookings:read", "bookings:write"],
                    "redirect_uri": "http://testserver/oauth/mcp/callback",
                },
            }
        },
        "tools": [
            {
                "name": "bookings.slots",
                "server": "bookings",
                "resolves_to": "find_slots",
                "action_class": "read",
                "required_scopes": ["bookings:read"],
            }
        ],
    }


CALLER = {
    "token": "booker",
    "subject": "bob",
    "tenant": "acme",
    "roles": ["customer"],
    "scopes": ["bookings:read"],
}


def app(tmp_path: Path, servers: Servers) -> AbstractContextManager[TestClient]:
    return sim_app(tmp_path, _profile(servers), [CALLER], SCRIPT, operator_token="op-admin-token")


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client secret the profile names, in the environment as ``vocero serve`` reads it."""
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)


def _until(client: TestClient, waited: Any, *args: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(20):
            await waited(*args)

    assert client.portal is not None
    client.portal.call(bounded)


def _ask_for_slots(client: TestClient) -> dict[str, Any]:
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("booker")
        pc.send("input.text.v1", {"text": "what are the slots on friday"})
        pc.expect("response.completed.v1")
        statuses = [f["data"]["payload"] for f in pc.frames if f["type"].endswith("tool.status.v1")]
        return dict(statuses[-1])  # how the call ended


@pytest.mark.usefixtures("secret")
def test_an_operator_authorizes_a_server_in_a_browser_and_the_callers_call_then_runs(
    tmp_path: Path,
) -> None:
    with oauth_servers(tmp_path) as servers, app(tmp_path, servers) as client:
        runtime = client.app.state.runtime  # type: ignore[attr-defined]
        _until(client, runtime.consents.wait_requested, 1)
        assert client.get("/v1/mcp/authorizations").status_code == 401
        [pending] = client.get("/v1/mcp/authorizations", headers=ADMIN).json()["items"]
        assert pending["server"] == "bookings" and pending["node_id"] == runtime.node.id
        before = _ask_for_slots(client)  # fails at once: nobody waits for the operator
        assert (before["status"], before["reason_code"]) == ("rejected", "tool_unavailable")
        # the operator's browser: the authorization server approves and sends it back here
        response = httpx2.get(pending["authorization_url"], follow_redirects=False)
        back = urlsplit(response.headers["location"])
        assert back.netloc == "testserver" and back.path == "/oauth/mcp/callback"
        landed = client.get(f"{back.path}?{back.query}")
        assert landed.status_code == 200 and "bookings" in landed.text
        again = client.get(f"{back.path}?{back.query}")
        assert again.status_code == 400
        assert again.json()["error"]["code"] == "unknown_consent"
        connection = runtime.connections.connection("bookings")
        _until(client, connection.wait_listed, 1)
        after = _ask_for_slots(client)
        assert after["status"] == "committed", after
        assert client.get("/v1/mcp/authorizations", headers=ADMIN).json()["items"] == []
        audit = client.get("/v1/audit", headers=ADMIN).json()
    assert audit["chain"]["ok"]
    consent = [
        (e["kind"], e["data"].get("status"))
        for e in audit["items"]
        if e["kind"].startswith("mcp.oauth_consent")
    ]
    assert consent == [
        ("mcp.oauth_consent_requested", None),
        ("mcp.oauth_consent_closed", "granted"),
    ]
    assert "code=" not in json.dumps(audit) and "state=" not in json.dumps(audit)


@pytest.mark.usefixtures("secret")
def test_a_callback_without_a_pending_state_is_refused(tmp_path: Path) -> None:
    with oauth_servers(tmp_path) as servers, app(tmp_path, servers) as client:
        for query in ("", "?code=abc", "?code=abc&state=forged", "?error=access_denied"):
            refused = client.get(f"/oauth/mcp/callback{query}")
            assert refused.status_code == 400, query
            assert refused.json()["error"] == {
                "code": "unknown_consent",
                "field": "state",
                "reason": "no pending authorization has this state",
            }
