"""An operator authorizes an MCP server in a browser, end to end through the real composition root:
the server wants the authorization-code grant; ``GET /v1/mcp/authorizations`` lists the page to
open; the authorization server sends the browser back to ``/oauth/mcp/callback``; the caller's
call, which failed at once before, then runs. Against the local authorization server and the
bookings server as its resource server; the consent is stored (SQLite) and audited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import anyio
import httpx2
import pytest
from oauth_support import ENV, Servers, oauth_servers
from sqlalchemy import event
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
        assert landed.status_code == 200
        assert landed.text.startswith("Vocero is now authorized to use bookings.")
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
        ("mcp.oauth_consent_answered", "answered"),
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


def _redirect(client: TestClient, **override: str) -> tuple[str, dict[str, str]]:
    """Once a consent is pending: the authorization server's redirect back to the callback
    (it approves at once), as its path and query, with ``override`` applied."""
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    _until(client, runtime.consents.wait_requested, 1)
    [pending] = client.get("/v1/mcp/authorizations", headers=ADMIN).json()["items"]
    back = urlsplit(httpx2.get(pending["authorization_url"]).headers["location"])
    return back.path, {**dict(parse_qsl(back.query)), **override}


def _consent_audit(client: TestClient) -> list[tuple[str, Any, Any]]:
    items = client.get("/v1/audit", headers=ADMIN).json()["items"]
    return [
        (e["kind"], e["data"].get("status"), e["data"].get("reason_code"))
        for e in items
        if e["kind"].startswith("mcp.oauth_consent")
    ]


@pytest.mark.usefixtures("secret")
def test_a_bogus_code_is_answered_and_failed_never_granted(tmp_path: Path) -> None:
    """Issue 26, finding 3: the page said "authorizing" and the audit said ``granted`` for a
    code the authorization server then refused. Now the page waits for the exchange and says
    it failed; the audit says ``answered``, then ``failed`` with ``invalid_grant``."""
    with oauth_servers(tmp_path) as servers, app(tmp_path, servers) as client:
        path, query = _redirect(client, code="bogus")
        landed = client.get(path, params=query)
        assert landed.status_code == 200
        assert "authorizing" not in landed.text.lower()
        assert "did not accept this answer (invalid_grant)" in landed.text
        assert "not authorized to use bookings" in landed.text
        assert _consent_audit(client)[:3] == [
            ("mcp.oauth_consent_requested", None, None),
            ("mcp.oauth_consent_answered", "answered", None),
            ("mcp.oauth_consent_closed", "failed", "invalid_grant"),
        ]


FORGED = "\n2026-12-02T06:02:03Z [info     ] operator.login name=admin FORGED"
MALFORMED = [
    ({"iss": f"https://login.example.com{FORGED}"}, "iss"),
    ({"iss": "javascript:alert(1)"}, "iss"),
    ({"code": f"abc{FORGED}"}, "code"),
    ({"code": "c" * 2049}, "code"),
    ({"error": 'access_denied"'}, "error"),
    ({"error": "e" * 65}, "error"),
    ({"state": "s\u00e9"}, "state"),
    ({"state": "s" * 513}, "state"),
]


@pytest.mark.usefixtures("secret")
def test_the_callback_refuses_malformed_parameters_before_anything_else(tmp_path: Path) -> None:
    """Issue 26, finding 5: a newline in ``iss`` reached the SDK, whose error message quoted it
    into the log as a forged line. Every parameter is checked at the callback: 400
    ``invalid_query`` naming it, the state not even looked up, the consent still pending."""
    with oauth_servers(tmp_path) as servers, app(tmp_path, servers) as client:
        path, good = _redirect(client)
        with _statements(client) as sent:
            for override, field in MALFORMED:
                refused = client.get(path, params={**good, **override})
                assert refused.status_code == 400, override
                assert refused.json()["error"]["code"] == "invalid_query", override
                assert refused.json()["error"]["field"] == field, override
            twice = client.get(f"{path}?{urlencode(good)}&state={good['state']}")
            assert twice.json()["error"] == {
                "code": "invalid_query", "field": "state", "reason": "given more than once"
            }
        assert not [q for q in sent if "mcp_oauth_consents" in q]
        [still] = client.get("/v1/mcp/authorizations", headers=ADMIN).json()["items"]
        assert still["server"] == "bookings"
        assert _consent_audit(client) == [("mcp.oauth_consent_requested", None, None)]


@pytest.mark.usefixtures("secret")
def test_an_unknown_state_is_answered_from_a_read_without_a_write(tmp_path: Path) -> None:
    """Issue 26, finding 10: every callback sealed its answer and took the store's write
    lock, whatever its state. Now a state nobody issued costs one read of the consents."""
    with oauth_servers(tmp_path) as servers, app(tmp_path, servers) as client:
        path, good = _redirect(client)
        with _statements(client) as sent:
            for _ in range(3):
                forged = client.get(path, params={**good, "state": "forged-state"})
                assert forged.json()["error"]["code"] == "unknown_consent"
        consents = [q for q in sent if "mcp_oauth_consents" in q]
        assert len(consents) == 3 and all(q.startswith("SELECT") for q in consents)
        assert client.get(path, params=good).status_code == 200  # the real one still lands


@contextmanager
def _statements(client: TestClient) -> Iterator[list[str]]:
    """The SQL the app's store runs meanwhile (its engine's cursor executions)."""
    engine = client.app.state.runtime.store.engine.sync_engine  # type: ignore[attr-defined]
    sent: list[str] = []

    def executed(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement.lstrip())

    event.listen(engine, "before_cursor_execute", executed)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", executed)
