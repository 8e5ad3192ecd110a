"""The question one session's caller is asked, and the answers bound to its exact revision.

A "yes" approves only the exact thing the caller heard
(``docs/adr/0010-confirmation-and-idempotency.md``): an answer binds only to the active proposal
revision, after its read-back was delivered (the evidence of :mod:`vocero.policy.delivery`), and
only once. :func:`vocero.policy.confirmations.judge` decides; :class:`Confirmations` is its async
shell: it keeps the question and the revisions, and stores a binding answer (a pending single-use
confirmation, or a rejection).
"""

from __future__ import annotations

from typing import Literal

import structlog

from vocero.contracts.actions import ConfirmationVerdict, ToolPlan, TurnRef
from vocero.policy.confirmations import Answer, Question, Source, judge
from vocero.policy.delivery import DeliveryEvidence, Key
from vocero.policy.gate import resolve
from vocero.policy.reasons import explain
from vocero.policy.records import OpenedRevision
from vocero.policy.rows import new_id
from vocero.policy.runnables import Runnable, Runnables
from vocero.policy.session import SessionFacts
from vocero.policy.steps import RequiredSteps

log = structlog.get_logger("vocero.policy")


class Confirmations:
    """Asks the active question of a session and binds the caller's answers to its revision."""

    def __init__(
        self,
        facts: SessionFacts,
        evidence: DeliveryEvidence,
        runnables: Runnables,
        steps: RequiredSteps | None = None,
    ) -> None:
        self._facts = facts
        self._evidence = evidence
        self._steps = steps
        """Disclosures the caller must have heard, like the read-back, before a "yes" binds."""
        self._runnables = runnables
        self._question: Question | None = None
        """The question being asked: at most one at a time."""
        self._revisions: dict[str, int] = {}
        """The current revision of each proposal of this session: only it can be confirmed."""
        self._used: set[Key] = set()
        """Revisions answered or executed already: an answer never binds to them again."""

    def revised(self, opened: OpenedRevision) -> None:
        """A proposal revision was opened: it is the one an answer may bind to now, and the
        revision it replaced can no longer be delivered."""
        if opened.superseded is not None:
            self._evidence.supersede((opened.proposal_id, opened.superseded))
        self._revisions[opened.proposal_id] = opened.revision

    async def ask(self, question: Question, generation_id: str) -> ToolPlan | None:
        """``question`` is the one asked now, its read-back spoken in ``generation_id``."""
        self._question = question
        await self._evidence.asked(
            (question.proposal_id, question.revision),
            generation_id,
            first=True,
            parts=question.parts,
        )
        return self.active_question()

    def active_question(self) -> ToolPlan | None:
        q = self._question
        if q is None:
            return None
        return ToolPlan(
            kind="confirm",
            tool=q.tool,
            proposal_id=q.proposal_id,
            revision=q.revision,
            summary=q.summary,
            fields=dict(q.fields),
            expires_at=q.expires_at_text,
        )

    def executed(self, key: Key) -> None:
        """The revision ``key`` was executed: no later answer binds to it."""
        self._used.add(key)

    async def submit(
        self,
        turn: TurnRef | None,
        proposal_id: str,
        revision: int,
        decision: Literal["confirm", "reject", "uncertain"],
        *,
        source: Literal["button", "speech"],
        restated: bool = False,
    ) -> ConfirmationVerdict:
        delivered = await self._evidence.satisfied((proposal_id, revision))
        question = self._question
        if delivered and self._steps is not None and question is not None:
            delivered = await self._steps.heard_all(resolve(self._facts.profile, question.tool))
        current = source == "button" or self._evidence.last_heard_was((proposal_id, revision))
        # A yes naming the proposal answers it, even after the caller heard something else
        # (a catalog answer they asked for); it still binds only once the read-back was heard.
        current = current or restated
        judgement = judge(
            question,
            proposal_id=proposal_id,
            revision=revision,
            answer=decision,
            source=source,
            turn_id=turn.turn_id if turn else "",
            now=self._facts.clock.now(),
            delivered=delivered,
            last_heard=current,
            current_revisions=self._revisions,
            used=self._used,
        )
        if not judgement.keep_question:
            self._question = None
        if not judgement.binds or question is None:
            return await self._not_bound(proposal_id, revision, decision, source, judgement.reason)
        try:
            return await self._bind(question, decision, source, turn)
        except Exception:  # unavailable policy data: nothing binds
            log.exception("policy.confirmation_failed")
            self._question = question
            return await self._not_bound(
                proposal_id, revision, decision, source, "authorization_unavailable"
            )

    async def _bind(
        self, question: Question, decision: Answer, source: Source, turn: TurnRef | None
    ) -> ConfirmationVerdict:
        facts = self._facts
        key = (question.proposal_id, question.revision)
        tool = resolve(facts.profile, question.tool)
        assert tool is not None
        stored = await facts.repo.record_answer(
            session_id=facts.session_id,
            proposal_id=question.proposal_id,
            revision=question.revision,
            decision=decision,
            binding=lambda s: facts.binding(
                question.proposal_id, s.revision, s.arguments_hash, s.expires_at
            ),
            asked_turn_id=question.asked_turn_id,
            answer_turn_id=turn.turn_id if turn else "",
            source=source,
        )
        self._used.add(key)
        if decision == "reject":
            return ConfirmationVerdict(binds=True)
        call_id = new_id("call")
        self._runnables.allow(
            call_id,
            Runnable(
                tool=tool,
                arguments=stored.canonical_arguments,
                arguments_hash=stored.arguments_hash,
                proposal_id=question.proposal_id,
                revision=question.revision,
                operation_id=new_id("op"),
                traceparent=turn.traceparent if turn else "",
            ),
        )
        plan = ToolPlan(
            kind="run",
            tool=question.tool,
            tool_call_id=call_id,
            proposal_id=question.proposal_id,
            revision=question.revision,
        )
        return ConfirmationVerdict(binds=True, plan=plan)

    async def _not_bound(
        self, proposal_id: str, revision: int, decision: str, source: str, reason: str
    ) -> ConfirmationVerdict:
        self._facts.metrics.count("denials", reason_code=reason)
        await self._facts.audit(
            "confirmation.not_bound",
            {
                "proposal_id": proposal_id,
                "revision": revision,
                "answer": decision,
                "source": source,
                "reason_code": reason,
            },
        )
        plan = None
        if reason in ("authorization_expired", "authorization_unavailable"):
            plan = ToolPlan(
                kind="deny",
                tool="",
                proposal_id=proposal_id,
                revision=revision,
                reason_code=reason,
                summary=explain(reason),
            )
        return ConfirmationVerdict(binds=False, plan=plan, reason_code=reason)

    async def drop(self, proposal_id: str, revision: int) -> None:
        """The conversation gives up on the question (it could not get a clear answer): it can
        no longer be confirmed, and nothing was done."""
        question = self._question
        if question is None or (question.proposal_id, question.revision) != (
            proposal_id,
            revision,
        ):
            return
        self._question = None
        self._evidence.supersede((proposal_id, revision))
        try:
            await self._facts.repo.close_proposal(proposal_id, "abandoned")
        except Exception:  # the question is gone from the conversation either way
            log.exception("policy.drop_failed")
        await self._facts.audit(
            "confirmation.abandoned", {"proposal_id": proposal_id, "revision": revision}
        )
