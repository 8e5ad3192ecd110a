"""Tools inside an answer: what the orchestrator does with a tool intent and the gate's plan.

The policy plane decides (through the :class:`ActionCoordinator` port); the actor acts on the
decision: explain a denial, read a proposal back (the question opens), or run an authorized
operation in the session's task group, outside the generation's cancel scope, so a barge-in stops
the words and never a dispatched operation; its statuses are still reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import anyio
import structlog

from vocero.contracts import events as ev
from vocero.contracts.actions import (
    ActionCoordinator,
    StatusCallback,
    ToolOutcome,
    ToolPlan,
    TurnRef,
)
from vocero.contracts.builtins import VOCERO_SERVER
from vocero.contracts.domain import ToolSpec
from vocero.contracts.ports import Message, ToolIntent
from vocero.observability import tracing
from vocero.orchestrator.context import SessionContext, SessionMetrics
from vocero.orchestrator.generation import Generation
from vocero.orchestrator.machine import Event, Step
from vocero.speech import EvidenceRef, ToolEvidence, UnitKind

log = structlog.get_logger("vocero.acting")


class ActorHost(Protocol):
    """What the actor needs from its session."""

    coordinator: ActionCoordinator | None
    metrics: SessionMetrics
    monotonic: Callable[[], float]
    ctx: SessionContext

    @property
    def locale(self) -> str:
        """The session's effective locale (what values are read in)."""
        ...

    def fire(self, event: Event, **details: str) -> Step: ...

    def control(self, payload: ev.ServerPayload) -> None: ...

    def remember(self, message: Message) -> None: ...

    def cite(self, call: ToolEvidence) -> None:
        """A tool result later answers of the session may still rest on."""
        ...


class Asked(Protocol):
    """Where a server's question is posted while a call runs (:class:`.asking.Asking`)."""

    @property
    def posted(self) -> anyio.Event: ...


class Says(Protocol):
    """The part of a speaker the actor uses: application wording, and citing a tool result."""

    async def say(
        self, text: str, *, kind: UnitKind = ..., evidence: Sequence[EvidenceRef] = ...
    ) -> None: ...

    def cite(self, call: ToolEvidence) -> None: ...


@dataclass(slots=True)
class PendingCall:
    """A tool call waiting on the caller's answer to its server's question (it runs on)."""

    plan: ToolPlan
    done: anyio.Event
    box: list[ToolOutcome]
    turn_id: str
    """The turn whose answer made the call (and said the question)."""


