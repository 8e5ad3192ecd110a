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
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, Literal

import structlog

from vocero.contracts.errors import ErrorCode
from vocero.contracts.ports import (
    IntentClassified,
    LlmOutput,
    LlmRequest,
    TextChunk,
    ToolIntent,
)
from vocero.inference.cpu import confirmation, replies, router, schema, small_talk, tasks, threads
from vocero.inference.cpu.llama import LlamaEngine
from vocero.inference.cpu.settings import QueueSettings
from vocero.inference.cpu.shell import RunnerShell

log = structlog.get_logger(__name__)
_TODAY = re.compile(r"\btoday(?: is|:)?\s*(?:\w+,?\s+)?(\d{4}-\d{2}-\d{2})", re.IGNORECASE)
KNOWLEDGE = "knowledge.search"
_LABELS: dict[str, confirmation.Intent] = {
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
            lambda: threads.run(self._engine.load),
            lambda: self._classify_with_model("yes"),
        )

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
        if self._asks_something(request, answer):
            return IntentClassified(intent="new_request")
        intent = confirmation.classify(answer)
        if intent is None:
            intent = await self._classify_with_model(answer)
        return IntentClassified(intent=intent)

    async def _classify_with_model(self, answer: str) -> confirmation.Intent:
        messages = [
            {"role": "system", "content": _CLASSIFY_PROMPT},
            {"role": "user", "content": answer},
        ]
        shape = schema.choice_schema("intent", list(_LABELS))
        value = await threads.run(lambda: self._engine.json_object(messages, shape, max_tokens=16))
        return _LABELS.get(str(value.get("intent")), "uncertain")

    async def _reply(self, request: LlmRequest) -> AsyncIterator[TextChunk]:
        messages = replies.chat_messages(request)
        max_tokens = request.max_words * 2 + 16
        deltas = threads.iterate(lambda: self._engine.chat_stream(messages, max_tokens=max_tokens))
        async for chunk in replies.within_budget(deltas, request.max_words):
            yield chunk


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
    ) -> None:
        super().__init__("llm.smollm2", engine, queue)
        self._today = today
        self._free_text = free_text

    async def _respond(self, request: LlmRequest) -> AsyncIterator[LlmOutput]:
        last = request.messages[-1] if request.messages else None
        today = self._date(request)
        if last is not None and last.role == "tool":
            opened = tasks.open_task(
                request.messages[:-1], request.tools, today, before_last_turn=False
            )
            step = tasks.after_list(opened, last, request.tools)
            if step is not None and (step.intent is not None or step.question):
                yield step.intent or TextChunk(text=step.question)
            # Otherwise nothing: a 135M model words data unreliably, so the orchestrator reads
            # the result out in the profile's words (``readout``), grounded in the result.
            return
        utterance = replies.last_user_text(request)
        corrected = tasks.correction(utterance, request.pending, request.tools, today)
        if corrected is not None:
            log.info("llm.correction", tool=corrected.name)
            yield corrected
            return
        decision = (
            router.route(utterance, request.tools, today) if utterance else router.Route(None)
        )
        step = tasks.next_step(
            tasks.open_task(request.messages, request.tools, today),
            utterance,
            decision,
            request.tools,
            today,
        )
        if step is None and confirmation.classify(utterance) == "confirm":
            offer = tasks.accepted_offer(request.messages, request.tools, today)
            step = tasks.Step(intent=offer) if offer is not None else None
        if step is None and self._knowledge(request, utterance):
            log.info("llm.tool_routed", tool=KNOWLEDGE, runner_up="")
            yield ToolIntent(name=KNOWLEDGE, arguments={"query": utterance})
            return
        if step is None:
            async for chunk in self._conversational(request, utterance):
                yield chunk
            return
        if step.gave_up:
            log.info("llm.question_dropped", tool=step.intent.name if step.intent else "")
            yield TextChunk(text=small_talk.give_up(request))
            return
        if step.question:
            yield TextChunk(text=step.question)
            return
        assert step.intent is not None
        tool = next((t for t in request.tools if t.name == step.intent.name), None)
        arguments = step.intent.arguments
        if tool is not None and decision.tool is tool and decision.model_fill:
            arguments = await self._fill(request, decision)
            broken = tuple(schema.violations(tool, arguments))
            if broken:
                log.warning("llm.arguments_invalid", tool=tool.name, fields=broken)
                yield TextChunk(text=replies.clarifying_question(tool, broken[:1]))
                return
        log.info("llm.tool_routed", tool=step.intent.name, runner_up=decision.runner_up)
        yield ToolIntent(name=step.intent.name, arguments=arguments)

    def _knowledge(self, request: LlmRequest, utterance: str) -> bool:
        """A question no business tool answers goes to the approved claims, when the profile
        offers ``knowledge.search``, unless it is small talk."""
        offered = any(t.name == KNOWLEDGE for t in request.tools)
        return (
            offered
            and len(utterance.split()) >= 2
            and not small_talk.is_conversational(utterance)
            and self._free_text != "model"
        )

    def _conversational(self, request: LlmRequest, utterance: str) -> AsyncIterator[TextChunk]:
        if self._free_text == "model":
            return self._reply(request)
        return replies.within_budget(
            replies.one(small_talk.reply(utterance, request)), request.max_words
        )

    def _asks_something(self, request: LlmRequest, answer: str) -> bool:
        today = self._date(request)
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

    async def _fill(self, request: LlmRequest, decision: router.Route) -> dict[str, Any]:
        assert decision.tool is not None
        shape = schema.arguments_schema(decision.tool, decision.arguments)
        instruction = (
            f"Fill the arguments of the tool {decision.tool.name} ({decision.tool.description}) "
            "from the caller's request. Answer with JSON only."
        )
        messages = [
            {"role": "system", "content": instruction},
            {"role": "user", "content": replies.last_user_text(request)},
        ]
        return await threads.run(lambda: self._engine.json_object(messages, shape))

    def _date(self, request: LlmRequest) -> dt.date:
        for message in request.messages:
            found = _TODAY.search(message.content) if message.role == "system" else None
            if found:
                return dt.date.fromisoformat(found.group(1))
        return self._today()
