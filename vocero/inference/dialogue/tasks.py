"""The embedded agent's memory of a task across turns, rebuilt from the conversation as heard.

The CPU runner is shared by every session and keeps no state: what the caller is in the middle
of asking is read back from the messages each request carries. A task is opened by a caller turn
that names a tool but leaves a required value out ("Move my appointment to Friday"); later turns
fill values in ("APT-1001", "at 3 pm"), one question at a time, until it can be proposed. An
identifier the caller did not give is resolved by listing their records (the profile's list tool
of the same domain): one record is taken, two are offered by what tells them apart, more are
asked for by number. A task ends when its tool was called, or a turn asks for something else.

A turn that does not answer the open question is a new request and is served as one
(docs/protocol.md "Answers and new requests"): another tool, a question of its own, a person asked
for. An answer to a free-text question ("What is it about?") is the caller's words. One question is
asked at most twice; a third time the task is dropped and the agent says what it can do.

While a proposal is being confirmed (``LlmRequest.pending``), a turn that changes one of its
values is a correction: the same tool with the new value, which the gate makes a new revision
(:mod:`.corrections`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vocero.contracts import values
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.lexicon import consent
from vocero.contracts.lexicon.base import alternation
from vocero.contracts.lexicon.en import LEXICON
from vocero.contracts.ports import Message, ToolIntent
from vocero.inference.dialogue import questions, router, schema, small_talk

_ORDINALS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "other": 1, "last": -1, "latter": -1,
             "former": 0}
MAX_ASKS = 2
"""How often one question is asked before the task is dropped."""
_ANSWER_LEAD = re.compile(
    r"^\W*(?:(?:it'?s|it is|that'?s|this is)\s+)?(?:about|regarding|concerning|re)\s+", re.I
)


@dataclass(frozen=True, slots=True)
class Task:
    tool: ToolDefinition
    arguments: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    listed: tuple[dict[str, Any], ...] = ()
    """Records the caller's list tool returned while this task was open."""
    asked: int = 0
    """How often the agent asked (and the caller heard) the question for ``missing[0]``."""
    said: str = ""
    """The caller's lines that opened and filled the task: a day said there is the day of a
    time given later ("the Ridge Room on Thursday", then "half past five")."""


@dataclass(frozen=True, slots=True)
class Step:
    """What the agent does next: call a tool, ask one question, or give up on a question asked
    twice (and say what it can do)."""

    intent: ToolIntent | None = None
    question: str = ""
    gave_up: bool = False
    declined: bool = False
    """The caller dropped the task ("no, forget it"): nothing is done, and the agent says so."""


Routing = Callable[[str], router.Route]
"""What a caller line asks for: the dialogue manager's routing (rules, then its intent model)."""


def open_task(
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    today: dt.date,
    *,
    before_last_turn: bool = True,
    route: Routing | None = None,
    now: dt.datetime | None = None,
) -> Task | None:
    """The task the conversation left open before its last caller turn (or, with
    ``before_last_turn=False``, after everything it holds), if any. ``route`` must be the
    routing the turns were served with, so a task is remembered as it was opened."""
    routing = route or (lambda text: router.route(text, list(tools), today, now=now))
    task: Task | None = None
    done: Task | None = None  # the last request served whole, whose free text the model fills
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    end = last_user if before_last_turn else len(messages)
    for index, message in enumerate(messages):
        if index >= end:
            break
        if message.role == "user":
            task, done = _advance(task, message.content, routing, today, now)
        elif message.role == "assistant" and task is None and done is not None:
            task = _asked_after(done, message.content)  # "Where should we pick you up?"
        elif message.role == "assistant" and task is not None:
            task = _heard(task, message.content, tools)
        elif message.role == "tool" and task is not None:
            task = None if message.tool_name == task.tool.name else _after_tool(task, message)
    return task


