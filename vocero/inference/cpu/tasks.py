"""The embedded agent's memory of a task across turns, rebuilt from the conversation as heard.

The CPU runner is shared by every session and keeps no state: what the caller is in the middle
of asking is read back from the messages each request carries. A task is opened by a caller turn
that names a tool but leaves a required value out ("Move my appointment to Friday"); later turns
fill values in ("APT-1001", "at 3 pm"), one question at a time, until it can be proposed. An
identifier the caller did not give is resolved by listing their records (the profile's list tool
of the same domain): one record is taken, two are offered by what tells them apart, more are
asked for by number. A task ends when its tool was called, or a turn asks for something else.

While a proposal is being confirmed (``LlmRequest.pending``), a turn that changes one of its
values is a correction: the same tool with the new value, which the gate makes a new revision.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import Message, ToolIntent
from vocero.inference.cpu import router, schema

_ORDINALS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "other": 1, "last": -1, "latter": -1,
             "former": 0}
_QUESTIONS = {
    "date": "What day would you like?",
    "time": "What time would suit you?",
    "when": "When should we call you back?",
    "reason": "What is it about?",
    "channel": "Should we call you, or is it something for our team to do?",
}


@dataclass(frozen=True, slots=True)
class Task:
    tool: ToolDefinition
    arguments: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    listed: tuple[dict[str, Any], ...] = ()
    """Records the caller's list tool returned while this task was open."""


@dataclass(frozen=True, slots=True)
class Step:
    """What the agent does next: call a tool, or ask one question."""

    intent: ToolIntent | None = None
    question: str = ""


def correction(
    utterance: str, pending: ToolIntent | None, tools: Sequence[ToolDefinition], today: dt.date
) -> ToolIntent | None:
    """The pending proposal with the values this turn changes, or ``None`` when it changes none
    ("no wait, Friday" -> the same reschedule on Friday)."""
    if pending is None:
        return None
    tool = next((t for t in tools if t.name == pending.name), None)
    if tool is None:
        return None
    found, _, _ = router.fill_arguments(tool, utterance, today)
    changed = {k: v for k, v in found.items() if pending.arguments.get(k) != v}
    kinds = {router.field_kind(k, {}) for k in changed}
    if not changed or not kinds & {"id", "date", "time", "when", "enum", "channel"}:
        return None
    return ToolIntent(name=pending.name, arguments={**pending.arguments, **changed})


def open_task(
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    today: dt.date,
    *,
    before_last_turn: bool = True,
) -> Task | None:
    """The task the conversation left open before its last caller turn (or, with
    ``before_last_turn=False``, after everything it holds), if any."""
    task: Task | None = None
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    end = last_user if before_last_turn else len(messages)
    for index, message in enumerate(messages):
        if index >= end:
            break
        if message.role == "user":
            task = _advance(task, message.content, tools, today)
        elif message.role == "tool" and task is not None:
            task = None if message.tool_name == task.tool.name else _after_tool(task, message)
    return task


def next_step(
    task: Task | None,
    utterance: str,
    decision: router.Route,
    tools: Sequence[ToolDefinition],
    today: dt.date,
) -> Step | None:
    """What to do with this turn given the open task; ``None``: no task concerns it."""
    if decision.tool is not None and (task is None or decision.tool.name != task.tool.name):
        task = Task(decision.tool, dict(decision.arguments), decision.missing)
    elif task is not None:
        task = _fill(task, utterance, today)
    else:
        return None
    return _step(task, tools)


def after_list(
    task: Task | None, result: Message, tools: Sequence[ToolDefinition]
) -> Step | None:
    """A list result that answers the open task's missing identifier."""
    if task is None:
        return None
    return _step(_after_tool(task, result), tools, listed_now=True)


# ------------------------------------------------------------------------------ internals


def _advance(
    task: Task | None, utterance: str, tools: Sequence[ToolDefinition], today: dt.date
) -> Task | None:
    decision = router.route(utterance, list(tools), today)
    if decision.tool is not None and (task is None or decision.tool.name != task.tool.name):
        if not decision.missing:
            return None  # a complete request: it was acted on there and then
        return Task(decision.tool, dict(decision.arguments), decision.missing)
    if task is None:
        return None
    task = _fill(task, utterance, today)
    return task if task.missing else None


def _after_tool(task: Task, message: Message) -> Task:
    records = _records(message.tool_result)
    if not records or not _id_field(task):
        return task
    return Task(task.tool, task.arguments, task.missing, tuple(records))


def _fill(task: Task, utterance: str, today: dt.date) -> Task:
    found, _, _ = router.fill_arguments(task.tool, utterance, today)
    arguments = {**task.arguments, **found}
    id_field = _id_field(task)
    if id_field and id_field not in arguments and task.listed:
        picked = _pick(utterance, task.listed)
        if picked is not None and id_field in picked:
            arguments[id_field] = picked[id_field]
    missing = tuple(m for m in task.missing if m not in arguments)
    return Task(task.tool, arguments, missing, task.listed)


