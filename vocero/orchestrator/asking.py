"""A server's questions during a tool call, asked and answered by voice (MCP elicitation).

The gateway hands the session an :class:`~vocero.contracts.ports.InputRequest` (a flat schema of
fields a caller may answer; secrets never reach here) and waits for the
:class:`~vocero.contracts.ports.InputResponse`. Here:

* the answer in progress says the question and ends, leaving the call waiting (the machine holds
  the question open); the browser gets ``tool.input_required.v1`` (the fields, or, in URL mode,
  the link with the server named: a URL is shown, never spoken);
* each caller turn while it is open fills fields from what was said (dates, numbers, choices,
  yes/no, words), canonical and checked against the schema (``answer_problems``), one field
  asked at a time, an unclear one asked again (at most twice, then the question is cancelled);
* for a write, the answers are read back and only a "yes" heard after every value sends them: a
  changed value ("no, five people") is a new answer revision, read back again; a "no" declines;
* then the call carries on, and the turn that answered waits for its result and says it;
* a question nobody answers before the gateway's ``input_timeout_s`` is cancelled there, and the
  session is told (:attr:`Asking.on_unanswered`): its machine decides whether the agent takes
  the turn to say what became of the call
  (:meth:`~vocero.orchestrator.responding.Responder.unanswered`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from vocero.contracts import events as ev
from vocero.contracts.builtins import VOCERO_SERVER, zone_of
from vocero.contracts.english import identifier_words, join_list, list_items
from vocero.contracts.lexicon import consent
from vocero.contracts.ports import InputRequest, InputResponse
from vocero.mcp_gateway import answer_problems
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.machine import Event
from vocero.orchestrator.spoken_answers import label, said, values_in

log = structlog.get_logger("vocero.asking")

MAX_REASKS = 2
"""Unclear answers to one field, or to the read-back, before the question is cancelled."""


@dataclass(slots=True)
class Question:
    """One server question being asked: the caller's answers so far, and its outcome."""

    request: InputRequest
    values: dict[str, Any] = field(default_factory=dict)
    reading_back: bool = False
    revision: int = 0
    """Grows with every changed answer: a "yes" binds only the read-back of this revision."""
    reasks: int = 0
    parts: tuple[str, ...] = ()
    heard_revision: int = -1
    """The answer revision whose read-back the caller heard whole (-1: none yet)."""
    answered: anyio.Event = field(default_factory=anyio.Event)
    response: InputResponse | None = None

    @property
    def properties(self) -> dict[str, Any]:
        props = self.request.requested_schema.get("properties", {})
        return props if isinstance(props, dict) else {}

    @property
    def missing(self) -> list[str]:
        required = self.request.requested_schema.get("required", [])
        return [name for name in required if name not in self.values]

    @property
    def write(self) -> bool:
        return bool(self.request.proposal_id)


