"""The composition root loads every profile's claim catalog at start-up and serves
``knowledge.search`` through the policy gate, scoped to the caller's own profile."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml
from starlette.testclient import TestClient

from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.contracts.domain import AgentProfile
from vocero.store.knowledge import Scope

ADMIN = {"authorization": "Bearer op-admin-token"}
SEARCH_SCRIPT = {
    "tts": {"ms_per_char": 5},
    "llm": [
        {"match": "saturday", "tool": "knowledge.search",
         "arguments": {"query": "{last_user}"}, "claims": "auto"},
        {"match": ".*", "reply": "I can help with orders and appointments."},
    ],
}


def test_the_catalogs_are_loaded_at_start_up(client: TestClient, demo: AgentProfile) -> None:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    assert client.portal is not None
    knowledge = runtime.builtins
    assert knowledge is not None and knowledge.handles("knowledge.search")
    assert knowledge.handles("followups.record")
    assert knowledge.schema("knowledge.search")["required"] == ["query"]

    async def versions() -> dict[str, int]:
        from vocero.store.knowledge import KnowledgeRepository

        repo = KnowledgeRepository(runtime.store)
        found: dict[str, int] = await repo.active_versions(Scope("acme", "demo", "1"))
        return found

    assert client.portal.call(versions) == {c.key: 1 for c in demo.claims}


def test_knowledge_search_runs_through_the_gate_for_the_callers_profile(
    sim_settings: Settings, tmp_path: Path
) -> None:
    script = tmp_path / "search.yaml"
    script.write_text(yaml.safe_dump(SEARCH_SCRIPT))
    settings = replace(sim_settings, sim_script=str(script))
    with TestClient(create_app(settings)) as client, client.websocket_connect(
        "/v1/realtime"
    ) as ws:
        pc = ProtocolClient(ws)
        pc.connect()
        pc.send("input.text.v1", {"text": "are you open on Saturday?"})
        status = pc.expect("tool.status.v1", lambda p: p["status"] in ("committed", "rejected"))
        assert status["data"]["payload"]["status"] == "committed"
        pc.expect("response.completed.v1")
        operations = client.get("/v1/operations", params={"session_id": pc.session_id},
                                headers=ADMIN).json()["items"]
        assert [(o["tool"], o["status"]) for o in operations] == [("knowledge.search",
                                                                    "committed")]