def next_step(
    task: Task | None,
    utterance: str,
    decision: router.Route,
    tools: Sequence[ToolDefinition],
    today: dt.date,
    *,
    now: dt.datetime | None = None,
) -> Step | None:
    """What to do with this turn given the open task; ``None``: no task concerns it (or the
    turn asks for something else, and is served as a new request)."""
    if _switches(task, decision, utterance, today, now):
        assert decision.tool is not None
        task = Task(decision.tool, dict(decision.arguments), decision.missing, said=utterance)
    elif task is not None:
        if small_talk.declines(utterance):
            return Step(intent=ToolIntent(name=task.tool.name, arguments={}), declined=True)
        filled = _fill(task, utterance, today, now)
        if filled.missing[:1] == task.missing[:1] and _new_request(utterance):
            return None
        task = filled
    else:
        return None
    step = _step(task, tools)
    if step.question and task.asked >= MAX_ASKS and step.question == _question(task, tools):
        return Step(gave_up=True)
    return step


def answers(
    task: Task, utterance: str, today: dt.date, *, now: dt.datetime | None = None
) -> bool:
    """Whether the line answers the task's open question by its field's kind and says nothing
    else ("Thursday in the morning" to "What time would suit you?"): it fills that field, it is
    never read as a request of its own."""
    if not task.missing or not utterance.strip() or _new_request(utterance):
        return False
    if task.missing[0] in _fill(task, utterance, today, now).missing:
        return False
    kind = router.field_kind(task.missing[0], _property(task.tool, task.missing[0]))
    return kind not in ("reason", "text") and values_only(utterance)


_VALUE_WORDS = re.compile(
    r"\b(?:\d\S*|[a-z]{1,3}-?\d\S*|a\.?m\.?|p\.?m\.?|at|on|in|the|by|around|of|and|or|"
    r"next|this|coming|today|tonight|tomorrow|morning|afternoon|evening|noon|midday|week|"
    rf"{alternation(LEXICON.calendar.weekdays)}|o'?clock|half|quarter|past|to|"
    rf"{alternation(LEXICON.calendar.months)}|"
    rf"{alternation(LEXICON.numbers.cardinals)}|{alternation(LEXICON.numbers.scales)}|"
    r"please|ok|okay|yes|no|it'?s|it|is|make|say|let's|lets|how|about|that|sorry|then|"
    r"hours?|minutes?|mins?|for|an?)\b",
    re.I,
)


def values_only(text: str, extra: re.Pattern[str] | None = None) -> bool:
    """Whether the line says values alone (days, times, numbers, references), nothing more."""
    rest = (extra or _VALUE_WORDS).sub(" ", small_talk.without_pleasantries(text).lower())
    return not any(len(w) > 1 for w in re.findall(r"[a-z']+", rest))


def _property(tool: ToolDefinition, name: str) -> dict[str, Any]:
    found = schema.model_facing(tool).get("properties", {}).get(name, {})
    return found if isinstance(found, dict) else {}


def after_list(
    task: Task | None, result: Message, tools: Sequence[ToolDefinition]
) -> Step | None:
    """A list result that answers the open task's missing identifier."""
    if task is None:
        return None
    return _step(_after_tool(task, result), tools, listed_now=True)


# ------------------------------------------------------------------------------ internals


def _advance(
    task: Task | None, utterance: str, route: Routing, today: dt.date, now: dt.datetime | None
) -> tuple[Task | None, Task | None]:
    """The task open after this line, and the request it completed (served there and then),
    if any."""
    decision = route(utterance)
    if _switches(task, decision, utterance, today, now):
        assert decision.tool is not None
        if not decision.missing:  # a complete request: it was acted on there and then
            return None, Task(decision.tool, dict(decision.arguments), (), said=utterance)
        return Task(decision.tool, dict(decision.arguments), decision.missing, said=utterance), None
    if task is None or small_talk.declines(utterance):
        return None, None
    filled = _fill(task, utterance, today, now)
    if filled.missing[:1] == task.missing[:1] and _new_request(utterance):
        return None, None  # served as a request of its own: the question was dropped
    if filled.missing[:1] == task.missing[:1] and task.asked >= MAX_ASKS:
        return None, None  # asked twice and still unanswered: given up
    return (filled, None) if filled.missing else (None, filled)


