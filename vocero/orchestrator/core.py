"""What every part of a session shares: its context, runners, output, machine and memory.

The parts (listening, turns, responding, acting, answers, completion) each hold the one
:class:`SessionCore` of their session and nothing of each other. Events go through
:meth:`SessionCore.fire`, which asks the machine, performs the effects that cannot wait (tell the
client the new state; stop the output) through handlers the session registers, and returns the
step so the caller performs the rest. Nothing here reads the machine's state to decide; the last
state told to the client (:attr:`SessionCore.state_name`) is kept for display and records.
Every structure that grows with the call is bounded here, with its rule next to it.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import overload

import structlog

from vocero.contracts import events as ev
from vocero.contracts.actions import ActionCoordinator
from vocero.contracts.builtins import zone_of
from vocero.contracts.domain import ToolSpec
from vocero.contracts.errors import CODES, ErrorCode
from vocero.contracts.events import SessionState
from vocero.contracts.ports import ClaimTopic, Message, Timers
from vocero.inference.runner_set import RunnerSet
from vocero.orchestrator.context import NullMetrics, SessionContext, SessionMetrics, Timeouts
from vocero.orchestrator.echo import EchoGate
from vocero.orchestrator.generation import Generation
from vocero.orchestrator.ids import new_id
from vocero.orchestrator.machine import Effect, Event, SessionMachine, Step
from vocero.orchestrator.output import OutFrame, OutputChannel
from vocero.orchestrator.recording import NullRecorder, SessionRecorder
from vocero.orchestrator.vocabulary import identifiers_heard, profile_terms, session_vocabulary
from vocero.speech import (
    Admission,
    ClaimCatalog,
    GenerationRef,
    PlannerSettings,
    ToolEvidence,
    UnitPlanner,
)
from vocero.speech.values import text_values

log = structlog.get_logger("vocero.session")

MAX_HISTORY_MESSAGES = 64
MAX_HISTORY_CHARS = 24_000
"""The model sees at most the last 64 messages and 24,000 characters of the call (the oldest go
first); the store keeps the whole call, so nothing is lost for review or resumption."""
MAX_TOOL_CALLS = 32
"""Tool results of the session a later answer may still cite (a follow-up record backs a
promise made turns later): the last 32."""
MAX_GENERATIONS = 16
"""Finished generations are remembered (for late cancels, playout reports and delivery) only
while they are among the last 16 of the session."""


class History:
    """What the model may see: caller turns, assistant text as heard, tool messages. Bounded."""

    def __init__(self, messages: list[Message] | None = None) -> None:
        self._messages: list[Message] = []
        self._chars = 0
        self.version = 0
        """Grows with every message: what was derived from the history is current while it
        is unchanged."""
        for message in messages or []:
            self.append(message)

    def append(self, message: Message) -> None:
        self.version += 1
        self._messages.append(message)
        self._chars += len(message.content)
        while len(self._messages) > 1 and (
            len(self._messages) > MAX_HISTORY_MESSAGES or self._chars > MAX_HISTORY_CHARS
        ):
            self._chars -= len(self._messages.pop(0).content)

    def remove(self, message: Message) -> bool:
        """Take back one message, this very one (a caller's first part joined to what they went
        on to say, ADR-0037); False if it is no longer held."""
        for index, held in enumerate(self._messages):
            if held is message:
                del self._messages[index]
                self._chars -= len(message.content)
                self.version += 1
                return True
        return False

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        return self._messages[index]

    def messages(self) -> list[Message]:
        return list(self._messages)


class Generations:
    """The current generation and the recent ones, by id (bounded by :data:`MAX_GENERATIONS`)."""

    def __init__(self, out: OutputChannel, admission: Admission) -> None:
        self._out = out
        self._admission = admission
        self._by_id: OrderedDict[str, Generation] = OrderedDict()
        self.current: Generation | None = None

    def begin(self, turn_id: str) -> Generation:
        generation = Generation(generation_id=new_id("gen"), turn_id=turn_id)
        self.current = generation
        self._admission.begin(generation.generation_id)
        self._by_id[generation.generation_id] = generation
        while len(self._by_id) > MAX_GENERATIONS:
            old_id, old = self._by_id.popitem(last=False)
            if old.done:
                self._out.forget(old_id)
            else:  # still running (a stuck task): keep it, it will be forgotten later
                self._by_id[old_id] = old
                self._by_id.move_to_end(old_id, last=False)
                break
        return generation

    def get(self, generation_id: str) -> Generation | None:
        return self._by_id.get(generation_id)

    def live(self) -> Generation | None:
        """The current generation while it has not finished."""
        current = self.current
        return current if current is not None and not current.done else None

    def ids(self) -> list[str]:
        return list(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)


class SessionCore:
    """One session's shared state and plumbing."""

    def __init__(
        self,
        ctx: SessionContext,
        runners: RunnerSet,
        out: OutputChannel,
        *,
        coordinator: ActionCoordinator | None,
        recorder: SessionRecorder | None,
        metrics: SessionMetrics | None,
        timeouts: Timeouts,
        clock: Timers,
    ) -> None:
        self.ctx = ctx
        self.runners = runners
        self.out = out
        self.coordinator = coordinator
        self.recorder: SessionRecorder = recorder or NullRecorder()
        self.metrics: SessionMetrics = metrics or NullMetrics()
        self.timeouts = timeouts
        self.clock = clock
        self.monotonic = clock.monotonic
        self.machine = SessionMachine("CONFIGURING")
        self.history = History()
        self.admission = Admission(max_age_ms=ctx.profile.unit_max_age_ms)
        self.generations = Generations(out, self.admission)
        self.catalog = ClaimCatalog.of(ctx.profile.claims)
        self.claim_topics = [
            ClaimTopic(key=c.key, text=c.text, topics=list(c.topics)) for c in ctx.profile.claims
        ]
        self.tool_calls: deque[ToolEvidence] = deque(maxlen=MAX_TOOL_CALLS)
        self._profile_terms = profile_terms(ctx.profile)
        self._vocabulary: tuple[int, tuple[str, ...]] = (-1, ())
        self._values: frozenset[tuple[str, str]] = frozenset()
        self._values_key: tuple[object, int] = (None, -1)
        self._line_values: dict[str, frozenset[tuple[str, str]]] = {}
        """The values of each caller line in the history, read on the caller's day of
        ``_values_key``."""
        self._speech_config: tuple[str, PlannerSettings, dict[str, ToolSpec]] | None = None
        self._handlers: dict[Effect, Callable[..., None]] = {
            Effect.REPORT_STT_DOWN: self._report_stt_down
        }
        self.state_name: SessionState = "CONFIGURING"
        """The state last told to the client (and the store): for display and records only."""
        self.barge_ins = 0
        self.false_barge_ins = 0
        self.caller_speaking = False
        """The caller is speaking now (an utterance is in progress, or the client said so)."""
        turn_taking = ctx.profile.turn_taking
        self.echo = EchoGate(
            margin_db=turn_taking.barge_in_echo_db, window_ms=turn_taking.echo_window_ms
        )
        """How loud the agent's own recent output was: the barge-in threshold while it speaks."""

    def vocabulary(self) -> tuple[str, ...]:
        """The speech recogniser's hint for the caller's next words (:mod:`.vocabulary`):
        worked out again only when the history changed."""
        version, terms = self._vocabulary
        if version != self.history.version:
            heard = identifiers_heard(self.history)
            terms = session_vocabulary(heard, self._profile_terms)
            self._vocabulary = (self.history.version, terms)
        return terms

    @property
    def locale(self) -> str:
        """The session's effective locale (a ``session.update`` may change it)."""
        return self.ctx.effective.locale

    def on(self, effect: Effect, handler: Callable[..., None]) -> None:
        """Register who performs a synchronous effect (stop the output, watch speech); it is
        called with the details given to :meth:`fire`."""
        self._handlers[effect] = handler

    def fire(self, event: Event, **details: str) -> Step:
        """Feed the machine one event; perform the immediate effects; return the step."""
        step = self.machine.process(event)
        for effect in step.effects:
            if effect is Effect.EMIT_STATE:
                self.state_name = step.state
                self.control(ev.StateChanged(state=step.state, previous=step.previous))
                self.recorder.state(self.ctx.session_id, step.state)
            else:
                handler = self._handlers.get(effect)
                if handler is not None:
                    handler(**details)
        return step

    def control(
        self,
        payload: ev.ServerPayload,
        envelope: type[ev.ServerEnvelope] | None = None,
        *,
        turn_id: str = "",
    ) -> None:
        self.out.control(OutFrame(payload=payload, envelope=envelope, turn_id=turn_id))

    def error(self, code: ErrorCode) -> None:
        info = CODES[code]
        self.metrics.count("errors", code=code.value)
        self.control(
            ev.Error(
                code=code.value,
                category=info.category.value,
                retryable=info.retryable,
                user_message_key=info.user_message_key,
                correlation_id=new_id("corr"),
            )
        )

    def remember(self, message: Message) -> None:
        self.history.append(message)

    def caller_values(self) -> frozenset[tuple[str, str]]:
        """The critical values of the caller's heard lines in the history, each line read once
        (and again only when the caller's day changes)."""
        today = (
            datetime.fromtimestamp(self.clock.now(), UTC)
            .astimezone(zone_of(self.ctx.caller.timezone))
            .date()
        )
        if self._values_key != (today, self.history.version):
            known = self._line_values if self._values_key[0] == today else {}
            lines: dict[str, frozenset[tuple[str, str]]] = {}
            for message in self.history:
                line = message.content
                if message.role == "user" and line not in lines:
                    found = known.get(line)
                    if found is None:  # values expand one by one: a union of lines is exact
                        found = frozenset(text_values([line], today=today))
                    lines[line] = found
            self._line_values = lines  # only the lines the history still holds
            self._values = frozenset().union(*lines.values())
            self._values_key = (today, self.history.version)
        return self._values

    def cite(self, call: ToolEvidence) -> None:
        self.tool_calls.append(call)

    def planner(self, generation: Generation) -> UnitPlanner:
        """The unit planner of one generation: the catalog, this call's caller words and tool
        results as evidence, the question revision it answers."""
        ctx = self.ctx
        ref = GenerationRef(
            generation.generation_id, generation.turn_id, self.admission.question_revision
        )
        config = self._speech_config
        if config is None or config[0] != ctx.effective.locale:  # an update changed the locale
            settings = PlannerSettings.of(
                ctx.profile, locale=ctx.effective.locale, timezone=ctx.caller.timezone
            )
            config = (ctx.effective.locale, settings, {t.name: t for t in ctx.profile.tools})
            self._speech_config = config
        return UnitPlanner(
            ref,
            catalog=self.catalog,
            settings=config[1],
            clock=self.clock,
            tools=config[2],
            caller_lines=[m.content for m in self.history if m.role == "user"],
            session_tools=self.tool_calls,
            caller_values=self.caller_values(),
        )

    def stt_down(self) -> bool:
        return self.runners.stt.status().health == "unavailable"

    def stt_ready(self) -> bool:
        return self.runners.stt.status().health in ("ready", "degraded")

    def _report_stt_down(self, **_: str) -> None:
        self.error(ErrorCode.STT_UNAVAILABLE)

    def degrade(self, code: ErrorCode) -> None:
        """The recogniser is down: say so once, drop the speech in progress, go to text mode."""
        self.error(code)
        self.fire(Event.SPEECH_DISCARDED)
        self.fire(Event.DEPENDENCY_FAILED)
