"""Session resumption (SPEC §2 ``resume_token``): same caller, same profile, within the window."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import REPO_ROOT, Settings


def payload(frame: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = frame["data"]["payload"]
    return result


def connect(pc: ProtocolClient, token: str = "demo-token", resume: str = "") -> dict[str, Any]:
    body = {"token": token, **({"resume_token": resume} if resume else {})}
    pc.send("session.connect.v1", body)
    applied = payload(pc.expect("session.configuration_applied.v1"))
    pc.session_id = applied["session_id"]
    pc.expect("session.state.v1")
    return applied


def one_answer(pc: ProtocolClient, text: str) -> str:
    pc.send("input.text.v1", {"text": text})
    heard: str = payload(pc.expect("response.completed.v1"))["heard_text"]
    return heard


def audit_kinds(client: TestClient, session_id: str) -> list[str]:
    response = client.get(
        "/v1/audit",
        params={"session_id": session_id},
        headers={"authorization": "Bearer op-admin-token"},
    )
    return [item["kind"] for item in response.json()["items"]]


def test_a_dropped_connection_resumes_with_the_history_as_heard(client: TestClient) -> None:
    with client.websocket_connect("/v1/realtime") as ws:
        first = ProtocolClient(ws)
        applied = connect(first)
        said = one_answer(first, "hello")
        assert said
    # The socket dropped without session.close.v1.
    with client.websocket_connect("/v1/realtime") as ws:
        again = ProtocolClient(ws)
        resumed = connect(again, resume=applied["resume_token"])
        assert resumed["session_id"] == applied["session_id"]
        assert resumed["rejected_fields"] == []
        assert resumed["resume_token"] not in ("", applied["resume_token"]), "a fresh token"
        assert one_answer(again, "what did you say") == f"I said: {said}"
        again.send("session.close.v1")
        again.expect_close()
    kinds = audit_kinds(client, applied["session_id"])
    assert kinds.count("session.opened") == 1
    assert kinds.count("session.resumed") == 1


def test_a_resume_takes_over_a_connection_the_server_still_holds(client: TestClient) -> None:
    with client.websocket_connect("/v1/realtime") as old_ws:
        old = ProtocolClient(old_ws)
        applied = connect(old)
        with client.websocket_connect("/v1/realtime") as ws:
            new = ProtocolClient(ws)
            resumed = connect(new, resume=applied["resume_token"])
            assert resumed["session_id"] == applied["session_id"]
            assert old.expect_close() in (1000, 1001, 1006)
            assert one_answer(new, "hello")


def test_a_token_is_spent_by_its_resume_and_withdrawn_by_a_clean_close(
    client: TestClient,
) -> None:
    with client.websocket_connect("/v1/realtime") as ws:
        first = ProtocolClient(ws)
        applied = connect(first)
    with client.websocket_connect("/v1/realtime") as ws:
        second = ProtocolClient(ws)
        resumed = connect(second, resume=applied["resume_token"])
        second.send("session.close.v1")
        second.expect_close()
    for token in (applied["resume_token"], resumed["resume_token"]):
        with client.websocket_connect("/v1/realtime") as ws:
            third = ProtocolClient(ws)
            fresh = connect(third, resume=token)
            assert fresh["session_id"] != applied["session_id"], "a new session instead"
            assert fresh["rejected_fields"] == [
                {"field": "resume_token", "reason": "unknown_or_expired"}
            ]


def test_another_caller_cannot_resume_a_session(client: TestClient) -> None:
    with client.websocket_connect("/v1/realtime") as ws:
        first = ProtocolClient(ws)
        applied = connect(first)
        one_answer(first, "hello")
    with client.websocket_connect("/v1/realtime") as ws:
        other = ProtocolClient(ws)
        fresh = connect(other, token="agent-token", resume=applied["resume_token"])
        assert fresh["session_id"] != applied["session_id"]
        assert fresh["rejected_fields"][0]["field"] == "resume_token"
        assert one_answer(other, "what did you say") == "I said:", "no history leaked"
    with client.websocket_connect("/v1/realtime") as ws:
        owner = ProtocolClient(ws)
        assert connect(owner, resume=applied["resume_token"])["session_id"] == applied[
            "session_id"
        ], "a refused attempt does not spend the owner's token"


def test_a_session_is_not_resumed_on_another_profile_version(
    sim_settings: Settings, tmp_path: Path
) -> None:
    """The profile a session started with is part of what it resumes: after the profile changed
    (a new version published and the server restarted), the token opens a new session on the new
    version, with the reason in ``rejected_fields``; the unchanged profile resumes."""
    profiles = tmp_path / "profiles"
    shutil.copytree(REPO_ROOT / "fixtures" / "profiles", profiles)
    shutil.copytree(REPO_ROOT / "fixtures" / "mcp_servers", tmp_path / "mcp_servers")
    settings = replace(sim_settings, profiles=str(profiles))

    def dropped_session() -> dict[str, Any]:
        with TestClient(create_app(settings)) as client, \
                client.websocket_connect("/v1/realtime") as ws:
            pc = ProtocolClient(ws)
            applied = connect(pc)
            assert one_answer(pc, "hello")
            return applied

    first = dropped_session()
    with TestClient(create_app(settings)) as client, client.websocket_connect("/v1/realtime") as ws:
        same = connect(ProtocolClient(ws), resume=first["resume_token"])
    assert same["session_id"] == first["session_id"], "same profile version: resumed"

    demo = profiles / "demo.yaml"
    demo.write_text(demo.read_text().replace('version: "1"', 'version: "2"', 1))
    with TestClient(create_app(settings)) as client, client.websocket_connect("/v1/realtime") as ws:
        fresh = connect(ProtocolClient(ws), resume=same["resume_token"])
    assert fresh["session_id"] != first["session_id"], "a new session instead"
    assert fresh["effective"]["profile_version"] != first["effective"]["profile_version"]
    assert fresh["rejected_fields"] == [{"field": "resume_token", "reason": "profile_changed"}]
