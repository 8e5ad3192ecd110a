"""``--llm-mode routed`` on a real llama.cpp server: the CPU agent as shipped, its model calls
over HTTP (vocero/inference/remote/routed.py), the worker holding no LLM weights.

llama-cpp-python's own OpenAI-compatible server runs SmolLM2, the model the CPU runners load in
process; the demo profile's fixture MCP servers record every ``tools/call`` they receive. The
same server also serves ``--llm-mode agent`` for a reply stopped mid-stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from starlette.testclient import TestClient

from tests.inference.test_cpu_demo_call import demo_profiles
from tests.inference.test_remote_llm import ask
from tests.support.engines import llama_server
from tests.support.wsclient import ProtocolClient
from vocero.app.server import create_app
from vocero.app.settings import Settings
from vocero.contracts.ports import IntentClassified, LlmRequest, Message, TextChunk
from vocero.inference.remote import Endpoint, RemoteLlm, RemoteRoutedLlm

pytestmark = [pytest.mark.model, pytest.mark.timeout(600)]
SATURDAY = "On Saturdays our stores are open from 10 AM to 2 PM."


@pytest.fixture(scope="module")
def llama() -> Iterator[str]:
    with llama_server() as url:
        yield url


@pytest.fixture(scope="module")
def routed(
    llama: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TestClient, Path]]:
    tmp = tmp_path_factory.mktemp("routed")
    profiles, _ = demo_profiles(tmp)
    demo_file = profiles / "demo.yaml"
    demo = yaml.safe_load(demo_file.read_text())
    record = tmp / "appointments.jsonl"
    demo["mcp_servers"]["appointments"]["env"] = {"VOCERO_MCP_RECORD": str(record)}
    demo_file.write_text(yaml.safe_dump(demo))
    settings = Settings(
        runners="cpu", db=f"sqlite+aiosqlite:///{tmp}/vocero.db", profiles=str(profiles),
        followups_tick_s=0, llm_url=llama, llm_model="smollm2", llm_mode="routed",
    )
    with TestClient(create_app(settings)) as client:
        assert client.portal is not None
        client.portal.call(client.app.state.runtime.ready.wait)  # type: ignore[attr-defined]
        yield client, record


def heard(pc: ProtocolClient, text: str) -> str:
    pc.send("input.text.v1", {"text": text})
    return str(pc.expect("response.completed.v1")["data"]["payload"]["heard_text"])


def calls(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def test_the_cpu_agent_holds_its_conversation_with_its_model_on_the_endpoint(
    routed: tuple[TestClient, Path],
) -> None:
    client, record = routed
    runtime: Any = client.app.state.runtime  # type: ignore[attr-defined]
    llm = runtime.shared_runners.llm
    assert isinstance(llm, RemoteRoutedLlm)
    assert client.get("/readyz").json()["endpoints"]["llm"]["health"] == "ready"
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("readonly-token")  # orders:read only: no appointments:read
        refused = heard(pc, "What appointments do I have?")
        assert refused == "Your account doesn't allow me to do that.", refused
    assert calls(record) == [], "a call policy refused reached the MCP server"
    with client.websocket_connect("/v1/realtime") as ws:
        pc = ProtocolClient(ws)
        pc.connect("demo-token")
        assert heard(pc, "What time do you open on Saturdays?") == SATURDAY
        listing = heard(pc, "What appointments do I have?")
        assert listing.startswith("You have two appointments"), listing
    assert [c["tool"] for c in calls(record)] == ["list_appointments"]
    assert llm._engine._llm is None, "the worker loaded SmolLM2 in process"
    assert client.get("/readyz").json()["endpoints"]["llm"]["health"] == "ready"


def test_an_unclear_confirmation_answer_is_classified_by_the_served_model(llama: str) -> None:
    """The one model call a CPU conversation makes most: an answer no rule knows, classified by
    SmolLM2 on the server under the three-label schema (llama-cpp-python's server refuses the
    ``json_schema`` shape; the runner asks with ``json_object``)."""
    from vocero.inference.cpu import CpuSettings, build_cpu_runners

    local = build_cpu_runners(CpuSettings.from_env({})).llm
    llm = RemoteRoutedLlm(local, Endpoint(url=llama, model="smollm2"))  # type: ignore[arg-type]
    request = LlmRequest(
        messages=[Message(role="assistant", content="Shall I cancel order A123?"),
                  Message(role="user", content="the other thing")],  # the rules can't tell
        tools=[], mode="classify_confirmation",
    )

    async def main() -> list[object]:
        await llm.warm_up()
        try:
            return [out async for out in llm.generate(request)]
        finally:
            await llm.aclose()

    [answer] = anyio.run(main)
    assert isinstance(answer, IntentClassified)
    assert answer.intent in ("confirm", "reject", "uncertain")
    assert llm.status().health == "ready" and not llm.health.errors
    assert llm._engine._llm is None


def test_barge_in_mid_stream_on_the_real_server_stops_the_reply_and_the_next_is_served(
    llama: str,
) -> None:
    """A reply stopped after its first words yields nothing more, leaves no request open, and
    the endpoint answers the next turn. (That the server sees the client go at once is shown
    against the scripted engine, which can record it: ``test_remote_llm.py``.)"""
    llm = RemoteLlm(Endpoint(url=llama, model="smollm2"))
    long = LlmRequest(
        messages=[Message(role="system", content="You are a storyteller."),
                  Message(role="user", content="Tell me a very long story about a lighthouse.")],
        tools=[], max_words=400,
    )

    async def main() -> tuple[list[str], list[object]]:
        words: list[str] = []
        stream = llm.generate(long)
        with anyio.CancelScope() as scope:
            async for chunk in stream:
                if isinstance(chunk, TextChunk):
                    words.append(chunk.text)
                    scope.cancel()  # the caller spoke after the first words
        await stream.aclose()
        assert llm.status().in_flight == 0
        after = [o async for o in llm.generate(ask("Say hello."))]
        await llm.aclose()
        return words, after

    words, after = anyio.run(main)
    assert len(words) == 1
    assert after and all(isinstance(o, TextChunk) for o in after)
    assert llm.status().in_flight == 0 and llm.status().health == "ready"
    assert llm.health.tokens_per_s, "the second, whole reply records its rate"