def _asked_after(done: Task, said: str) -> Task | None:
    """A request served whole, asking again for the free-text field the runner asked for ("Where
    should we pick you up?" after a booking whose pick-up the model did not find in the
    caller's words): the next line answers that question, it is no request of its own."""
    properties = schema.model_facing(done.tool).get("properties", {})
    for name in properties:
        free = name not in done.arguments and _free_text(done.tool, name)
        if free and questions.ask(done.tool, name) in said:
            return Task(done.tool, done.arguments, (name,), asked=1, said=done.said)
    return None


def _switches(
    task: Task | None,
    decision: router.Route,
    utterance: str,
    today: dt.date,
    now: dt.datetime | None,
) -> bool:
    """Whether the line opens another task than the open one. An incomplete request, or a tool
    the intent model chose, does not take over a task whose question the line answers ("When
    should we call you back?" "Friday at 10, about Miso's prescription")."""
    if decision.tool is None or (task is not None and decision.tool.name == task.tool.name):
        return False
    if task is not None and answers(task, utterance, today, now=now):
        return False  # an answer to the question asked is judged by its field's kind first
    if task is None or not task.missing or not (decision.learned or decision.missing):
        return True  # a complete request of its own ("cancel APT-1001 instead") is served
    return task.missing[0] in _fill(task, utterance, today, now).missing


def _heard(task: Task, said: str, tools: Sequence[ToolDefinition]) -> Task:
    """The task after the caller heard ``said``: one more asking of its question, if it was."""
    question = _question(task, tools)
    if not question or question not in said:
        return task
    return Task(task.tool, task.arguments, task.missing, task.listed, task.asked + 1, task.said)


def _question(task: Task, tools: Sequence[ToolDefinition]) -> str:
    """The question the task asks next ("" when it calls a tool)."""
    return _step(task, tools).question if task.missing else ""


def _new_request(utterance: str) -> bool:
    """A turn that asks for something of its own rather than answering: a question, a person
    asked for, a greeting or goodbye."""
    return small_talk.is_request(utterance) or small_talk.wants_person(utterance)


def _after_tool(task: Task, message: Message) -> Task:
    records = _records(message.tool_result)
    if not records or not _id_field(task):
        return task
    return Task(task.tool, task.arguments, task.missing, tuple(records), task.asked, task.said)


def _fill(task: Task, utterance: str, today: dt.date, now: dt.datetime | None) -> Task:
    found, _, _ = router.fill_arguments(task.tool, utterance, today, now=now)
    arguments = {**task.arguments, **_moment_completed(task, utterance, found, today, now), **found}
    id_field = _id_field(task)
    if id_field and id_field not in arguments and task.listed:
        picked = _pick(utterance, task.listed)
        if picked is not None and id_field in picked:
            arguments[id_field] = picked[id_field]
    asked = task.missing[0] if task.missing else ""
    if asked and asked == id_field and asked not in arguments:
        # "Which order is it?" "It's A124": the answer need not say "order".
        prop = schema.model_facing(task.tool).get("properties", {}).get(asked, {})
        bare = values.bare_identifier(utterance, prop.get("pattern"))
        if bare is not None:
            arguments[asked] = bare
    if asked and asked not in arguments and _free_text(task.tool, asked):
        answer = _free_answer(utterance)
        if answer and not _new_request(utterance) and not _consent_word(utterance):
            # the caller's words answer the question asked: a number in them ("14 Cabra Road")
            # changes no value given before
            arguments = {**arguments, **task.arguments, asked: answer}
    missing = tuple(m for m in task.missing if m not in arguments)
    kept = task.asked if missing[:1] == task.missing[:1] else 0
    return Task(task.tool, arguments, missing, task.listed, kept, f"{task.said} {utterance}")


