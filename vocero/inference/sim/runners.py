"""Scripted STT, rule-based LLM and synthetic TTS implementing the sim script exactly
(docs/eval.md "The sim script")."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any

import anyio
import numpy as np

from vocero.contracts.domain import ToolDefinition, VoiceRef
from vocero.contracts.ports import (
    ClaimTopic,
    IntentClassified,
    LlmOutput,
    LlmRequest,
    Message,
    RunnerStatus,
    SpokenThrough,
    TextChunk,
    ToolIntent,
    Transcription,
)
from vocero.inference.runner_set import RunnerSet
from vocero.inference.sim.script import Rule, SimScript, TtsScript, claim_answer
from vocero.inference.sim.turn import SimTurnJudge
from vocero.inference.sim.vad import EnergyVad

SIM_TURN_QUIET_MS = 200
"""The simulator's judge calls a turn finished once it hears 200 ms of quiet: with the policy's
defaults (first asked at 150 ms, again 200 ms later) turns end about 350 ms after speech, near
the 400 ms its VAD's hangover ended them at."""

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")


class SimStt:
    """Returns the script's transcripts in order, one per committed audio turn.

    The orchestrator may transcribe an utterance early, at a pause, and again at its end when the
    caller spoke on: a second call with the same ``utterance_id`` gets the same transcript, so a
    script line is still consumed once per audio turn.
    """

    name = "sim-stt"
    partial_interval_ms = 600

    def __init__(self, transcripts: list[str]) -> None:
        self._transcripts = list(transcripts)
        self._next = 0
        self._last_utterance = ""
        self._last_text = ""

    async def warm_up(self) -> None:
        return None

    def status(self) -> RunnerStatus:
        return RunnerStatus(health="ready", capacity=1_000_000)

    def _upcoming(self) -> str:
        return self._transcripts[self._next] if self._next < len(self._transcripts) else ""

    async def transcribe(
        self, pcm16: bytes, *, sample_rate: int, locale: str, utterance_id: str = "",
        vocabulary: Sequence[str] = (),
    ) -> Transcription:
        if utterance_id and utterance_id == self._last_utterance:
            return Transcription(text=self._last_text)
        text = self._upcoming()
        self._next += 1
        self._last_utterance, self._last_text = utterance_id, text
        return Transcription(text=text)

    async def partial(self, pcm16: bytes, *, sample_rate: int, locale: str) -> Transcription:
        return Transcription(text=self._upcoming(), final=False)


def _history_context(messages: list[Message]) -> tuple[str, str, list[Message]]:
    """The last user text, the last assistant text, and the messages after the last user turn."""
    last_user_index = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    last_user = messages[last_user_index].content if last_user_index >= 0 else ""
    last_assistant = next((m.content for m in reversed(messages) if m.role == "assistant"), "")
    return last_user, last_assistant, messages[last_user_index + 1 :]


