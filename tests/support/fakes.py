"""Fault-injecting fakes for the inference ports, built on the simulators."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio

from vocero.contracts.domain import VoiceRef
from vocero.contracts.errors import CapacityError
from vocero.contracts.ports import Health, LlmOutput, LlmRequest, RunnerStatus, Transcription
from vocero.inference.runner_set import RunnerSet
from vocero.inference.sim import EnergyVad, SimLlm, SimStt, SimTts
from vocero.inference.sim.script import Rule, TtsScript


class FakeStt(SimStt):
    def __init__(self, transcripts: list[str]) -> None:
        super().__init__(transcripts)
        self.health: Health = "ready"
        self.fail = False
        self.calls: list[str] = []
        """The ``utterance_id`` of every ``transcribe`` call."""
        self.one_at_a_time = anyio.Lock()
        """Recognitions run one at a time, like a model with capacity 1."""
        self.hang_first = False
        """The first recognition never finishes (until cancelled)."""

    def status(self) -> RunnerStatus:
        return RunnerStatus(health=self.health)

    async def transcribe(
        self, pcm16: bytes, *, sample_rate: int, locale: str, utterance_id: str = ""
    ) -> Transcription:
        self.calls.append(utterance_id)
        async with self.one_at_a_time:
            if self.hang_first and len(self.calls) == 1:
                await anyio.sleep_forever()
            if self.fail:
                self.health = "unavailable"
                raise RuntimeError("stt crashed")
            return await super().transcribe(
                pcm16, sample_rate=sample_rate, locale=locale, utterance_id=utterance_id
            )


class FakeLlm(SimLlm):
    """Hangs on the first ``hang_calls`` requests (an LLM timeout), or refuses (capacity)."""

    def __init__(self, rules: list[Rule]) -> None:
        super().__init__(rules)
        self.hang_calls = 0
        self.busy = False
        self.calls = 0

    async def generate(self, request: LlmRequest) -> AsyncIterator[LlmOutput]:
        self.calls += 1
        if self.busy:
            raise CapacityError("llm queue full")
        if self.calls <= self.hang_calls:
            await anyio.sleep_forever()
        async for output in super().generate(request):
            yield output


class FakeTts(SimTts):
    """Fails after ``fail_after_chunks`` chunks (``0``: at once); ``None`` never fails."""

    def __init__(self, script: TtsScript) -> None:
        super().__init__(script)
        self.fail_after_chunks: int | None = None
        self.voices: list[VoiceRef] = []
        self.produced = 0

    async def synthesize(self, text: str, voice: VoiceRef) -> AsyncIterator[bytes]:
        self.voices.append(voice)
        async for chunk in super().synthesize(text, voice):
            if self.fail_after_chunks is not None and self.produced >= self.fail_after_chunks:
                raise RuntimeError("tts crashed")
            self.produced += 1
            yield chunk


def fake_runners(
    stt: list[str] | None = None, rules: list[Rule] | None = None, ms_per_char: float = 10.0
) -> tuple[RunnerSet, FakeStt, FakeLlm, FakeTts]:
    s = FakeStt(stt or [])
    llm = FakeLlm(rules or [Rule(match=".*", reply="I can help with orders and appointments.")])
    tts = FakeTts(TtsScript(ms_per_char=ms_per_char))
    return RunnerSet(kind="fake", vad=EnergyVad(), stt=s, llm=llm, tts=tts), s, llm, tts
