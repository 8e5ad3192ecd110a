"""Steps the policy owner requires before a write (docs/adr/0030-required-steps.md).

A profile lists ``required_steps``; each applies to the writes its ``applies_to`` names (profile
tools, any alias of the same server tool included, and/or action classes). Two kinds:

- ``disclosure``: its ``text`` must have been *heard* in this session before the write, by
  playout, with the read-back's evidence machinery (:mod:`vocero.policy.evidence`): spoken in a
  generation it is ``in_progress`` bound to that generation, and only that generation's playout
  reaching the end of the text satisfies it; an interruption invalidates it until it is spoken
  again, a client that cannot report playout leaves it ``unobservable``.
- ``verify_identity``: the caller is asked for facts (``ask``), the profile *read* tool ``tool``
  is called with them through the ordinary gate and gateway, and each answer named in ``match``
  is compared with the record's field canonically (:func:`same_fact`). A match satisfies the
  step; a mismatch fails it for the rest of the session; no answer, or no record, leaves it
  unsatisfied.

The pure parts (which steps apply, canonical comparison, the question's schema) are functions;
:class:`RequiredSteps` is one session's async shell: the in-memory evidence answers the
conversation at once, and every change is stored in ``evidence_steps`` with its audit event
(``evidence.updated``), which is what the final gate reads (:func:`stored_facts`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio
import msgspec
import structlog

from vocero.contracts.domain import AgentProfile, RequiredStep
from vocero.contracts.ports import InputHandler, InputRequest, Timers
from vocero.policy.evidence import Ev, Step, apply
from vocero.policy.gate import ResolvedTool, StepFact, digest
from vocero.policy.repository import ActionRepository
from vocero.policy.rows import new_id

log = structlog.get_logger("vocero.policy")

STEP_VERSION = "steps.v1"
ASKER_SERVER = "vocero"
"""The ``server`` of a question Vocero itself asks (its words are the step's, said verbatim)."""
ANSWER_TIMEOUT_S = 120.0
"""How long a verification question waits for the caller's answer."""
MAX_GENERATIONS = 64
_NEVER = Step("", 0, step="")
"""No evidence yet."""

Read = Callable[[str, dict[str, Any]], Awaitable[Mapping[str, Any] | None]]
"""Calls a profile read tool through the gate and gateway: its result, ``None`` when none came."""


# ----------------------------------------------------------------------------- pure parts


def applicable(profile: AgentProfile, tool: ResolvedTool | None) -> list[RequiredStep]:
    """The profile's required steps that guard ``tool`` (writes only), in profile order. A step
    naming any profile tool that resolves to the same server tool guards every alias of it. An
    action class covers the business systems' writes, not Vocero's own built-ins (a call-back
    record, a handoff to a person): a caller who asks for a person is never held behind an
    identity check; a step that must guard a built-in names it."""
    if tool is None or not tool.write:
        return []
    names = {
        t.name for t in profile.tools if (t.server, t.resolves_to) == (tool.server, tool.tool)
    }
    return [
        s for s in profile.required_steps
        if names & set(s.applies_to.tools)
        or (not tool.builtin and tool.action_class in s.applies_to.classes)
    ]


def version_of(step: RequiredStep) -> str:
    """The step's policy version: evidence gathered for another wording or rule never counts."""
    return f"{STEP_VERSION}:{digest(msgspec.to_builtins(step))[:16]}"


def canonical_fact(kind: str, value: Any) -> str | None:
    """A fact as compared: ``date`` as ISO (``YYYY-MM-DD``, ``DD/MM/YYYY``, ``12 March 1980``),
    ``number`` as its digits, ``text`` case-, space- and punctuation-insensitive."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    if not text:
        return None
    if kind == "date":
        found = _date(text)
        return found.isoformat() if found else None
    if kind == "number":
        digits = re.sub(r"\D", "", text)
        return digits.lstrip("0") or ("0" if digits else None)
    folded = re.sub(r"[\W_]+", "", text.casefold())
    return folded or None


def same_fact(kind: str, said: Any, recorded: Any) -> bool:
    """Whether the caller's answer and the record's value are the same fact (both readable)."""
    mine, theirs = canonical_fact(kind, said), canonical_fact(kind, recorded)
    return mine is not None and mine == theirs


_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}


def _date(text: str) -> dt.date | None:
    head = text[:10]
    try:
        return dt.date.fromisoformat(head)
    except ValueError:
        pass
    numeric = re.fullmatch(r"(\d{1,2})[/.\-](\d{1,2})[/.\-](\d{4})", text)
    if numeric:
        day, month, year = (int(g) for g in numeric.groups())
        return _safe(year, month, day)
    words = re.findall(r"[a-z]+|\d+", text.casefold())
    month = next((_MONTHS[w[:3]] for w in words if w[:3] in _MONTHS and not w.isdigit()), 0)
    numbers = [int(w) for w in words if w.isdigit()]
    years = [n for n in numbers if n >= 1000]
    days = [n for n in numbers if 1 <= n <= 31]
    if month and years and days:
        return _safe(years[0], month, days[0])
    return None


def _safe(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def question_schema(steps: Sequence[RequiredStep]) -> dict[str, Any]:
    """The flat form schema of one verification question for ``steps``: a field per asked fact
    (``<step id>.<field>``), asked in order, its ``description`` the step's question (said
    verbatim). Every answer is taken as the caller said it (``x-vocero-verbatim``) and read
    here, by :func:`canonical_fact`: a date of birth is not an appointment date, so the
    conversation's date reading (which looks ahead to the next such day) is not used. One
    question for all of them: a call waits on one question at a time."""
    properties = {
        answer_key(step, fact.field): {
            "type": "string", "description": fact.question, "x-vocero-verbatim": True,
        }
        for step in steps
        for fact in step.ask
    }
    return {"type": "object", "properties": properties, "required": list(properties)}


def answer_key(step: RequiredStep, field: str) -> str:
    return f"{step.id}.{field}"


def heard_whole(text: str, heard_text: str) -> bool:
    """Whether ``heard_text`` (what playout says was heard) holds all of ``text``."""
    said = " ".join(text.split())
    return bool(said) and said in " ".join(heard_text.split())


def stored_facts(
    steps: Iterable[RequiredStep], stored: Mapping[str, tuple[str, str]]
) -> tuple[StepFact, ...]:
    """The facts of the final gate from stored evidence (step id -> (status, policy version)):
    evidence stored under another version of the step is ``missing``."""
    facts: list[StepFact] = []
    for step in steps:
        status, version = stored.get(step.id, ("missing", ""))
        facts.append(StepFact(step.id, step.kind, status if version == version_of(step)
                              else "missing"))
    return tuple(facts)


# ------------------------------------------------------------------------- session shell


class RequiredSteps:
    """One session's required steps and their evidence (see the module docstring)."""

    def __init__(
        self,
        profile: AgentProfile,
        repo: ActionRepository,
        session_id: str,
        clock: Timers,
    ) -> None:
        self._profile = profile
        self._repo = repo
        self._session_id = session_id
        self._clock = clock
        self._steps: dict[str, Step] = {}
        self._by_generation: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._lock = anyio.Lock()
        """Held while a change is applied and stored: readers see stored evidence only."""

    def applicable(self, tool: ResolvedTool | None) -> list[RequiredStep]:
        return applicable(self._profile, tool)

    def facts(self, tool: ResolvedTool | None) -> tuple[StepFact, ...]:
        """The session's evidence for ``tool``'s steps now (the propose stage's facts)."""
        return tuple(
            StepFact(s.id, s.kind, step.status, step.failed)
            if (step := self._steps.get(s.id)) is not None
            else StepFact(s.id, s.kind)
            for s in self.applicable(tool)
        )

    def due(self, tool: ResolvedTool | None) -> list[RequiredStep]:
        """Disclosures of ``tool`` not heard yet: what must be spoken before its read-back."""
        return [
            s for s in self.applicable(tool)
            if s.kind == "disclosure" and not self._is_satisfied(s.id)
        ]

    async def heard_all(self, tool: ResolvedTool | None) -> bool:
        """Whether every disclosure of ``tool`` was heard, once the evidence writes already
        under way have committed."""
        async with self._lock:
            return not self.due(tool)

    async def speaking(self, tool: ResolvedTool | None, generation_id: str) -> None:
        """The due disclosures of ``tool`` are being spoken in ``generation_id``."""
        due = self.due(tool)
        if not due or not generation_id:
            return
        _bounded_put(self._by_generation, generation_id, tuple(s.id for s in due))
        for step in due:
            await self._apply(step, Ev.SPOKEN, generation_id)

    async def delivered(
        self, generation_id: str, *, heard_text: str, complete: bool, observable: bool = True
    ) -> None:
        """Playout evidence of one generation: a disclosure it spoke is delivered once its whole
        text was heard (or the generation played to its end)."""
        ids = self._by_generation.get(generation_id, ())
        for step in self._profile.required_steps:
            if step.id not in ids:
                continue
            delivered = complete or heard_whole(step.text, heard_text)
            if delivered and not observable:
                event = Ev.UNOBSERVED
            else:
                event = Ev.DELIVERED if delivered else Ev.NOT_DELIVERED
            await self._apply(step, event, generation_id)

    async def verify(
        self,
        tool: ResolvedTool,
        *,
        ask: InputHandler | None,
        read: Read,
        operation_id: str,
    ) -> None:
        """Perform ``tool``'s verification steps not satisfied yet: ask the caller (one
        question for all of them), read each record, compare. Nothing here decides: the final
        gate reads what was stored."""
        due = [
            s for s in self.applicable(tool)
            if s.kind == "verify_identity" and not self._is_satisfied(s.id)
        ]
        if not due or any((self._steps.get(s.id) or _NEVER).failed for s in due):
            return
        attempt = new_id("vfy")
        for step in due:
            await self._apply(step, Ev.ASKED, attempt)
        answers = await self._ask(due, tool, ask, operation_id)
        for step in due:
            if answers is None:
                await self._apply(step, Ev.ABANDONED, attempt)
                continue
            mine = {f.field: answers.get(answer_key(step, f.field)) for f in step.ask}
            await self._apply(step, await self._compare(step, mine, read), attempt)

    async def _compare(self, step: RequiredStep, answers: dict[str, Any], read: Read) -> Ev:
        arguments = {arg: answers.get(field) for arg, field in step.arguments.items()}
        try:
            record = await read(step.tool, arguments)
        except Exception:  # no record: unverifiable, never verified
            log.exception("policy.verification_read_failed", step=step.id)
            record = None
        if record is None:
            return Ev.UNVERIFIABLE
        kinds = {f.field: f.type for f in step.ask}
        matched = all(
            same_fact(kinds.get(field, "text"), answers.get(field), record.get(result_field))
            for field, result_field in step.match.items()
        )
        return Ev.MATCHED if matched else Ev.MISMATCHED

    async def _ask(
        self,
        steps: Sequence[RequiredStep],
        tool: ResolvedTool,
        ask: InputHandler | None,
        operation_id: str,
    ) -> dict[str, Any] | None:
        if ask is None:
            return None
        request = InputRequest(
            id=new_id("inq"), server=ASKER_SERVER, tool=tool.name, operation_id=operation_id,
            requested_schema=question_schema(steps),
        )
        response = None
        with self._clock.move_on_after(ANSWER_TIMEOUT_S):
            response = await ask(request)
        if response is None or response.action != "accept":
            return None
        return dict(response.content)

    def _is_satisfied(self, step_id: str) -> bool:
        step = self._steps.get(step_id)
        return step is not None and step.status == "satisfied" and not step.failed

    async def _apply(self, spec: RequiredStep, event: Ev, generation_id: str) -> None:
        async with self._lock:
            step = self._steps.get(spec.id) or Step(
                "", 0, step=spec.id, policy_version=version_of(spec)
            )
            new = apply(step, event, generation_id)
            if new == step and event not in (Ev.SPOKEN, Ev.ASKED):
                return
            self._steps[spec.id] = new
            try:
                await self._repo.record_evidence(self._session_id, new, cause=event.value)
            except Exception:  # the final gate reads storage: a missing write denies
                log.exception("policy.evidence_write_failed", step=spec.id)


def _bounded_put(mapping: OrderedDict[str, Any], key: str, value: Any) -> None:
    mapping[key] = value
    mapping.move_to_end(key)
    while len(mapping) > MAX_GENERATIONS:
        mapping.popitem(last=False)