def render(template: str, values: dict[str, Any]) -> str:
    """Fill ``{name}`` and ``{result.field}`` placeholders; unknown ones stay as written."""

    def lookup(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in values:
            return str(values[key])
        head, _, field = key.partition(".")
        result = values.get(head)
        if field and isinstance(result, dict) and field in result:
            return str(result[field])
        return match.group(0)

    return _PLACEHOLDER.sub(lookup, template)


def _render_arguments(arguments: Any, values: dict[str, Any]) -> Any:
    if isinstance(arguments, str):
        return render(arguments, values)
    if isinstance(arguments, dict):
        return {k: _render_arguments(v, values) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [_render_arguments(v, values) for v in arguments]
    return arguments


class SimLlm:
    """First matching rule wins (``re.search``, case-insensitive) against the last user turn."""

    name = "sim-llm"

    def __init__(self, rules: list[Rule]) -> None:
        self._rules = [(rule, rule.pattern()) for rule in rules]

    async def warm_up(self) -> None:
        return None

    def status(self) -> RunnerStatus:
        return RunnerStatus(health="ready", capacity=1_000_000)

    async def prepare(
        self,
        tools: Sequence[ToolDefinition],
        claims: Sequence[ClaimTopic],
        refused: Sequence[ToolDefinition] = (),
    ) -> None:
        """Nothing to learn: the script is the model."""

    async def generate(self, request: LlmRequest) -> AsyncIterator[LlmOutput]:
        last_user, last_assistant, since_user = _history_context(request.messages)
        classify = request.mode == "classify_confirmation"
        for rule, pattern in self._rules:
            match = pattern.search(last_user)
            if match is None:
                continue
            if classify:
                # While a question is open the first matching rule decides: an intent rule
                # answers it; any other rule that says something (not a catch-all such as
                # ``.*``, which matches anything) makes the turn a new request.
                if rule.intent:
                    yield IntentClassified(intent=rule.intent)
                    return
                if pattern.search("") is None:
                    yield IntentClassified(intent="new_request")
                    return
                continue
            if rule.intent:
                continue
            values: dict[str, Any] = {k: v or "" for k, v in match.groupdict().items()}
            values.update(last_user=last_user, last_assistant=last_assistant)
            result = next(
                (m for m in since_user if m.role == "tool" and m.tool_name == rule.tool), None
            )
            if rule.tool and result is None:
                yield ToolIntent(
                    name=rule.tool, arguments=_render_arguments(rule.arguments, values)
                )
                return
            if result is not None:
                data = result.tool_data()
                values["result"] = data if isinstance(data, dict) else {}
            if rule.answers_with_claims:
                text = render(rule.paraphrase.text, values) if rule.paraphrase else ""
                yield claim_answer(rule, text, values.get("result"))
                return
            for word in _words(render(rule.reply, values)):
                await anyio.lowlevel.checkpoint()
                yield TextChunk(text=word)
            return
        if classify:
            yield IntentClassified(intent="uncertain")


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


class SimTts:
    """Synthetic speech: a quiet tone whose length is ``ms_per_char`` per character."""

    name = "sim-tts"

    def __init__(self, script: TtsScript) -> None:
        self._script = script
        self.sample_rate = script.sample_rate

    async def warm_up(self) -> None:
        return None

    def status(self) -> RunnerStatus:
        return RunnerStatus(health="ready", capacity=1_000_000)

    async def synthesize_aligned(
        self, text: str, voice: VoiceRef
    ) -> AsyncGenerator[bytes | SpokenThrough, None]:
        """Its exact timing: ``ms_per_char`` for every character, known before any audio."""
        total_samples = self._samples(text)
        if total_samples:
            yield SpokenThrough(audio_ms=total_samples * 1000 / self.sample_rate, fraction=1.0)
        async with aclosing(self.synthesize(text, voice)) as chunks:
            async for chunk in chunks:
                yield chunk

    def _samples(self, text: str) -> int:
        return round(len(text) * self._script.ms_per_char * self.sample_rate / 1000)

    async def synthesize(self, text: str, voice: VoiceRef) -> AsyncGenerator[bytes, None]:
        total_samples = self._samples(text)
        chunk_samples = max(1, self.sample_rate * self._script.chunk_ms // 1000)
        for start in range(0, total_samples, chunk_samples):
            await anyio.lowlevel.checkpoint()
            yield _tone(start, min(chunk_samples, total_samples - start), self.sample_rate)


@functools.lru_cache(maxsize=4096)
def _tone(start: int, count: int, sample_rate: int) -> bytes:
    """``count`` samples of the tone from sample ``start``. Cached: every utterance of the same
    length is the same chunks (and bytes are immutable), so concurrent sessions share them."""
    t = (np.arange(start, start + count, dtype=np.float32)) / sample_rate
    wave = 0.1 * np.sin(2 * math.pi * 220.0 * t)
    return (wave * 32767).astype("<i2").tobytes()


def build_sim_runners(script: SimScript) -> RunnerSet:
    return RunnerSet(
        kind="sim",
        vad=EnergyVad(),
        stt=SimStt(script.stt),
        llm=SimLlm(script.llm),
        tts=SimTts(script.tts),
        turn=SimTurnJudge(quiet_ms=SIM_TURN_QUIET_MS),
    )
