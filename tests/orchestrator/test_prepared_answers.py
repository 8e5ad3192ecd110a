"""A prepared answer (ADR-0037): made at the pause, spoken at the commit, or dropped unseen.

The caller's audio is pushed frame by frame on the sim VAD (it ends speech after 400 ms of
silence; the early transcription starts at a 160 ms pause). The model waits on the virtual
clock, so what it costs after the commit is visible: the clock does not move unless the test
moves it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from tests.orchestrator.action_support import call
from tests.support.audio import silence_frames, tone_frames
from tests.support.fakes import FakeLlm, FakeStt, fake_runners
from tests.support.harness import Harness, running
from vocero.contracts.clock import VirtualClock
from vocero.contracts.ports import LlmOutput, LlmRequest, ToolIntent, Transcription
from vocero.inference.sim.script import Rule
from vocero.orchestrator.drafts import RecoverySettings

pytestmark = pytest.mark.anyio

MODEL_S = 0.3
ANSWER = "Let me look up the opening hours for you."
RULES = [Rule(match=r"opening hours", reply=ANSWER), Rule(match=".*", reply="Sorry?")]


class SlowLlm(FakeLlm):
    """Takes ``MODEL_S`` of the virtual clock before it answers; keeps every request."""

    def __init__(self, rules: list[Rule], clock: VirtualClock) -> None:
        super().__init__(rules)
        self.clock = clock
        self.requests: list[LlmRequest] = []

    async def generate(self, request: LlmRequest) -> AsyncIterator[LlmOutput]:
        self.requests.append(request)
        await self.clock.sleep(MODEL_S)  # the model's thinking time, on the virtual clock
        async for output in super().generate(request):
            yield output


class ByCallStt(FakeStt):
    """The ``n``-th transcription gets the ``n``-th line, whatever utterance it is of: the
    words heard at a pause, then the words once the caller went on."""

    async def transcribe(self, pcm16: bytes, **kwargs: object) -> Transcription:
        self.calls.append(str(kwargs.get("utterance_id", "")))
        index = min(len(self.calls), len(self._transcripts)) - 1
        return Transcription(text=self._transcripts[index])


async def push(h: Harness, frames: list[bytes]) -> None:
    for frame in frames:
        h.session.on_audio(frame)
        await anyio.wait_all_tasks_blocked()


class Observed:
    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}

    def observe_ms(self, name: str, value: float, **labels: str) -> None:
        self.values.setdefault(name, []).append(value)

    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        return None


async def test_the_answer_prepared_at_the_pause_is_spoken_at_the_commit_without_the_model() -> None:
    clock = VirtualClock()
    runners, _, _, tts = fake_runners(stt=["what are your opening hours"], rules=RULES)
    llm = SlowLlm(RULES, clock)
    async with running(replace(runners, llm=llm), clock=clock) as h:
        metrics = h.session.core.metrics = Observed()
        await push(h, tone_frames(600) + silence_frames(200))  # a pause: words, then a draft
        await h.advance(MODEL_S)  # the model answers the draft meanwhile
        assert len(llm.requests) == 1 and llm.requests[0].messages[-1].content == (
            "what are your opening hours"
        )
        assert len(tts.voices) == 1, "its first unit was synthesized"
        assert h.received.of("TextDelta") == [] and h.received.of("AudioOut") == []
        assert list(h.session.history) == [], "nothing of a draft is in the history"
        await push(h, silence_frames(220))  # 400 ms of silence: the turn is committed
        await anyio.wait_all_tasks_blocked()
        # No time has passed since the commit, and the answer is already playing.
        assert [f.text for f in h.received.of("transcript.final.v1")] == [
            "what are your opening hours"
        ]
        assert h.received.of("AudioOut"), "first audio at the commit, not a model call later"
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "completed" and done.heard_text == ANSWER
        assert len(llm.requests) == 1, "no model call after the commit"
        assert len(tts.voices) == 1, "the held audio was spoken, not synthesized again"
        assert metrics.values["ttfs_ms"] == [0.0]
        counts = h.session.drafts.counts if h.session.drafts else None
        assert counts is not None
        assert (counts.made, counts.used, counts.dropped, counts.llm_calls) == (1, 1, 0, 1)
        assert counts.held_audio_used == 1
        assert [m.content for m in h.session.history] == ["what are your opening hours", ANSWER]


async def test_with_drafts_off_the_model_is_asked_after_the_commit() -> None:
    clock = VirtualClock()
    runners, *_ = fake_runners(stt=["what are your opening hours"], rules=RULES)
    llm = SlowLlm(RULES, clock)
    async with running(replace(runners, llm=llm), clock=clock,
                       recovery=RecoverySettings(drafts=False)) as h:
        await push(h, tone_frames(600) + silence_frames(200))
        assert llm.requests == []
        await push(h, silence_frames(220))
        await anyio.wait_all_tasks_blocked()
        assert h.received.of("transcript.final.v1") and not h.received.of("AudioOut")
        await h.advance(MODEL_S)
        await h.until_frame("ResponseCompleted")
        assert len(llm.requests) == 1


HOURS_RULES = [
    Rule(match=r"^what are the opening hours$", tool="store.hours",
         reply="We open at {result.opens}."),
    Rule(match=r".*", reply="I can help with appointments."),
]


async def test_a_caller_who_goes_on_drops_the_draft_and_its_tool_never_runs(db_path: Path) -> None:
    async with call(db_path, rules=HOURS_RULES) as c:
        h = c.h
        stt = ByCallStt(["what are the opening hours",
                         "what are the opening hours of the other shop"])
        h.session.core.runners = replace(h.session.core.runners, stt=stt)
        await push(h, tone_frames(600) + silence_frames(200))
        drafts = h.session.drafts
        assert drafts is not None and drafts.current is not None
        decided = drafts.current.outputs.items
        assert [o.name for o in decided if isinstance(o, ToolIntent)] == ["store.hours"]
        assert c.gateway.calls("store.hours") == [], "a draft's tool decision is not run"
        await push(h, tone_frames(400) + silence_frames(200))  # the caller goes on, pauses
        assert drafts.counts.dropped_by == {"resumed": 1}
        await push(h, silence_frames(220))
        done = await h.until_frame("ResponseCompleted")
        assert done.heard_text == "I can help with appointments."
        assert c.gateway.calls("store.hours") == [], "nothing of the dropped draft ran"
        assert [(m.role, m.content) for m in h.session.history] == [
            ("user", "what are the opening hours of the other shop"),
            ("assistant", "I can help with appointments."),
        ]
        assert [f.text for f in h.received.of("transcript.final.v1")] == [
            "what are the opening hours of the other shop"
        ]
        assert not [n for n in h.received.names() if n.startswith("Tool")]
        assert (drafts.counts.made, drafts.counts.used, drafts.counts.dropped) == (2, 1, 1)


async def test_drafts_and_merges_are_exported_as_prometheus_counters() -> None:
    from vocero.app.adapters.telemetry import MetricsPort
    from vocero.observability.metrics import Metrics

    metrics = Metrics()
    runners, *_ = fake_runners(stt=["what are your opening hours", "thanks a lot"], rules=RULES)
    async with running(runners) as h:
        h.session.core.metrics = MetricsPort(metrics)
        await push(h, tone_frames(600) + silence_frames(200))  # a draft
        await push(h, tone_frames(300) + silence_frames(620))  # the caller goes on: dropped
        await h.until_frame("ResponseCompleted")
    drafts = metrics.drafts_total
    assert drafts.labels(outcome="made", reason="")._value.get() == 2
    assert drafts.labels(outcome="dropped", reason="resumed")._value.get() == 1
    assert drafts.labels(outcome="used", reason="")._value.get() == 1
    assert metrics.draft_llm_calls_total._value.get() == 2
    assert b"vocero_drafts_total" in metrics.render()[0]


async def test_a_draft_the_model_refused_is_dropped_and_the_turn_asks_the_model_itself() -> None:
    runners, _, llm, _ = fake_runners(stt=["what are your opening hours"], rules=RULES)
    async with running(runners) as h:
        llm.busy = True  # the draft's call is refused (capacity)
        await push(h, tone_frames(600) + silence_frames(200))
        assert llm.calls == 1
        llm.busy = False
        await push(h, silence_frames(220))
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "completed" and done.heard_text == ANSWER
        assert llm.calls == 2, "the committed turn asked the model again"
        drafts = h.session.drafts
        assert drafts is not None and drafts.counts.dropped_by == {"failed": 1}
        assert not h.received.of("Error"), "a failed draft is nobody's error"
