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

Order of a caller turn: a correction of the proposal being confirmed (:mod:`.corrections`); an
open task's answer or a tool the rules recognise (:mod:`.router`, :mod:`.tasks`, refined by
:mod:`.tool_choice`); a "yes" to the agent's own offer; a catalog question (when the profile has
the knowledge built-in); a conversational act (:mod:`.small_talk`); otherwise what the intent
model ranks first, or "I can't help with that". A line the intent model takes for a prohibited
tool's request (``LlmRequest.refused``: the profile lists it, it is never offered) opens no
task and asks no catalog, whatever the rules read in it: it is out of scope.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import anyio
import msgspec
import structlog

from vocero.contracts.builtins import FOLLOWUPS_TOOL, HANDOFF_TOOL, KNOWLEDGE_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.lexicon import consent
from vocero.contracts.ports import ClaimTopic, LlmRequest, ToolIntent
from vocero.inference import threads
from vocero.inference.dialogue import (
    corrections,
    cues,
    intents,
    known,
    replies,
    router,
    schema,
    small_talk,
    tasks,
    tool_choice,
)

log = structlog.get_logger(__name__)
CATALOG_CONFIDENCE = 0.45
"""The intent model's probability for the catalog search at which a line asks the catalog; a
line it is less sure of is out of scope ("Please close my account" is not an opening-hours
question because "close" is one of their topics)."""
CATALOG_OVER_TOOL = 0.6
"""The catalog search's probability at which an incomplete tool request asks it instead."""


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


class IntentModels:
    """The intent model of each tool set a runner served, fitted once (off the event loop) and
    kept for :data:`KEPT` tool sets; its answers are kept per line (turns replay earlier lines)."""

    KEPT = 8

    def __init__(self) -> None:
        self._models: OrderedDict[str, _Memo] = OrderedDict()
        self._fitting: dict[str, anyio.Event] = {}

    async def model(
        self,
        tools: Sequence[ToolDefinition],
        claims: Sequence[ClaimTopic],
        refused: Sequence[ToolDefinition] = (),
    ) -> _Memo:
        """The tool set's model (``refused``: the prohibited tools it refuses), fitted once: a
        second asker waits for the fit in flight."""
        key = _fingerprint(tools, claims, refused)
        while key not in self._models and key in self._fitting:
            await self._fitting[key].wait()
        memo = self._models.get(key)
        if memo is None:
            done = self._fitting[key] = anyio.Event()
            try:
                fitted = await threads.run(
                    lambda: intents.IntentModel.fit(tools, claims, refused)
                )
                memo = self._models.setdefault(key, _Memo(fitted))
            finally:
                del self._fitting[key]
                done.set()
            while len(self._models) > self.KEPT:
                self._models.popitem(last=False)
        self._models.move_to_end(key)
        return memo

    def fitted(
        self,
        tools: Sequence[ToolDefinition],
        claims: Sequence[ClaimTopic],
        refused: Sequence[ToolDefinition] = (),
    ) -> _Memo | None:
        """The model of this tool set if it was fitted already (no fit on this path)."""
        return self._models.get(_fingerprint(tools, claims, refused))


class _Memo:
    """An intent model whose decisions are remembered for the last :data:`SIZE` lines."""

    SIZE = 512

    def __init__(self, model: intents.IntentModel) -> None:
        self._model = model
        self._seen: OrderedDict[str, intents.Decision] = OrderedDict()

    def rank(self, text: str) -> list[tuple[str, float]]:
        return self._model.rank(text)

    def decide(self, text: str) -> intents.Decision:
        found = self._seen.get(text)
        if found is None:
            found = self._seen[text] = self._model.decide(text)
            if len(self._seen) > self.SIZE:
                self._seen.popitem(last=False)
        return found


def _fingerprint(
    tools: Sequence[ToolDefinition],
    claims: Sequence[ClaimTopic],
    refused: Sequence[ToolDefinition] = (),
) -> str:
    material = [list(tools), list(claims), list(refused)]
    return hashlib.sha256(msgspec.json.encode(material)).hexdigest()


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