class Asking:
    """The session's server questions: one open at a time."""

    def __init__(self, core: SessionCore) -> None:
        self.core = core
        self.open: Question | None = None
        self.posted = anyio.Event()
        """Set when a question is waiting to be said (the answer in progress ends with it)."""
        self.on_unanswered: Callable[[], None] | None = None
        """Called when a question's time ran out with nobody answering it (it has closed): the
        session's machine decides whether the agent says what became of the call."""

    # ----------------------------------------------------------------------- the gateway

    async def ask(self, request: InputRequest) -> InputResponse:
        """The :data:`~vocero.contracts.ports.InputHandler` of this session's tool calls."""
        if self.open is not None:
            return InputResponse(action="decline")  # one question at a time
        question = Question(request)
        self.open = question
        core = self.core
        fields = [
            ev.InputField(name=n, title=str(p.get("title") or label(n)))
            for n, p in question.properties.items()
        ]
        core.control(
            ev.ToolInputRequired(
                question_id=request.id,
                server=request.server,
                tool=request.tool,
                mode=request.mode,
                fields=fields,
                link=ev.InputLinkShown(
                    server=request.link.server, url=request.link.url, message=request.link.message
                )
                if request.link
                else None,
            )
        )
        core.fire(Event.INPUT_REQUESTED)
        self.posted.set()
        try:
            await question.answered.wait()
        finally:
            self.posted = anyio.Event()
            if self.open is question:  # not answered in time (the call ends input_timeout)
                self.open = None
                core.fire(Event.QUESTION_CLOSED)
                if self.on_unanswered is not None:
                    self.on_unanswered()
        assert question.response is not None
        return question.response

    # ----------------------------------------------------------------------- the caller

    def first_words(self) -> str:
        """What the answer in progress says to ask the open question."""
        question = self.open
        if question is None:
            return ""
        if question.request.mode == "url":
            return (
                f"I've put a link from {question.request.server} on your screen. "
                "Say done once you have finished there, or no to skip it."
            )
        return self._ask_next(question)

    def answer(self, text: str) -> tuple[str, bool]:
        """A caller turn while the question is open: what to say next, and whether the question
        is settled (the call carries on)."""
        question = self.open
        assert question is not None
        if question.request.mode == "url":
            return self._url_answer(question, text)
        if question.reading_back:
            return self._readback_answer(question, text)
        return self._collect(question, text)

    def heard(self, heard_text: str) -> None:
        """What the caller heard of the answer that said the read-back (by playout): a "yes"
        binds only once every value of this revision was heard."""
        question = self.open
        if question is not None and question.reading_back:
            heard_all = _in_order(question.parts, heard_text)
            question.heard_revision = question.revision if heard_all else -1

    # ------------------------------------------------------------------------ internals

    def _collect(self, question: Question, text: str) -> tuple[str, bool]:
        found = values_in(question.properties, text, self._today())
        verbatim(question, text, found)
        if not found:
            return self._unclear(question, "Sorry, I didn't catch that.")
        candidate = {**question.values, **found}
        problems = answer_problems(question.request, candidate)
        bad = {p.split("/", 1)[0].split(":", 1)[0] for p in problems} & set(found)
        for name in bad:
            del candidate[name]
        question.values = {k: v for k, v in candidate.items() if k not in bad}
        if bad:
            return self._unclear(question, "That doesn't fit.")
        question.reasks = 0
        if question.missing:
            return self._ask_next(question), False
        if not question.write:
            return self._settle(
                question, InputResponse(action="accept", content=dict(question.values))
            )
        return self._read_back(question), False

    def _readback_answer(self, question: Question, text: str) -> tuple[str, bool]:
        changed = {
            k: v
            for k, v in values_in(question.properties, text, self._today()).items()
            if question.values.get(k) != v
        }
        if changed and not answer_problems(question.request, {**question.values, **changed}):
            question.values.update(changed)  # a changed answer: a new revision, read back
            question.revision += 1
            return self._read_back(question), False
        intent = consent.classify(text)
        if intent == "reject":
            return self._settle(question, InputResponse(action="decline"))
        if intent == "confirm" and question.heard_revision == question.revision:
            return self._settle(
                question, InputResponse(action="accept", content=dict(question.values))
            )
        if intent == "confirm":
            return self._unclear(question, "Let me finish first.", readback=True)
        return self._unclear(question, "Sorry, I didn't catch that.", readback=True)

    def _url_answer(self, question: Question, text: str) -> tuple[str, bool]:
        intent = consent.classify(text)
        if intent == "confirm" or re.search(r"\b(done|finished|ok|okay)\b", text, re.I):
            return self._settle(question, InputResponse(action="accept"))
        if intent == "reject":
            return self._settle(question, InputResponse(action="decline"))
        return self._unclear(question, "Say done once you have finished, or no to skip it.")

    def _unclear(
        self, question: Question, lead: str, *, readback: bool = False
    ) -> tuple[str, bool]:
        question.reasks += 1
        if question.reasks > MAX_REASKS:
            return self._settle(
                question, InputResponse(action="cancel"), "I'll leave that for now."
            )
        again = self._read_back(question) if readback else self._ask_next(question)
        return f"{lead} {again}", False

    def _settle(
        self, question: Question, response: InputResponse, words: str = ""
    ) -> tuple[str, bool]:
        question.response = response
        question.answered.set()
        self.open = None
        self.core.fire(Event.INPUT_ANSWERED)
        return words, True

    def _ask_next(self, question: Question) -> str:
        name = question.missing[0] if question.missing else next(iter(question.properties), "")
        prop = question.properties.get(name, {})
        if question.request.server == VOCERO_SERVER and prop.get("description"):
            return str(prop["description"])  # a required step's own question (ADR-0030)
        title = str(prop.get("title") or prop.get("description") or label(name)).strip()
        named = " ".join(identifier_words(question.request.server))  # "crm_api_v2": no words
        server = named.capitalize() if named else "The service"
        if prop.get("enum"):
            choice = join_list((str(o) for o in prop["enum"]), "or")
            return f"{server} needs to know the {title.lower()}: {choice}?"
        if prop.get("type") == "boolean":
            return f"{title.rstrip('?')}? Please say yes or no."
        return f"{server} needs to know: {title.lower()}?"

    def _read_back(self, question: Question) -> str:
        parts = list_items(
            said(question.properties.get(name, {}), name, value, self._today())
            for name, value in question.values.items()
        )
        question.parts = tuple(parts)  # as the sentence says them: each is heard in it
        question.reading_back = True
        return f"To confirm: {join_list(parts)}. Shall I go ahead?"

    def _today(self) -> dt.date:
        now = dt.datetime.fromtimestamp(self.core.clock.now(), dt.UTC)
        return now.astimezone(zone_of(self.core.ctx.caller.timezone)).date()


def verbatim(question: Question, text: str, found: dict[str, Any]) -> None:
    """A field marked ``x-vocero-verbatim`` (a required step's fact, ADR-0030: compared by the
    policy, never said back) takes the caller's words as said, only while it is the one asked."""
    asked = question.missing[0] if question.missing else ""
    if question.properties.get(asked, {}).get("x-vocero-verbatim") and text.strip():
        found[asked] = text.strip()


def _in_order(parts: tuple[str, ...], heard: str) -> bool:
    position = 0
    for part in parts:
        found = heard.find(part, position)
        if found < 0:
            return False
        position = found + len(part)
    return bool(parts)
