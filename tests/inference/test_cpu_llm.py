"""SmolLM2-135M behind the rules, on the labelled corpus of the demo profile."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import aclosing
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.inference import corpus
from vocero.contracts.errors import CapacityError
from vocero.contracts.ports import (
    IntentClassified,
    LlmOutput,
    LlmRequest,
    Message,
    TextChunk,
    ToolIntent,
)
from vocero.inference.dialogue import schema
from vocero.inference.toolkit.llama import LlamaEngine
from vocero.inference.toolkit.llm import RoutedLlm
from vocero.inference.toolkit.settings import QueueSettings

pytestmark = [pytest.mark.model, pytest.mark.anyio]
SYSTEM = Message(role="system", content="You are the phone assistant of Acme. Be brief.")


def ask(text: str, **kwargs: Any) -> LlmRequest:
    return LlmRequest(messages=[SYSTEM, Message(role="user", content=text)], **kwargs)


async def run(llm: RoutedLlm, request: LlmRequest) -> list[LlmOutput]:
    async with aclosing(llm.generate(request)) as outputs:
        return [o async for o in outputs]


@pytest.mark.timeout(300)  # about 15 s on an idle 2-core machine
async def test_tool_and_argument_accuracy_on_the_corpus(routed_llm: RoutedLlm) -> None:
    tools = corpus.demo_tools()
    results: dict[bool, list[bool]] = {False: [], True: []}
    tool_latencies: list[float] = []
    wrong: list[str] = []
    for case in corpus.request_cases():
        started = time.perf_counter()
        outputs = await run(routed_llm, ask(case.text, tools=tools, max_words=12))
        if case.tool:
            tool_latencies.append(time.perf_counter() - started)
        correct = corpus.case_correct(case, outputs)
        results[case.held_out].append(correct)
        if not correct:
            wrong.append(f"{case.text!r} -> {outputs}")
    every = results[False] + results[True]
    accuracy = sum(every) / len(every)
    tool_latencies.sort()
    print(
        f"\nllm corpus: {sum(every)}/{len(every)} = {accuracy:.1%} "
        f"(held out {sum(results[True])}/{len(results[True])}); "
        f"tool intent p50 {tool_latencies[len(tool_latencies) // 2] * 1000:.0f} ms"
    )
    assert len(every) >= 40
    assert accuracy >= 0.9, wrong


async def test_confirmations_are_classified(routed_llm: RoutedLlm) -> None:
    for text, intent in corpus.confirmation_cases():
        outputs = await run(routed_llm, ask(text, mode="classify_confirmation"))
        assert outputs == [IntentClassified(intent=intent)], text  # type: ignore[arg-type]


async def test_the_model_decides_what_the_rules_cannot(routed_llm: RoutedLlm) -> None:
    outputs = await run(routed_llm, ask("The blue one, I suppose", mode="classify_confirmation"))
    assert [type(o) for o in outputs] == [IntentClassified]


async def test_the_model_fills_free_text_under_a_bounded_schema(routed_llm: RoutedLlm) -> None:
    note = corpus.tool("notes.add", {"text": {"type": "string"}}, ["text"])
    outputs = await run(routed_llm, ask("Add a note: the gate code is 4411", tools=[note]))
    assert [type(o) for o in outputs] == [ToolIntent]
    assert isinstance(outputs[0], ToolIntent)
    text = outputs[0].arguments["text"]
    assert isinstance(text, str)
    assert 0 < len(text) <= schema.MAX_STRING


async def test_chit_chat_is_answered_in_the_profiles_words(routed_llm: RoutedLlm) -> None:
    request = ask("Tell me about yourself.", tools=corpus.demo_tools(), max_words=12)
    outputs = await run(routed_llm, request)
    assert outputs
    assert all(isinstance(o, TextChunk) for o in outputs)
    text = "".join(o.text for o in outputs if isinstance(o, TextChunk))
    assert text.startswith("This is the phone assistant of Acme.")
    assert 0 < len(text.split()) <= 12


async def test_a_model_that_may_chat_streams_within_the_word_budget(llama: LlamaEngine) -> None:
    chatty = RoutedLlm(llama, QueueSettings(), free_text="model")
    request = ask("Tell me about yourself.", tools=corpus.demo_tools(), max_words=12)
    outputs = await run(chatty, request)
    assert len(outputs) >= 2, "streamed in several chunks"
    assert all(isinstance(o, TextChunk) for o in outputs)
    text = "".join(o.text for o in outputs if isinstance(o, TextChunk))
    assert 0 < len(text.split()) <= 12


async def test_a_tool_result_gets_no_words_from_the_small_model(routed_llm: RoutedLlm) -> None:
    """The orchestrator reads it out in the profile's words (tests/orchestrator)."""
    request = LlmRequest(
        messages=[
            SYSTEM,
            Message(role="user", content="What's the status of order A123?"),
            Message(
                role="tool",
                content="",
                tool_name="orders.status",
                tool_result={"order_id": "A123", "status": "shipped"},
            ),
        ],
        tools=corpus.demo_tools(),
    )
    assert await run(routed_llm, request) == []


class CountingEngine(LlamaEngine):
    """The real engine, counting the deltas it produced and whether its stream was closed."""

    produced = 0
    closed = False
    closing = threading.Event()

    def chat_stream(self, messages: list[dict[str, str]], *, max_tokens: int) -> Iterator[str]:
        try:
            for delta in super().chat_stream(messages, max_tokens=max_tokens):
                self.produced += 1
                yield delta
        finally:
            self.closed = True
            self.closing.set()


async def test_cancellation_stops_generation_within_one_chunk(llm_path: str) -> None:
    engine = CountingEngine(llm_path, threads_count=2)
    engine.closing = threading.Event()
    llm = RoutedLlm(engine, QueueSettings(), free_text="model")
    request = ask("Tell me a long story about a lighthouse keeper.", max_words=60)
    at_first_chunk = -1
    with anyio.CancelScope() as scope:
        async with aclosing(llm.generate(request)) as outputs:
            async for _ in outputs:
                at_first_chunk = engine.produced
                scope.cancel()
                await anyio.lowlevel.checkpoint()
    assert await anyio.to_thread.run_sync(engine.closing.wait, 10.0), "the stream was not closed"
    assert engine.closed
    assert 0 < at_first_chunk <= engine.produced <= at_first_chunk + 1
    assert llm.status().in_flight == 0


async def test_admission_rejects_early_when_full(llama: LlamaEngine) -> None:
    llm = RoutedLlm(llama, QueueSettings(capacity=1, max_queue=0))
    async with aclosing(llm.generate(ask("Hello there, how are you?"))) as first:
        await first.__anext__()  # holds the only slot while the caller reads
        with anyio.fail_after(0.1), pytest.raises(CapacityError):
            await run(llm, ask("Hi"))
    assert llm.status().in_flight == 0