def decide(
    request: LlmRequest,
    *,
    today: dt.date,
    chat: bool = False,
    model: _Memo | None = None,
) -> Decision:
    """What the agent does with this turn (``chat``: unmatched turns go to the model;
    ``model``: the profile's intent model, consulted when the rules recognise no tool)."""
    request = known.respelled(request)
    request = msgspec.structs.replace(request, tools=schema.shared_values(list(request.tools)))
    turn = _Turn.of(request, today, model)
    route = _routing(turn)
    last = request.messages[-1] if request.messages else None
    if last is not None and last.role == "tool":
        return _after_tool(turn, route)
    now = turn.now
    utterance = replies.last_user_text(request)
    pending, tools = request.pending, request.tools
    corrected = corrections.correction(utterance, pending, tools, today, now=now)
    if corrected is not None:
        log.info("llm.correction", tool=corrected.name)
        return _known(Call(corrected), request)
    if said := replies.outcome(request):  # "So is that sorted?" after a refused write
        return Say(said)
    opened = tasks.open_task(request.messages, request.tools, today, route=route, now=now)
    if opened is not None and tasks.answers(opened, utterance, today, now=now):
        decision = router.Route(None)  # judged against what was asked before any other reading
    else:
        decision = route(utterance) if utterance else router.Route(None)
    step = tasks.next_step(opened, utterance, decision, request.tools, today, now=now)
    if step is None and consent.classify(utterance) == "confirm":
        offer = tasks.accepted_offer(request.messages, request.tools, today, now=now)
        step = tasks.Step(intent=offer) if offer is not None else None
    if step is not None:
        return _known(_stepped(request, step, decision), request)
    if chat:
        return Chat()
    return _unrouted(turn, utterance)


def new_request(
    request: LlmRequest, answer: str, today: dt.date, *, model: _Memo | None = None
) -> bool:
    """Whether a turn said while a question is open asks for something else: a changed value,
    another tool, a request the profile answers."""
    turn = _Turn.of(request, today, model)
    changed = corrections.correction(answer, request.pending, request.tools, today, now=turn.now)
    if changed is not None:
        return True
    opened = tasks.open_task(
        request.messages,
        request.tools,
        today,
        before_last_turn=False,
        route=_routing(turn),
        now=turn.now,
    )
    if opened is not None and tasks.answers(opened, answer, today, now=turn.now):
        return False  # "Thursday in the morning" answers "What time would suit you?"
    if turn.catalog is not None and turn.catalog.asks_catalog(answer):
        return True  # "wait, what time does the counter close?" asks the catalog
    if consent.classify(answer) in ("confirm", "reject") and len(answer.split()) <= 4:
        return False
    decision = _routing(turn)(answer)
    if decision.tool is not None and (
        request.pending is None or decision.tool.name != request.pending.name
    ):
        return True
    return small_talk.is_request(answer)


def unsaid(
    request: LlmRequest, arguments: dict[str, object], fields: Sequence[str]
) -> tuple[str, ...]:
    """The free-text ``fields`` whose value the model did not take from the caller's own words
    (junk such as "1000000000000000000000000,", or names from the tool's description): every
    number of a value and some of its words must be the caller's, and a value may neither be
    another field's value with nothing of its own nor repeat a word three times (else asked)."""
    said: set[str] = set()
    for message in request.messages:
        if message.role == "user":
            said.update(re.findall(r"[a-z0-9]+", message.content.lower()))
    out: list[str] = []
    for name in fields:
        value = str(arguments.get(name) or "").lower()
        words = re.findall(r"[a-z0-9]+", value)
        numbers = {w for w in words if any(c.isdigit() for c in w)}
        own = [w for w in words if w in said]
        rest = value
        for k, v in arguments.items():
            if k != name and isinstance(v, str) and len(v) >= 3:
                rest = rest.replace(v.lower(), " ")
        # Nothing of its own beside another field's value ("SW-5521" for an extra's name).
        taken = rest != value and not [w for w in re.findall(r"[a-z]+", rest) if w in said]
        named = words == re.findall(r"[a-z0-9]+", name.lower())  # "Sailing" for ``sailing``
        if not own or not numbers <= said or taken or named or _stuck(value):
            out.append(name)
    return tuple(out)


def trimmed(arguments: dict[str, object], fields: Sequence[str]) -> dict[str, object]:
    """The model's free-text ``fields`` cut to their first sentence where the model ran on,
    repeating itself ("the gate code is 4411. the note is 4411. the note is 4411. the"):
    what it wrote before it looped; :func:`unsaid` still judges what is left."""
    out = dict(arguments)
    for name in fields:
        value = out.get(name)
        if isinstance(value, str) and _stuck(value):
            out[name] = re.split(r"(?<=\w)[.;!?](?:\s|$)", value, maxsplit=1)[0].strip()
    return out


def _stuck(value: str) -> bool:
    words = re.findall(r"[a-z0-9]+", value.lower())
    return any(words.count(w) >= 3 for w in set(words))


# ------------------------------------------------------------------------------ internals


