"""Faults of the serving engines (docs/deployment.md "Faults"): the circuit breaker of each
endpoint, its per-stage timeout, the JSON answer shape a server refuses, and the per-stage
figures the metrics read. Real HTTP against :class:`ScriptedEngine`; the breaker's clock is a
virtual one the test moves."""

from __future__ import annotations

import argparse
import dataclasses

import anyio
import pytest

from tests.inference.test_remote_llm import ask, collect
from tests.support.engines import Rule, ScriptedEngine
from vocero.app.runtime import build_runners, endpoints
from vocero.app.settings import add_serve_arguments, settings_from
from vocero.contracts.errors import ConfigError, ErrorCode
from vocero.contracts.ports import IntentClassified, LlmRequest, Message
from vocero.inference.remote import Endpoint, EndpointError, RemoteLlm


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def confirm_answer(text: str) -> LlmRequest:
    return LlmRequest(
        messages=[Message(role="assistant", content="Shall I cancel order A123?"),
                  Message(role="user", content=text)],
        tools=[], mode="classify_confirmation",
    )


def test_a_dead_endpoint_opens_its_breaker_and_is_left_alone_until_one_probe() -> None:
    clock = Clock()
    with ScriptedEngine([Rule(match="hello", text="Hi there.")]) as engine:
        llm = RemoteLlm(
            Endpoint(url=engine.url, model="scripted", breaker_threshold=3, breaker_reset_s=5),
            monotonic=clock,
        )

        async def main() -> None:
            await llm.warm_up()
            asked = len(engine.requests)
            engine.dead = True
            for _turn in range(3):
                with pytest.raises(EndpointError, match="HTTP 503"):
                    await collect(llm, ask("hello"))
            assert len(engine.requests) == asked + 3
            assert llm.health.breaker.state == "open"
            for _turn in range(2):  # refused here: the dead engine is not asked again
                with pytest.raises(EndpointError) as refused:
                    await collect(llm, ask("hello"))
                assert refused.value.code == ErrorCode.LLM_UNAVAILABLE
            assert len(engine.requests) == asked + 3
            assert llm.status().health == "degraded" and "circuit open" in llm.status().detail
            assert llm.health.errors == {"503": 3, "open": 2}
            engine.dead = False
            clock.now += 4.9  # still cooling down
            with pytest.raises(EndpointError):
                await collect(llm, ask("hello"))
            assert len(engine.requests) == asked + 3
            clock.now += 0.2  # one probe may pass, and its answer closes the breaker
            assert await collect(llm, ask("hello"))
            assert llm.health.breaker.state == "closed" and llm.status().health == "ready"
            assert len(engine.requests) == asked + 4
            await llm.aclose()

        anyio.run(main)


def test_a_failed_probe_opens_the_breaker_again() -> None:
    clock = Clock()
    with ScriptedEngine([Rule(match="hello", text="Hi there.")]) as engine:
        llm = RemoteLlm(
            Endpoint(url=engine.url, model="scripted", breaker_threshold=2, breaker_reset_s=5),
            monotonic=clock,
        )

        async def main() -> None:
            engine.dead = True
            for _turn in range(2):
                with pytest.raises(EndpointError, match="HTTP 503"):
                    await collect(llm, ask("hello"))
            clock.now += 6
            with pytest.raises(EndpointError, match="HTTP 503"):  # the probe went out, failed
                await collect(llm, ask("hello"))
            assert llm.health.breaker.state == "open"
            with pytest.raises(EndpointError, match="circuit open"):
                await collect(llm, ask("hello"))
            assert len(engine.requests) == 3
            await llm.aclose()

        anyio.run(main)


def test_a_stalled_endpoint_fails_the_turn_at_its_stage_timeout() -> None:
    with ScriptedEngine([Rule(match="hello", text="Hi.", delay_s=5)]) as engine:
        llm = RemoteLlm(Endpoint(url=engine.url, model="scripted", timeout_s=0.3))

        async def main() -> EndpointError:
            with pytest.raises(EndpointError) as failed:
                await collect(llm, ask("hello"))
            await llm.aclose()
            return failed.value

        failed = anyio.run(main)
    assert (failed.code, failed.status) == (ErrorCode.LLM_UNAVAILABLE, 0)
    assert llm.status().detail.endswith("timed out") and llm.health.errors == {"0": 1}


def test_a_server_that_refuses_json_schema_is_asked_with_json_object_from_then_on() -> None:
    """llama-cpp-python's server answers ``json_schema`` with a 500 naming the field: the
    confirmation answer is classified all the same, and the endpoint stays ready."""
    with ScriptedEngine([], json_schema=False, json_answer={"intent": "reject"}) as engine:
        llm = RemoteLlm(Endpoint(url=engine.url, model="scripted"))

        async def main() -> list[object]:
            # Lines the rules leave to the model, each with a word of refusal, so the model's
            # "reject" stands (a "reject" without one is a guess: docs/adr/0032).
            first = await collect(llm, confirm_answer("I'd rather not"))
            second = await collect(llm, confirm_answer("forget about it"))
            await llm.aclose()
            return [*first, *second]

        outputs = anyio.run(main)
    assert outputs == [IntentClassified(intent="reject"), IntentClassified(intent="reject")]
    shapes = [r["response_format"]["type"] for r in engine.requests]
    assert shapes == ["json_schema", "json_object", "json_object"]
    assert engine.requests[1]["response_format"]["schema"]["properties"]["intent"]["enum"] == [
        "confirm", "reject", "uncertain"]
    assert llm.status().health != "degraded"


def test_a_streamed_reply_records_its_first_token_and_tokens_per_second() -> None:
    text = " ".join(f"word{i}" for i in range(12))
    with ScriptedEngine([Rule(match="count", text=text)]) as engine:
        llm = RemoteLlm(Endpoint(url=engine.url, model="scripted"))

        async def main() -> None:
            await collect(llm, ask("count for me"))
            await llm.aclose()

        anyio.run(main)
    assert len(llm.health.first_token_ms) == 1 and llm.health.first_token_ms[0] > 0
    assert len(llm.health.tokens_per_s) == 1 and llm.health.tokens_per_s[0] > 0


def test_stage_timeouts_and_the_llm_mode_are_flags_with_environment_twins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VOCERO_STT_TIMEOUT_S", "2.5")
    monkeypatch.setenv("VOCERO_LLM_MODE", "routed")
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    settings = settings_from(parser.parse_args([
        "--llm-url", "http://engine:8000/v1", "--llm-model", "smollm2", "--llm-timeout-s", "4",
        "--stt-url", "http://stt:8001", "--stt-model", "whisper",
    ]))
    found = endpoints(settings)
    assert (found["llm"].timeout_s, found["stt"].timeout_s) == (4.0, 2.5)
    assert found["llm_mode"] == "routed"
    with pytest.raises(ConfigError, match="--llm-timeout-s: must be a positive number"):
        endpoints(dataclasses.replace(settings, llm_timeout_s=0))
    with pytest.raises(ConfigError, match="--llm-mode: routed needs --runners cpu"):
        build_runners(dataclasses.replace(settings, runners="sim", stt_url=""))
    with pytest.raises(SystemExit):
        parser.parse_args(["--llm-mode", "clever"])