def _step(task: Task, tools: Sequence[ToolDefinition], *, listed_now: bool = False) -> Step:
    if not task.missing:
        return Step(intent=ToolIntent(name=task.tool.name, arguments=task.arguments))
    first = task.missing[0]
    id_field = _id_field(task)
    if first == id_field:
        if task.listed:
            if len(task.listed) == 1:
                filled = {**task.arguments, first: task.listed[0][first]}
                rest = tuple(m for m in task.missing if m != first)
                return _step(Task(task.tool, filled, rest, task.listed), tools)
            if listed_now or len(task.listed) == 2:
                return Step(question=_which(task, first))
        lister = _list_tool(task.tool, tools)
        if lister is not None and not task.listed:
            return Step(intent=ToolIntent(name=lister.name, arguments={}))
        return Step(question=_ask_id(first))
    return Step(question=_ask(task.tool, first))


def _id_field(task: Task) -> str:
    properties = schema.model_facing(task.tool).get("properties", {})
    return next((n for n in properties if router.field_kind(n, properties[n]) == "id"), "")


def _list_tool(tool: ToolDefinition, tools: Sequence[ToolDefinition]) -> ToolDefinition | None:
    domain = router.tool_concepts(tool)[:-1]
    for candidate in tools:
        concepts = router.tool_concepts(candidate)
        if concepts[-1] == "list" and concepts[:-1] == domain:
            return candidate
    return None


def _records(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    for value in (result or {}).values():
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            return [v for v in value if v.get("status", "scheduled") != "cancelled"]
    return []


def _pick(utterance: str, records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The record the caller means: by ordinal ("the first one"), or by words it alone has."""
    words = set(re.findall(r"[a-z0-9]+", utterance.lower()))
    for word, index in _ORDINALS.items():
        if word in words and -len(records) <= index < len(records):
            return records[index]
    scored = []
    for record in records:
        text = " ".join(str(v) for v in record.values() if isinstance(v, str)).lower()
        own = set(re.findall(r"[a-z0-9]+", text)) & words
        scored.append((len(own), record))
    scored.sort(key=lambda s: s[0], reverse=True)
    if scored and scored[0][0] > 0 and (len(scored) == 1 or scored[0][0] > scored[1][0]):
        return scored[0][1]
    return None


def _which(task: Task, id_field: str) -> str:
    noun = _noun(id_field)
    options = [_describe(r) for r in task.listed[:2]]
    return f"Which {noun}: {options[0]}, or {options[1]}?"


def _describe(record: dict[str, Any]) -> str:
    """What tells a record apart when it is spoken: its kind and its date, not its id."""
    label = next(
        (str(record[k]) for k in ("service", "title", "name", "description") if record.get(k)), ""
    )
    when = ""
    if isinstance(record.get("date"), str):
        try:
            day = dt.date.fromisoformat(record["date"])
            when = f"on {day:%A}, {day:%B} {day.day}"
        except ValueError:
            when = ""
    text = " ".join(p for p in (f"the {label.lower()}" if label else "", when) if p)
    return text or str(record.get("id", "the other one"))


def _noun(id_field: str) -> str:
    return id_field.lower().removesuffix("_id").replace("_", " ") or "one"


def _ask_id(id_field: str) -> str:
    noun = _noun(id_field)
    return f"Which {noun} is it? Please tell me the {noun} number."


def _ask(tool: ToolDefinition, name: str) -> str:
    properties = tool.input_schema.get("properties", {})
    kind = router.field_kind(name, properties.get(name, {}))
    return _QUESTIONS.get(kind, f"What {name.replace('_', ' ')} should I use?")


def accepted_offer(
    messages: Sequence[Message], tools: Sequence[ToolDefinition], today: dt.date
) -> ToolIntent | None:
    """A "yes" to the agent's own offer of a time ("Shall we call you at four tomorrow
    afternoon?", asked after a call-back was not recorded): the call-back at the offered time."""
    assistant = next((m for m in reversed(messages) if m.role == "assistant"), None)
    refused = next(
        (m for m in reversed(messages) if m.role == "tool" and m.tool_status == "rejected"), None
    )
    if assistant is None or refused is None or "?" not in assistant.content:
        return None
    tool = next((t for t in tools if t.name == refused.tool_name), None)
    if tool is None:
        return None
    offered, _, _ = router.fill_arguments(tool, assistant.content, today)
    timing = ("when", "date", "time")
    when = {k: v for k, v in offered.items() if router.field_kind(k, {}) in timing}
    if not when:
        return None
    asked = [m.content for m in messages if m.role == "user"][:-1]
    earlier: dict[str, Any] = {}
    for text in asked:
        found, _, _ = router.fill_arguments(tool, text, today)
        earlier.update({k: v for k, v in found.items() if k not in when})
    return ToolIntent(name=tool.name, arguments={**earlier, **when})