@dataclass(frozen=True, slots=True)
class _Turn:
    """What one request's decision needs, worked out once: the caller's clock, the catalog
    search tool and the catalog's own words (``None`` without the knowledge built-in)."""

    request: LlmRequest
    today: dt.date
    now: dt.datetime
    model: _Memo | None
    knowledge: ToolDefinition | None
    catalog: cues.CatalogCues | None

    @classmethod
    def of(cls, request: LlmRequest, today: dt.date, model: _Memo | None) -> _Turn:
        knowledge = builtin_tool(request.tools, KNOWLEDGE_TOOL)
        catalog = cues.CatalogCues.of(request.tools, request.claims) if knowledge else None
        return cls(request, today, clock(request), model, knowledge, catalog)


def _after_tool(turn: _Turn, route: tasks.Routing) -> Decision:
    """A list result may answer the open task's missing identifier; any other result is read
    out by the orchestrator."""
    messages = turn.request.messages
    opened = tasks.open_task(
        messages[:-1],
        turn.request.tools,
        turn.today,
        before_last_turn=False,
        route=route,
        now=turn.now,
    )
    step = tasks.after_list(opened, messages[-1], turn.request.tools)
    if step is not None and step.intent is not None:
        return Call(step.intent)
    if step is not None and step.question:
        return Say(step.question)
    return Silent()


def _routing(turn: _Turn) -> tasks.Routing:
    """The rules' tool for a line; when they find none, the intent model's tool (a business
    tool or the call-back built-in, never the catalog search: that is a question's answer, not
    a task), with its values from the caller's words."""
    tools = list(turn.request.tools)
    today, now, model = turn.today, turn.now, turn.model
    knowledge, catalog = turn.knowledge, turn.catalog

    def route(text: str) -> router.Route:
        found = _chosen(text)
        if found.tool is None or not found.arguments:
            return found
        arguments = corrections.self_corrected(found.tool, found.arguments, text, today, now=now)
        return dataclasses.replace(found, arguments=arguments)

    def _chosen(text: str) -> router.Route:
        found = router.route(text, tools, today, now=now)
        if model is None or not text.strip():
            return found
        if tool_choice.refused(model, small_talk.without_pleasantries(text)):
            return router.Route(None)  # what only a prohibited tool does: no tool of ours
        if small_talk.act(text) == "goodbye" or consent.classify(text) == "confirm":
            return router.Route(None)  # "... Ta-ra!"; a bare yes ("Yes, go on then.") opens none
        if found.tool is not None and found.missing and found.tool.builtin != FOLLOWUPS_TOOL:
            found = tool_choice.better_fit(text, found, tools, model, today, now)
        found = tool_choice.overruled(text, found, tools, today, now)
        if found.tool is not None:
            if not found.missing or knowledge is None or found.tool.builtin == FOLLOWUPS_TOOL:
                return found  # complete, or a call-back asked for in so many words
            if len(found.arguments) >= 2 or router.action_requested(found.tool, text):
                return found  # "Can I book ... with Aoife on Friday at 4pm? I'm BD20417."
            # "Is there a fee if I cancel a visit?" names a tool but asks the catalog.
            named = model.decide(small_talk.without_pleasantries(text))
            asks = named.intent == knowledge.name and named.score >= CATALOG_OVER_TOOL
            asks = asks or cues.asks_advice(text)  # "what time am I meant to have it out by?"
            return router.Route(None) if asks or (catalog and catalog.asks_catalog(text)) else found
        if not tool_choice.asks_for_something(text):
            return found  # values alone ("Friday at 3 pm") answer a question, never open a task
        identified = cues.identified_tools(text, tools)
        if catalog is not None and not identified and (
            catalog.asks_catalog(text) or cues.asks_advice(text)  # "am I meant to be there?"
        ):
            return found  # a line naming a record by its identifier asks about the record
        named = model.decide(small_talk.without_pleasantries(text))
        tool = next((t for t in tools if t.name == named.intent), None)
        if tool is None or tool is knowledge or named.score < tool_choice.TOOL_CONFIDENCE:
            tool = tool_choice.named_by_identifier(text, tools, model, today)
        if tool is None:
            # "see Dr. Okafor about a cough": not a goodbye
            tool = tool_choice.named_by_value(text, tools, today, now)
        if tool is None:
            tool = tool_choice.named_by_own_word(text, tools, model, today, now)  # "free"
        if tool is None:
            tool = tool_choice.filled_by_line(text, tools, today, now)
        if tool is None:
            return found
        tool = tool_choice.looked_up(text, tool, tools, today, now)
        tool = tool_choice.fuller(text, tool, tools, today, now)
        arguments, missing, model_fill = router.fill_arguments(tool, text, today, now=now)
        return router.Route(tool, arguments, tuple(missing), tuple(model_fill), learned=True)

    return route


