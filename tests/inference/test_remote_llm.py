"""The LLM stage on a serving engine (vocero/inference/remote/llm.py), over real HTTP.

Streaming and the tools probe run against llama-cpp-python's own OpenAI-compatible server on
SmolLM2; what a 135M model cannot be relied on to do on cue (call a tool, stream forever, die)
is scripted by :class:`ScriptedEngine`, still a real server on a real socket.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest
from structlog.testing import capture_logs

from tests.support.engines import Rule, ScriptedEngine, llama_server
from tests.support.polling import wait_for
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.errors import ErrorCode
from vocero.contracts.ports import LlmOutput, LlmRequest, Message, TextChunk, ToolIntent
from vocero.contracts.secrets import Secret
from vocero.inference.remote import Endpoint, EndpointError, RemoteLlm
from vocero.inference.remote.llm import ToolsUnsupportedError

ORDER_TOOL = ToolDefinition(
    name="orders.status",
    description="Look up an order's status by its id.",
    input_schema={
        "type": "object",
        "properties": {"order_id": {"type": "string", "pattern": "^[A-Z][0-9]{3}$"}},
        "required": ["order_id"],
        "additionalProperties": False,
    },
)


def ask(text: str, tools: list[ToolDefinition] | None = None) -> LlmRequest:
    return LlmRequest(
        messages=[Message(role="system", content="You are a helpful agent."),
                  Message(role="user", content=text)],
        tools=tools or [], max_words=30,
    )


async def collect(llm: RemoteLlm, request: LlmRequest) -> list[LlmOutput]:
    return [out async for out in llm.generate(request)]


async def once(llm: RemoteLlm, request: LlmRequest) -> list[LlmOutput]:
    """One request on a client that lives as long as this event loop."""
    try:
        return await collect(llm, request)
    finally:
        await llm.aclose()


@pytest.fixture(scope="module")
def llama() -> Iterator[str]:
    with llama_server() as url:
        yield url


@pytest.mark.process
def test_a_llama_cpp_server_streams_the_reply_and_accepts_tools(llama: str) -> None:
    async def main() -> list[LlmOutput]:
        llm = RemoteLlm(Endpoint(url=llama, model="smollm2"))
        await llm.warm_up()  # the probe sends a tool: llama.cpp's server takes it
        assert llm.status().health == "ready"
        try:
            return await collect(llm, ask("Hello, how are you today?"))
        finally:
            await llm.aclose()

    outputs = anyio.run(main)
    assert len(outputs) > 1, outputs  # streamed in pieces, not one block
    assert all(isinstance(o, TextChunk) for o in outputs)
    assert " ".join(o.text for o in outputs if isinstance(o, TextChunk)).strip()


def test_a_streamed_tool_call_becomes_one_validated_intent() -> None:
    rules = [Rule(match="A123", tool="orders.status", arguments={"order_id": "A123"})]
    with ScriptedEngine(rules) as engine:
        llm = RemoteLlm(Endpoint(url=engine.url, model="scripted"))
        outputs = anyio.run(once, llm, ask("where is my order A123", [ORDER_TOOL]))
    assert outputs == [ToolIntent(name="orders.status", arguments={"order_id": "A123"})]
    [sent] = engine.requests
    assert sent["stream"] is True and sent["tool_choice"] == "auto"
    [tool] = sent["tools"]
    assert tool["function"]["name"] == "orders.status"
    assert tool["function"]["parameters"]["properties"]["order_id"]["pattern"] == "^[A-Z][0-9]{3}$"


def test_a_call_whose_arguments_break_the_schema_is_a_question_not_an_intent() -> None:
    rules = [Rule(match="order", tool="orders.status", arguments={"order_id": "nonsense"})]
    with ScriptedEngine(rules) as engine:
        llm = RemoteLlm(Endpoint(url=engine.url, model="scripted"))
        outputs = anyio.run(once, llm, ask("where is my order", [ORDER_TOOL]))
    assert not [o for o in outputs if isinstance(o, ToolIntent)]
    assert [o for o in outputs if isinstance(o, TextChunk)]


def test_a_server_without_tools_is_told_apart_at_start() -> None:
    with ScriptedEngine([], tools=False) as engine:
        llm = RemoteLlm(Endpoint(url=engine.url, model="scripted"))

        async def main() -> None:
            try:
                await llm.warm_up()
            finally:
                await llm.aclose()

        with pytest.raises(ToolsUnsupportedError, match="does not accept OpenAI 'tools'"):
            anyio.run(main)
    assert llm.status().health != "ready"


def test_barge_in_closes_the_http_stream_at_once() -> None:
    with ScriptedEngine([Rule(match="story", endless=True)]) as engine:
        llm = RemoteLlm(Endpoint(url=engine.url, model="scripted"))

        async def main() -> float:
            stream = llm.generate(ask("tell me a long story"))
            with anyio.CancelScope() as scope:
                async for _chunk in stream:
                    scope.cancel()  # the caller spoke: the generation's scope is cancelled
            stopped = time.perf_counter()
            await stream.aclose()
            await llm.aclose()
            return stopped

        stopped = anyio.run(main)
        closed = wait_for("the server to see the client go", lambda: engine.closed_at)
    assert (closed[0] - stopped) * 1000 < 500
    assert llm.status().in_flight == 0


def test_a_dead_endpoint_fails_the_turn_clearly_and_recovers() -> None:
    with ScriptedEngine([Rule(match="hello", text="Hi there.")]) as engine:
        llm = RemoteLlm(Endpoint(url=engine.url, model="scripted"))

        async def main() -> None:
            await llm.warm_up()
            engine.dead = True
            with pytest.raises(EndpointError) as failed:
                await collect(llm, ask("hello"))
            assert (failed.value.code, failed.value.status) == (ErrorCode.LLM_UNAVAILABLE, 503)
            assert llm.status().health == "degraded" and "HTTP 503" in llm.status().detail
            engine.dead = False
            assert await collect(llm, ask("hello"))
            assert llm.status().health == "ready"
            await llm.aclose()

        anyio.run(main)


def test_a_refused_connection_is_an_unavailable_llm() -> None:
    engine = ScriptedEngine([])  # never started: nothing listens on its port
    llm = RemoteLlm(Endpoint(url=engine.url, model="scripted", timeout_s=2))
    with pytest.raises(EndpointError) as failed:
        anyio.run(once, llm, ask("hello"))
    assert failed.value.code == ErrorCode.LLM_UNAVAILABLE and failed.value.status == 0


def test_the_api_key_reaches_the_server_and_no_log() -> None:
    key = Secret("sk-remote-test-key-123456")
    with ScriptedEngine([]) as engine, capture_logs() as logs:
        llm = RemoteLlm(Endpoint(url=engine.url, model="scripted", api_key=key))

        async def main() -> EndpointError:
            await llm.warm_up()
            engine.dead = True
            with pytest.raises(EndpointError) as failed:
                await collect(llm, ask("hello"))
            await llm.aclose()
            return failed.value

        error = anyio.run(main)
    assert engine.authorizations and all(
        a == "Bearer sk-remote-test-key-123456" for a in engine.authorizations
    )
    assert logs and "sk-remote" not in repr(logs)
    assert "sk-remote" not in str(error) and "sk-remote" not in repr(llm.endpoint)
    assert "sk-remote" not in llm.status().detail