class Actor:
    def __init__(self, host: ActorHost, tg: anyio.abc.TaskGroup, asked: Asked) -> None:
        self._host = host
        self._tg = tg
        self._asked = asked
        self.pending: PendingCall | None = None
        """The call a server question suspended (its answer turn waits for its result)."""

    async def propose(
        self,
        generation: Generation,
        turn: TurnRef,
        intent: ToolIntent,
        history: Sequence[Message] = (),
    ) -> ToolPlan:
        """Hand the intent to the gate; ``history`` is the conversation as heard."""
        self._host.fire(Event.TOOL_INTENT)
        coordinator = self._host.coordinator
        if coordinator is None:
            return ToolPlan(
                kind="deny",
                tool=intent.name,
                reason_code="tool_not_allowed",
                summary="I can't do that here.",
            )
        ref = TurnRef(
            session_id=turn.session_id,
            turn_id=turn.turn_id,
            generation_id=generation.generation_id,
            traceparent=turn.traceparent,
        )
        with tracing.span(tracing.POLICY, tool=intent.name) as span:
            plan = await coordinator.propose(
                ref, intent, history=history, locale=self._host.locale
            )
            span.set(decision=plan.kind, reason_code=plan.reason_code)
        return plan

    async def run_plan(
        self, generation: Generation, speaker: Says, plan: ToolPlan
    ) -> ToolEvidence | Literal["asked"] | None:
        """Act on the gate's decision. The tool's result (what the answer may now cite and say)
        when it ran; ``None`` when the answer ends here (a denial or a question was said);
        ``"asked"`` when the tool's server asks the caller something first (the call waits)."""
        host = self._host
        if plan.kind == "deny":
            host.fire(Event.DENIED)
            self.tool_status(
                plan.tool_call_id, plan.proposal_id, "rejected", plan.reason_code, tool=plan.tool
            )
            host.metrics.count("denials", reason_code=plan.reason_code)
            if plan.result is not None:  # the model learns the call did not happen
                host.remember(
                    Message(
                        role="tool",
                        content="",
                        tool_name=plan.tool,
                        tool_result=dict(plan.result),
                        tool_status="rejected",
                    )
                )
            await speaker.say(plan.summary)
            return None
        if plan.kind == "confirm":
            host.fire(Event.SENSITIVE_ACTION)
            host.control(
                ev.ConfirmationRequired(
                    proposal_id=plan.proposal_id,
                    revision=plan.revision,
                    tool=plan.tool,
                    summary=plan.summary,
                    fields=plan.fields,
                    expires_at=plan.expires_at,
                )
            )
            await say_disclosures(speaker, plan)
            await speaker.say(plan.summary, kind="readback", evidence=[proposal_evidence(plan)])
            return None
        host.fire(Event.ALLOWED)  # after a confirmation the session is already running it
        outcome = await self.execute(generation, plan)
        if outcome is None:
            return "asked"
        host.fire(Event.TOOL_RESULT)
        return self.evidence(plan, outcome, speaker)

    def evidence(self, plan: ToolPlan, outcome: ToolOutcome, speaker: Says) -> ToolEvidence:
        """What a finished call lets the answer say and cite."""
        host = self._host
        spec = host.ctx.profile.tool(plan.tool)
        evidence = ToolEvidence(
            tool_call_id=plan.tool_call_id or outcome.tool_call_id,
            tool=plan.tool,
            status=outcome.status,
            result=outcome.result,
            arguments=outcome.arguments,
            reason_code=outcome.reason_code,
            builtin=None if spec is None else builtin_of(spec),
        )
        host.cite(evidence)
        speaker.cite(evidence)
        return evidence

    async def execute(self, generation: Generation, plan: ToolPlan) -> ToolOutcome | None:
        """Run the operation in the session's task group: a barge-in stops the words, never a
        dispatched operation; its status is still reported and its result remembered. ``None``
        when its server asked the caller something first: the call waits for the answer
        (:attr:`pending`), and this answer ends by asking it."""
        self.pending = None  # one left by a question that timed out is over by now
        done = anyio.Event()
        box: list[ToolOutcome] = []

        async def run() -> None:
            try:
                box.append(await self._run(plan))
            finally:
                done.set()

        self._tg.start_soon(run)
        async with anyio.create_task_group() as waiting:  # the first of: done, a question

            async def until(event: anyio.Event) -> None:
                await event.wait()
                waiting.cancel_scope.cancel()

            waiting.start_soon(until, done)
            waiting.start_soon(until, self._asked.posted)
        if not done.is_set():
            self.pending = PendingCall(plan, done, box, generation.turn_id)
            return None
        generation.side_effect = generation.side_effect or box[0].side_effect
        return box[0]

    async def resumed(self) -> ToolOutcome | None:
        """The suspended call's outcome, once the caller answered its question."""
        pending, self.pending = self.pending, None
        if pending is None:
            return None
        await pending.done.wait()
        return pending.box[0]

    async def _run(self, plan: ToolPlan) -> ToolOutcome:
        host = self._host
        coordinator = host.coordinator
        assert coordinator is not None
        started = host.monotonic()
        try:
            with tracing.span(tracing.MCP, tool=plan.tool) as span:
                outcome = await coordinator.execute(plan, self._status_of(plan.tool))
                span.set(status=outcome.status, reason_code=outcome.reason_code)
        except Exception:
            log.exception("tool_execution_failed")
            outcome = ToolOutcome(
                tool_call_id=plan.tool_call_id,
                proposal_id=plan.proposal_id,
                status="unknown",
                reason_code="execution_error",
                side_effect=True,
            )
        host.metrics.observe_ms(
            "tool_latency_ms",
            (host.monotonic() - started) * 1000.0,
            tool=plan.tool,
            outcome=outcome.status,
        )
        host.remember(
            Message(
                role="tool",
                content="",
                tool_name=plan.tool,
                tool_result=dict(outcome.result or {}),
                tool_status=outcome.status,
            )
        )
        return outcome

    def tool_status(
        self,
        tool_call_id: str,
        proposal_id: str,
        status: ev.ToolStatus,
        reason: str,
        *,
        tool: str = "",
    ) -> None:
        """Tell the client how a call stands; a read is a ``lookup``, never shown as an action
        (a proposal always belongs to a write)."""
        spec = self._host.ctx.profile.tool(tool) if tool else None
        lookup = spec is not None and spec.action_class == "read" and not proposal_id
        self._host.control(
            ev.ToolStatusChanged(
                tool_call_id=tool_call_id,
                proposal_id=proposal_id,
                status=status,
                reason_code=reason,
                kind="lookup" if lookup else "action",
            )
        )

    def _status_of(self, tool: str) -> StatusCallback:
        def report(tool_call_id: str, proposal_id: str, status: ev.ToolStatus, reason: str) -> None:
            self.tool_status(tool_call_id, proposal_id, status, reason, tool=tool)

        return report


async def say_disclosures(speaker: Says, plan: ToolPlan) -> None:
    """The required disclosures a question carries, verbatim, before its read-back: approved
    wording citing its step and version (ADR-0030); the policy decides from playout whether
    they were heard."""
    for disclosure in plan.disclosures:
        await speaker.say(
            disclosure.text, kind="claim",
            evidence=[EvidenceRef(source_id=disclosure.step_id, version=disclosure.version)],
        )


def proposal_evidence(plan: ToolPlan) -> EvidenceRef:
    """A read-back rests on the proposal it reads (its canonical fields), named by its id."""
    return EvidenceRef(tool_call_id=plan.proposal_id or plan.tool_call_id or "proposal")


def builtin_of(spec: ToolSpec) -> str:
    """The Vocero built-in a profile tool resolves to ("" for an MCP server's tool)."""
    return spec.resolves_to if spec.server == VOCERO_SERVER else ""