def _unrouted(turn: _Turn, utterance: str) -> Decision:
    """A line no task concerns: a catalog question, a conversational act, or out of scope.

    The rules' acts answer a line that is nothing else ("thanks", "say that again"). A soft act
    ("what can I do?") and any other line go by the intent model: the catalog search when it
    ranks the knowledge tool confidently, when the line asks in a topic only the catalog has,
    or when a person is asked for (the contact claim); the model's act otherwise, else "I can't
    help with that" (always for what a prohibited tool does). Without a model, every line of
    two words or more that no act explains asks the catalog."""
    request, knowledge, model = turn.request, turn.knowledge, turn.model
    found = small_talk.act(utterance)
    if found is not None and found not in small_talk.SOFT_ACTS:
        return Say(small_talk.reply(utterance, request))
    content = small_talk.without_pleasantries(utterance)
    named = model.decide(content) if model is not None and content else None
    handoff = builtin_tool(request.tools, HANDOFF_TOOL)  # the profile hands callers to a person
    if handoff is not None and named is not None and named.intent in ("person", handoff.name):
        log.info("llm.tool_routed", tool=handoff.name, runner_up="")
        return Call(ToolIntent(name=handoff.name, arguments={"reason": content}))
    catalog = knowledge is not None and len(content.split()) >= 2
    if named is not None and named.refused:
        log.info("llm.refused", tool=named.refused)
        catalog = False  # a request for what a prohibited tool does is refused, not looked up
    elif named is not None:
        asked = knowledge is not None and named.intent == knowledge.name
        topical = turn.catalog is not None and turn.catalog.asks_catalog(content)
        topical = topical and not cues.asks_action(content)  # "can you book me a flight?"
        topical = topical or cues.asks_advice(content)  # "am I supposed to be there?"
        catalog = catalog and (
            named.intent == "person" or topical or (asked and named.score >= CATALOG_CONFIDENCE)
        )
    elif found is not None:
        catalog = False
    if catalog and knowledge is not None:
        log.info("llm.tool_routed", tool=knowledge.name, runner_up="")
        return Call(ToolIntent(name=knowledge.name, arguments={"query": content}))
    label = named.intent if named is not None and named.intent in intents.ACTS else None
    if label == intents.OUT_OF_SCOPE and named is not None and not named.refused:
        # "Hello! Terrible weather, isn't it?": a greeting, not a request we refuse
        label = "greet" if small_talk.greeting_remark(utterance) else label
    return Say(small_talk.reply(utterance, request, label=label))


def _known(decision: Decision, request: LlmRequest) -> Decision:
    """A call whose identifier the caller's shown records correct (:mod:`.known`)."""
    if not isinstance(decision, Call):
        return decision
    tool = next((t for t in request.tools if t.name == decision.intent.name), None)
    intent = known.snapped(decision.intent, tool, request.messages)
    if intent != decision.intent:
        log.info("llm.identifier_snapped", tool=intent.name)
    return Call(intent, decision.model_fill)


def _stepped(request: LlmRequest, step: tasks.Step, decision: router.Route) -> Decision:
    if step.gave_up:
        log.info("llm.question_dropped", tool=step.intent.name if step.intent else "")
        return Say(small_talk.give_up(request))
    if step.declined:
        log.info("llm.task_declined", tool=step.intent.name if step.intent else "")
        return Say(small_talk.reply(replies.last_user_text(request) or "forget it", request))
    if step.question:
        return Say(step.question)
    assert step.intent is not None
    log.info("llm.tool_routed", tool=step.intent.name, runner_up=decision.runner_up)
    same = decision.tool is not None and decision.tool.name == step.intent.name
    if same:
        return Call(step.intent, decision.model_fill)
    tool = next((t for t in request.tools if t.name == step.intent.name), None)
    return Call(step.intent, _unfilled_text(tool, step.intent.arguments) if tool else ())


def _unfilled_text(tool: ToolDefinition, arguments: dict[str, object]) -> tuple[str, ...]:
    """The required free-text fields a task's call still lacks: the model fills them from the
    caller's words (and asks when it cannot, :func:`unsaid`)."""
    shown = schema.model_facing(tool)
    properties = shown.get("properties", {})
    return tuple(
        name
        for name in shown.get("required", [])
        if name not in arguments and router.field_kind(name, properties.get(name, {})) == "text"
    )
