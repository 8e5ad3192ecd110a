"""Fault-injecting fakes for the inference ports, built on the simulators."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from vocero.contracts.actions import (
    ConfirmationVerdict,
    StatusCallback,
    ToolOutcome,
    ToolPlan,
    TurnRef,
)
from vocero.contracts.domain import ToolDefinition, VoiceRef
from vocero.contracts.errors import CapacityError
from vocero.contracts.ports import (
    ClaimTopic,
    Health,
    LlmOutput,
    LlmRequest,
    Message,
    RunnerStatus,
    ToolCallRequest,
    ToolIntent,
    ToolResult,
    Transcription,
)
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
        self.vocabularies: list[tuple[str, ...]] = []
        """The ``vocabulary`` of every ``transcribe`` call."""
        self.one_at_a_time = anyio.Lock()
        """Recognitions run one at a time, like a model with capacity 1."""
        self.hang_first = False
        """The first recognition never finishes (until cancelled)."""
        self.held: anyio.Event | None = None
        """When set to an event, every recognition waits for it (a slow recogniser)."""

    def status(self) -> RunnerStatus:
        return RunnerStatus(health=self.health)

    async def transcribe(
        self, pcm16: bytes, *, sample_rate: int, locale: str, utterance_id: str = "",
        vocabulary: Sequence[str] = (),
    ) -> Transcription:
        self.calls.append(utterance_id)
        self.vocabularies.append(tuple(vocabulary))
        async with self.one_at_a_time:
            if self.hang_first and len(self.calls) == 1:
                await anyio.sleep_forever()
            if self.held is not None:
                await self.held.wait()
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
        self.prepared: list[tuple[list[str], list[str]]] = []
        """Each ``prepare``: the tools' names and the claims' keys."""

    async def prepare(
        self,
        tools: Sequence[ToolDefinition],
        claims: Sequence[ClaimTopic],
        refused: Sequence[ToolDefinition] = (),
    ) -> None:
        self.prepared.append(([t.name for t in tools], [c.key for c in claims]))

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


# ------------------------------------------------------------------------- the action path


ToolAnswer = ToolResult | Callable[[ToolCallRequest], ToolResult]


class FakeToolGateway:
    """A scripted :class:`~vocero.contracts.ports.ToolGateway`: the tools it exposes, what each
    answers, every request it received (what "reached the MCP server"). ``hold(tool)`` keeps
    calls of that tool waiting until ``release(tool)``: a slow tool, a late result."""

    def __init__(self, definitions: list[ToolDefinition], answers: dict[str, ToolAnswer]) -> None:
        self._definitions = definitions
        self._answers = answers
        self.requests: list[ToolCallRequest] = []
        self._held: dict[str, anyio.Event] = {}

    def definitions(self) -> list[ToolDefinition]:
        return list(self._definitions)

    def hold(self, tool: str) -> None:
        self._held[tool] = anyio.Event()

    def release(self, tool: str) -> None:
        self._held.pop(tool, anyio.Event()).set()

    def calls(self, tool: str) -> list[ToolCallRequest]:
        return [r for r in self.requests if r.tool == tool]

    async def call(self, request: ToolCallRequest) -> ToolResult:
        self.requests.append(request)
        held = self._held.get(request.tool)
        if held is not None:
            await held.wait()
        answer = self._answers.get(request.tool)
        if answer is None:
            return ToolResult(content={"error": "unknown_tool"}, is_error=True)
        return answer(request) if callable(answer) else answer


@dataclass
class FakeActionCoordinator:
    """A scripted :class:`~vocero.contracts.actions.ActionCoordinator` for orchestrator tests:
    each intent gets the next plan scripted for its tool, each answer the next verdict. It
    decides nothing itself; it records what the orchestrator asked of it."""

    plans: dict[str, list[ToolPlan]] = field(default_factory=dict)
    verdicts: list[ConfirmationVerdict] = field(default_factory=list)
    outcomes: dict[str, ToolOutcome] = field(default_factory=dict)
    proposed: list[tuple[TurnRef, ToolIntent]] = field(default_factory=list)
    answers: list[tuple[str, int, str, str]] = field(default_factory=list)
    restated: list[bool] = field(default_factory=list)
    executed: list[ToolPlan] = field(default_factory=list)
    deliveries: list[tuple[str, str, bool]] = field(default_factory=list)
    question: ToolPlan | None = None
    locales: list[str] = field(default_factory=list)

    async def propose(
        self,
        turn: TurnRef,
        intent: ToolIntent,
        *,
        history: Sequence[Message] = (),
        locale: str = "",
    ) -> ToolPlan:
        self.proposed.append((turn, intent))
        self.locales.append(locale)
        plan = self.plans[intent.name].pop(0)
        if plan.kind == "confirm":
            self.question = plan
        return plan

    async def execute(self, plan: ToolPlan, on_status: StatusCallback) -> ToolOutcome:
        self.executed.append(plan)
        outcome = self.outcomes.get(plan.tool) or ToolOutcome(
            tool_call_id=plan.tool_call_id, status="committed", result={"summary": "Done."})
        on_status(plan.tool_call_id, plan.proposal_id, outcome.status, outcome.reason_code)
        return outcome

    async def submit_confirmation(
        self,
        turn: TurnRef | None,
        proposal_id: str,
        revision: int,
        decision: Literal["confirm", "reject", "uncertain"],
        *,
        source: Literal["button", "speech"],
        restated: bool = False,
    ) -> ConfirmationVerdict:
        self.answers.append((proposal_id, revision, decision, source))
        self.restated.append(restated)
        verdict = self.verdicts.pop(0)
        if verdict.binds:
            self.question = None
        return verdict

    def active_question(self) -> ToolPlan | None:
        return self.question

    async def record_delivery(
        self, generation_id: str, *, heard_text: str, complete: bool, observable: bool = True
    ) -> None:
        self.deliveries.append((generation_id, heard_text, complete))

    async def readback_started(self, plan: ToolPlan, generation_id: str) -> None:
        return None

    async def drop_question(self, proposal_id: str, revision: int) -> None:
        self.question = None

    def withdrawable(self) -> ToolPlan | None:
        return None

    def set_input_handler(self, ask: Any) -> None:
        return None

    async def withdraw(self, turn: TurnRef) -> str:
        return ""


class RecordingRecorder:
    """A session recorder that keeps what it is given: the units (every entry, in order) and
    each admitted unit's audio."""

    def __init__(self) -> None:
        self.entries: list[Any] = []
        self.audio: dict[str, bytearray] = {}

    def turn(self, session_id: str, turn_id: str, source: str, text: str) -> None:
        return None

    def generation(self, session_id: str, generation_id: str, turn_id: str, **_: object) -> None:
        return None

    def state(self, session_id: str, state: str) -> None:
        return None

    def unit(self, entry: Any) -> None:
        self.entries.append(entry)

    def unit_audio(self, session_id: str, unit_id: str, *, sample_rate: int) -> Any:
        buffer = self.audio.setdefault(unit_id, bytearray())

        class Sink:
            def write(self, pcm16: bytes) -> None:
                buffer.extend(pcm16)

            def close(self) -> None:
                return None

        return Sink()

    def final(self) -> dict[str, Any]:
        """Each unit's first decided entry (the final disposition), by unit id."""
        decided: dict[str, Any] = {}
        for entry in self.entries:
            if entry.disposition != "planned":
                decided.setdefault(entry.unit_id, entry)
        return decided
