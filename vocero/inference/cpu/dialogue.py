"""The CPU runners' dialogue manager: what the agent does with one turn, decided without I/O.

:func:`decide` takes the request as the orchestrator sends it (the conversation as heard, the
pending proposal, the profile's tools and claims, the caller's clock) and returns one
:data:`Decision`: call a tool (with arguments from the caller's words), ask one question for one
missing field, answer with the profile's own words, let the small model chat (only when the
deployment opted in), or say nothing (after a tool result: the orchestrator reads it out in the
profile's words, grounded in it). The runner (:mod:`.llm`) performs the decision; this module
never awaits, so every case is a unit test.

Everything it knows comes from the request: tool names, descriptions and JSON Schemas, the
built-in each tool resolves to (``ToolDefinition.builtin``, never its model-facing name), the
claims' wording and topics, and the intent model fitted from them (:mod:`.intents`).

Order of a caller turn: a correction of the proposal being confirmed; an open task's answer or a
tool the rules recognise (:mod:`.router`, :mod:`.tasks`); a "yes" to the agent's own offer; a
catalog question (when the profile has the knowledge built-in); a conversational act
(:mod:`.small_talk`); otherwise what the intent model ranks first, or "I can't help with that".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import structlog

from vocero.contracts.builtins import KNOWLEDGE_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import LlmRequest, ToolIntent
from vocero.inference.cpu import confirmation, replies, router, small_talk, tasks

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Call:
    """Call ``intent``; ``model_fill`` names required free-text fields the model fills."""

    intent: ToolIntent
    model_fill: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Say:
    """Say ``text`` (a question, or an answer in the profile's own words)."""

    text: str


@dataclass(frozen=True, slots=True)
class Chat:
    """Let the model chat within the word budget (``free_text="model"`` deployments only)."""


@dataclass(frozen=True, slots=True)
class Silent:
    """Say nothing: the orchestrator reads the tool result out."""


Decision = Call | Say | Chat | Silent


def builtin_tool(tools: Sequence[ToolDefinition], builtin: str) -> ToolDefinition | None:
    """The profile's tool that resolves to Vocero's ``builtin``, whatever it is named."""
    return next((t for t in tools if t.builtin == builtin), None)


def clock(request: LlmRequest, fallback: dt.datetime | None = None) -> dt.datetime:
    """The caller's local time: the session clock's instant in the caller's timezone."""
    try:
        zone = ZoneInfo(request.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    if request.now is not None:
        return dt.datetime.fromtimestamp(request.now, zone)
    return (fallback or dt.datetime.now(dt.UTC)).astimezone(zone)


def decide(request: LlmRequest, *, today: dt.date, chat: bool = False) -> Decision:
    """What the agent does with this turn (``chat``: unmatched turns go to the model)."""
    last = request.messages[-1] if request.messages else None
    if last is not None and last.role == "tool":
        return _after_tool(request, today)
    utterance = replies.last_user_text(request)
    corrected = tasks.correction(utterance, request.pending, request.tools, today)
    if corrected is not None:
        log.info("llm.correction", tool=corrected.name)
        return Call(corrected)
    decision = router.route(utterance, request.tools, today) if utterance else router.Route(None)
    opened = tasks.open_task(request.messages, request.tools, today)
    step = tasks.next_step(opened, utterance, decision, request.tools, today)
    if step is None and confirmation.classify(utterance) == "confirm":
        offer = tasks.accepted_offer(request.messages, request.tools, today)
        step = tasks.Step(intent=offer) if offer is not None else None
    if step is not None:
        return _stepped(request, step, decision)
    knowledge = builtin_tool(request.tools, KNOWLEDGE_TOOL)
    if knowledge is not None and not chat and _asks_the_catalog(utterance):
        log.info("llm.tool_routed", tool=knowledge.name, runner_up="")
        return Call(ToolIntent(name=knowledge.name, arguments={"query": utterance}))
    if chat:
        return Chat()
    return Say(small_talk.reply(utterance, request))


def new_request(request: LlmRequest, answer: str, today: dt.date) -> bool:
    """Whether a turn said while a question is open asks for something else: a changed value,
    another tool, a request the profile answers."""
    if tasks.correction(answer, request.pending, request.tools, today) is not None:
        return True
    if confirmation.classify(answer) in ("confirm", "reject") and len(answer.split()) <= 4:
        return False
    decision = router.route(answer, request.tools, today)
    if decision.tool is not None and (
        request.pending is None or decision.tool.name != request.pending.name
    ):
        return True
    return small_talk.is_request(answer)


# ------------------------------------------------------------------------------ internals


def _after_tool(request: LlmRequest, today: dt.date) -> Decision:
    """A list result may answer the open task's missing identifier; any other result is read
    out by the orchestrator."""
    last = request.messages[-1]
    opened = tasks.open_task(request.messages[:-1], request.tools, today, before_last_turn=False)
    step = tasks.after_list(opened, last, request.tools)
    if step is not None and step.intent is not None:
        return Call(step.intent)
    if step is not None and step.question:
        return Say(step.question)
    return Silent()


def _stepped(request: LlmRequest, step: tasks.Step, decision: router.Route) -> Decision:
    if step.gave_up:
        log.info("llm.question_dropped", tool=step.intent.name if step.intent else "")
        return Say(small_talk.give_up(request))
    if step.question:
        return Say(step.question)
    assert step.intent is not None
    log.info("llm.tool_routed", tool=step.intent.name, runner_up=decision.runner_up)
    fill = (
        decision.model_fill
        if decision.tool is not None and (decision.tool.name == step.intent.name)
        else ()
    )
    return Call(step.intent, fill)


def _asks_the_catalog(utterance: str) -> bool:
    """A question no business tool answers, that is not small talk."""
    return len(utterance.split()) >= 2 and not small_talk.is_conversational(utterance)