def _moment_completed(
    task: Task, utterance: str, found: dict[str, Any], today: dt.date, now: dt.datetime | None
) -> dict[str, Any]:
    """A missing date-time completed by this answer and what the caller said before: the day
    from the request ("on Thursday"), the clock from the answer ("half past five in the
    evening"), or the other way round. An answer that says neither a day nor a clock
    completes nothing."""
    out: dict[str, Any] = {}
    said_now = values.time_in(utterance) or values.date_in(utterance, today)
    if not task.said or said_now is None:
        return out
    for name in task.missing:
        if name in found or router.field_kind(name, _property(task.tool, name)) != "datetime":
            continue
        moment = values.moment_in(
            f"{task.said}. {utterance}", now or dt.datetime.combine(today, dt.time(), dt.UTC)
        )
        if moment is not None:
            out[name] = moment
    return out


_YES_OR_NO = re.compile(r"^\W*(?:yes|yeah|yep|yup|no|nope|sure|ok|okay)\b", re.I)


def _consent_word(utterance: str) -> bool:
    """A yes or a no ("Yes, book it."): never the words of a free-text answer."""
    return consent.classify(utterance) in ("confirm", "reject") or bool(
        _YES_OR_NO.match(utterance)
    )


def _free_text(tool: ToolDefinition, name: str) -> bool:
    """A field whose value is the caller's own words (a reason, a note), not a typed value."""
    properties = schema.model_facing(tool).get("properties", {})
    return router.field_kind(name, properties.get(name, {})) in ("reason", "text")


def _free_answer(utterance: str) -> str:
    """The caller's answer to a free-text question, without its lead-in ("It's about ...")."""
    text = _ANSWER_LEAD.sub("", utterance.strip()).strip(" .!?,")
    return text if any(c.isalnum() for c in text) else ""


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
                return _step(Task(task.tool, filled, rest, task.listed, said=task.said), tools)
            if listed_now or len(task.listed) == 2:
                return Step(question=_which(task, first))
        lister = _list_tool(task.tool, tools)
        if lister is not None and not task.listed:
            return Step(intent=ToolIntent(name=lister.name, arguments={}))
        return Step(question=questions.ask(task.tool, first))
    return Step(question=questions.ask(task.tool, first, day=_day_said(task.said)))


_DAY_SAID = re.compile(
    r"\b(?:today|tomorrow|tonight)\b"
    rf"|\b(?:(?:this|next|coming)\s+)?(?:{alternation(LEXICON.calendar.weekdays)})\b",
    re.I,
)


def _day_said(said: str) -> str:
    """The one day the caller's lines said with no clock ("on Thursday" of "the Ridge Room on
    Thursday for one hour"), as a question says it; "" when they said a clock, no day or two."""
    days = {m.group(0).lower() for m in _DAY_SAID.finditer(said)}
    if len(days) != 1 or values.time_in(said) is not None:
        return ""
    words = days.pop().split()
    day = " ".join(w.capitalize() if w in LEXICON.calendar.weekdays else w for w in words)
    relative = words[0] in ("today", "tomorrow", "tonight", "this", "next", "coming")
    return day if relative else f"on {day}"


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
    noun, _ = questions.id_words(task.tool, id_field)
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


def accepted_offer(
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    today: dt.date,
    *,
    now: dt.datetime | None = None,
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
    offered, _, _ = router.fill_arguments(tool, assistant.content, today, now=now)
    timing = ("when", "date", "time")
    when = {k: v for k, v in offered.items() if router.field_kind(k, {}) in timing}
    if not when:
        return None
    asked = [m.content for m in messages if m.role == "user"][:-1]
    earlier: dict[str, Any] = {}
    for text in asked:
        found, _, _ = router.fill_arguments(tool, text, today, now=now)
        earlier.update({k: v for k, v in found.items() if k not in when})
    return ToolIntent(name=tool.name, arguments={**earlier, **when})
