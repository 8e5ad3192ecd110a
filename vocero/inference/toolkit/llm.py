"""The CPU language model runner: rules route, SmolLM2 talks.

A turn that ends with the caller's words goes first to :mod:`.router`. When it names one of the
profile's tools, the tool intent is built from rule-extracted values; the model only fills
required free-text fields no rule knows, under a JSON schema with every known value pinned as a
constant and every string bounded, and the result is validated against the tool's own schema. A
tool whose identifier, date or time is missing yields a clarifying question instead of a guess.
A turn that ends with a tool result gets no words from this runner (unless the result moves an
open task on): a 135M model paraphrases data unreliably, so the orchestrator reads the result out
in the profile's words, grounded in it. Anything else (greetings, "what can you do", requests
out of scope) is answered from the profile's own words (:mod:`.small_talk`); a deployment may opt
in to letting the model chat instead (``free_text="model"``: streamed within ``max_words``, but
ungrounded). ``classify_confirmation`` turns use strict rules, then the model
constrained to the three labels.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any, Literal

import structlog

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.errors import ErrorCode
from vocero.contracts.lexicon import consent
from vocero.contracts.ports import (
    ClaimTopic,
    IntentClassified,
    LlmOutput,
    LlmRequest,
    TextChunk,
    ToolIntent,
)
from vocero.inference import threads
from vocero.inference.dialogue import manager as dialogue
from vocero.inference.dialogue import replies, schema
from vocero.inference.toolkit.llama import LlamaEngine
from vocero.inference.toolkit.settings import QueueSettings
from vocero.inference.toolkit.shell import RunnerShell

log = structlog.get_logger(__name__)
_TODAY = re.compile(r"\btoday(?: is|:)?\s*(?:\w+,?\s+)?(\d{4}-\d{2}-\d{2})", re.IGNORECASE)
_LABELS: dict[str, consent.Intent] = {
    "confirm": "confirm",
    "reject": "reject",
    "uncertain": "uncertain",
}
_CLASSIFY_PROMPT = (
    "The assistant asked the caller to confirm an action. Classify the caller's answer as "
    "confirm, reject or uncertain. Answer with JSON."
)


class LlmBase(RunnerShell):
    """Admission, health, warm-up and confirmation classification shared by LLM runners."""

    def __init__(self, name: str, engine: LlamaEngine, queue: QueueSettings) -> None:
        super().__init__(name, queue)
        self._engine = engine

    async def warm_up(self) -> None:
        await self._warm(
            ErrorCode.LLM_UNAVAILABLE,
            self._load_model,
            lambda: self._classify_with_model("yes"),
        )

    async def prepare(
        self,
        tools: Sequence[ToolDefinition],
        claims: Sequence[ClaimTopic],
        refused: Sequence[ToolDefinition] = (),
    ) -> None:
        """Nothing to learn by default."""

    async def generate(self, request: LlmRequest) -> AsyncGenerator[LlmOutput, None]:
        async with self._admission.slot(self._queue.deadline_s):
            if request.mode == "classify_confirmation":
                yield await self._classify(request)
                return
            async for output in self._respond(request):
                yield output

    def _respond(self, request: LlmRequest) -> AsyncIterator[LlmOutput]:
        raise NotImplementedError

    def _asks_something(self, request: LlmRequest, answer: str) -> bool:
        """Whether a turn said while a question is open asks for something else: a changed
        value, a tool of its own, a request the profile answers. Runners that route say so."""
        return False

    async def _classify(self, request: LlmRequest) -> IntentClassified:
        answer = replies.last_user_text(request)
        pending = request.pending
        action = consent.restatable(pending.name, pending.arguments) if pending is not None else ""
        if consent.explicit_yes(answer, action):
            # "Yes, book it.": a yes restating the pending action asks for nothing else.
            return IntentClassified(intent="confirm")
        if self._asks_something(request, answer):
            return IntentClassified(intent="new_request")
        intent = consent.classify(answer, action)
        if intent is None:
            intent = await self._classify_with_model(answer)
        # The model never consents for the caller: its "confirm" stands only for a bare yes.
        return IntentClassified(intent=consent.bound(intent, answer, action=action))

    async def _classify_with_model(self, answer: str) -> consent.Intent:
        messages = [
            {"role": "system", "content": _CLASSIFY_PROMPT},
            {"role": "user", "content": answer},
        ]
        shape = schema.choice_schema("intent", list(_LABELS))
        value = await self._json_object(messages, shape, max_tokens=16)
        return _LABELS.get(str(value.get("intent")), "uncertain")

    async def _reply(self, request: LlmRequest) -> AsyncIterator[TextChunk]:
        messages = replies.chat_messages(request)
        deltas = self._chat_stream(messages, max_tokens=request.max_words * 2 + 16)
        async for chunk in replies.within_budget(deltas, request.max_words):
            yield chunk

    # The model calls, in process on worker threads; a runner that reaches its model over HTTP
    # (vocero/inference/remote/routed.py) overrides these three and nothing else.

    async def _load_model(self) -> None:
        await threads.run(self._engine.load)

    async def _json_object(
        self, messages: list[dict[str, str]], shape: dict[str, Any], *, max_tokens: int = 160
    ) -> dict[str, Any]:
        try:
            return await threads.run(
                lambda: self._engine.json_object(messages, shape, max_tokens=max_tokens)
            )
        except ValueError as exc:  # json.JSONDecodeError: cut off at max_tokens mid-string
            # An unreadable answer fills nothing: the field is asked for, the session goes on.
            log.warning("llm.json_unreadable", error=str(exc)[:200])
            return {}

    def _chat_stream(
        self, messages: list[dict[str, str]], *, max_tokens: int
    ) -> AsyncIterator[str]:
        return threads.iterate(lambda: self._engine.chat_stream(messages, max_tokens=max_tokens))


FreeText = Literal["grounded", "model"]


class RoutedLlm(LlmBase):
    """Rules choose the tool and its structured arguments; the model fills free text and talks."""

    def __init__(
        self,
        engine: LlamaEngine,
        queue: QueueSettings,
        *,
        today: Callable[[], dt.date] = dt.date.today,
        free_text: FreeText = "grounded",
        name: str = "llm.smollm2",
    ) -> None:
        super().__init__(name, engine, queue)
        self._today = today
        self._free_text = free_text
        self._intents = dialogue.IntentModels()

    async def prepare(
        self,
        tools: Sequence[ToolDefinition],
        claims: Sequence[ClaimTopic],
        refused: Sequence[ToolDefinition] = (),
    ) -> None:
        """Fit the intent model of this tool set now (~0.3 s), not on the session's first turn."""
        await self._intents.model(tools, claims, refused)

    async def _respond(self, request: LlmRequest) -> AsyncIterator[LlmOutput]:
        model = await self._intents.model(request.tools, request.claims, request.refused)
        decision = dialogue.decide(
            request, today=self._date(request), chat=self._free_text == "model", model=model
        )
        if isinstance(decision, dialogue.Say):
            async for chunk in replies.within_budget(replies.one(decision.text), request.max_words):
                yield chunk
        elif isinstance(decision, dialogue.Chat):
            async for chunk in self._reply(request):
                yield chunk
        elif isinstance(decision, dialogue.Call):
            yield await self._called(request, decision)

    async def _called(self, request: LlmRequest, decision: dialogue.Call) -> LlmOutput:
        """The decided call, its free-text fields filled by the model under the tool's schema
        (or a question for the first field the model could not fill validly)."""
        intent = decision.intent
        tool = next((t for t in request.tools if t.name == intent.name), None)
        if tool is None or not decision.model_fill:
            return intent
        arguments = dialogue.trimmed(
            await self._fill(request, tool, intent.arguments), decision.model_fill
        )
        unsaid = dialogue.unsaid(request, arguments, decision.model_fill)
        if unsaid:  # junk, or words of the tool's description: asked for, never sent
            log.warning("llm.arguments_unsaid", tool=tool.name, fields=unsaid)
            return TextChunk(text=replies.clarifying_question(tool, unsaid[:1]))
        broken = tuple(schema.violations(tool, arguments))
        if broken:
            log.warning("llm.arguments_invalid", tool=tool.name, fields=broken)
            return TextChunk(text=replies.clarifying_question(tool, broken[:1]))
        return ToolIntent(name=intent.name, arguments=arguments)

    def _asks_something(self, request: LlmRequest, answer: str) -> bool:
        model = self._intents.fitted(request.tools, request.claims, request.refused)
        return dialogue.new_request(request, answer, self._date(request), model=model)

    async def _fill(
        self, request: LlmRequest, tool: ToolDefinition, known: dict[str, Any]
    ) -> dict[str, Any]:
        shape = schema.arguments_schema(tool, known)
        instruction = (
            f"Fill the arguments of the tool {tool.name} ({tool.description}) "
            "from the caller's request. Answer with JSON only."
        )
        messages = [
            {"role": "system", "content": instruction},
            {"role": "user", "content": _task_lines(request)},
        ]
        return await self._json_object(messages, shape)

    def _date(self, request: LlmRequest) -> dt.date:
        """The caller's today: in their timezone, by the session clock (a system line that
        says "today is 2026-12-02" wins, for tests that fix the day in words)."""
        for message in request.messages:
            found = _TODAY.search(message.content) if message.role == "system" else None
            if found:
                return dt.date.fromisoformat(found.group(1))
        if request.now is None:
            return self._today()
        return dialogue.clock(request).date()


def _task_lines(request: LlmRequest) -> str:
    """The caller's lines since the agent last acted (a task's answers with its request), the
    words a free-text field is filled from."""
    lines: list[str] = []
    for message in reversed(request.messages):
        if message.role == "tool":
            break
        if message.role == "user":
            lines.insert(0, message.content)
    return " ".join(lines[-3:])
