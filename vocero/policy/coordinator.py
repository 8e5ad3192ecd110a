"""One session's :class:`~vocero.contracts.actions.ActionCoordinator`, assembled from its parts.

The model proposes, the application decides, and a "yes" approves only the exact thing the
caller heard (``docs/adr/0009-policy-outside-the-llm.md``,
``docs/adr/0010-confirmation-and-idempotency.md``). Each part does one job over explicit state:

- :class:`~vocero.policy.proposals.Proposals`: a tool intent becomes a plan (deny, run, or a
  proposal revision whose read-back the caller hears);
- :class:`~vocero.policy.answers.Confirmations`: the active question, and answers bound only to
  its revision, after its read-back was delivered
  (:class:`~vocero.policy.delivery.DeliveryEvidence`);
- :class:`~vocero.policy.execution.Execution`: a read runs, a write is authorized under the final
  gate together with its outbox row and followed until it settles, or withdrawn before it left.

They share :class:`~vocero.policy.session.SessionFacts` (who, which profile, which tools, what
time) and :class:`~vocero.policy.runnables.Runnables` (what a ``run`` plan may execute).
:class:`SessionCoordinator` only routes the protocol's calls to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import msgspec

from vocero.contracts.actions import (
    ConfirmationVerdict,
    Disclosure,
    StatusCallback,
    ToolOutcome,
    ToolPlan,
    TurnRef,
)
from vocero.contracts.domain import AgentProfile, Caller
from vocero.contracts.ports import InputHandler, Message, Timers, ToolGateway, ToolIntent
from vocero.policy.answers import Confirmations
from vocero.policy.delivery import DeliveryEvidence
from vocero.policy.execution import Execution
from vocero.policy.executor import OperationExecutor
from vocero.policy.gate import resolve
from vocero.policy.ports import BuiltinTools, Counter, NullCounter
from vocero.policy.proposals import Proposals
from vocero.policy.records import OperationRecord
from vocero.policy.repository import ActionRepository
from vocero.policy.runnables import Runnables
from vocero.policy.session import SessionFacts
from vocero.policy.steps import RequiredSteps, version_of


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorSettings:
    confirmation_ttl_s: float = 120.0
    """How long a read-back can be answered (and its confirmation used)."""
    settle_wait_s: float = 15.0
    """How long ``execute`` waits for a receipt before telling the caller it is pending."""


class SessionCoordinator:
    """The action path of one session behind the ``ActionCoordinator`` protocol: proposals,
    confirmations and execution, each its own object (see the module docstring)."""

    def __init__(
        self,
        *,
        session_id: str,
        caller: Caller,
        profile: AgentProfile,
        gateway: ToolGateway | None,
        builtins: BuiltinTools | None,
        repo: ActionRepository,
        executor: OperationExecutor,
        clock: Timers,
        settings: CoordinatorSettings | None = None,
        metrics: Counter | None = None,
        keypad: bool = False,
    ) -> None:
        settings = settings or CoordinatorSettings()
        self.session_id = session_id
        self.repo = repo
        self.facts = SessionFacts(
            session_id=session_id, caller=caller, profile=profile, gateway=gateway,
            builtins=builtins, repo=repo, clock=clock, metrics=metrics or NullCounter(),
            keypad=keypad,
        )
        self.evidence = DeliveryEvidence(repo, session_id, self.facts.audit)
        self.steps = RequiredSteps(profile, repo, session_id, clock)
        runnables = Runnables()
        self.confirmations = Confirmations(self.facts, self.evidence, runnables, self.steps)
        self.proposals = Proposals(
            self.facts, confirmation_ttl_s=settings.confirmation_ttl_s,
            confirmations=self.confirmations, runnables=runnables, steps=self.steps,
        )
        self.execution = Execution(
            self.facts, executor, settle_wait_s=settings.settle_wait_s,
            confirmations=self.confirmations, runnables=runnables, steps=self.steps,
        )

    def close(self) -> None:
        """The session ended: stop forwarding statuses. Operations already authorized go on."""
        self.execution.close()

    async def propose(
        self,
        turn: TurnRef,
        intent: ToolIntent,
        *,
        history: Sequence[Message] = (),
        locale: str = "",
    ) -> ToolPlan:
        plan = await self.proposals.propose(turn, intent, history=history, locale=locale)
        if plan.kind != "confirm":
            return plan
        asked = self._with_disclosures(plan)
        await self.steps.speaking(resolve(self.facts.profile, plan.tool), turn.generation_id)
        return asked

    async def restore_question(self) -> ToolPlan | None:
        """A resumed session's question that was asked and never acted on, active again, to
        be read back anew (``readback_started``); ``None`` when there is none."""
        plan = await self.proposals.restore()
        return None if plan is None else self._with_disclosures(plan)

    async def recent_writes(self, limit: int = 8) -> list[OperationRecord]:
        """The session's last ``limit`` operations of a confirmed proposal, oldest first."""
        writes = [op for op in await self.repo.operations(self.session_id) if op.proposal_id]
        return writes[-limit:]

    def active_question(self) -> ToolPlan | None:
        question = self.confirmations.active_question()
        return None if question is None else self._with_disclosures(question)

    def _with_disclosures(self, plan: ToolPlan) -> ToolPlan:
        """The question with the disclosures its write still needs heard, said before it."""
        due = self.steps.due(resolve(self.facts.profile, plan.tool))
        return msgspec.structs.replace(plan, disclosures=[
            Disclosure(step_id=s.id, version=version_of(s), text=s.text) for s in due
        ])

    async def readback_started(self, plan: ToolPlan, generation_id: str) -> None:
        """The question is being read again (after a clarification) in ``generation_id``, with
        the disclosures it carries."""
        await self.evidence.asked((plan.proposal_id, plan.revision), generation_id)
        if plan.disclosures:
            await self.steps.speaking(resolve(self.facts.profile, plan.tool), generation_id)

    async def record_delivery(
        self, generation_id: str, *, heard_text: str, complete: bool, observable: bool = True
    ) -> None:
        """Playout evidence of one generation: what the caller heard of it."""
        await self.evidence.delivered(
            generation_id, heard_text=heard_text, complete=complete, observable=observable
        )
        await self.steps.delivered(
            generation_id, heard_text=heard_text, complete=complete, observable=observable
        )

    async def submit_confirmation(
        self,
        turn: TurnRef | None,
        proposal_id: str,
        revision: int,
        decision: Literal["confirm", "reject", "uncertain"],
        *,
        source: Literal["button", "speech"],
        restated: bool = False,
    ) -> ConfirmationVerdict:
        return await self.confirmations.submit(
            turn, proposal_id, revision, decision, source=source, restated=restated
        )

    async def drop_question(self, proposal_id: str, revision: int) -> None:
        await self.confirmations.drop(proposal_id, revision)

    async def execute(self, plan: ToolPlan, on_status: StatusCallback) -> ToolOutcome:
        return await self.execution.execute(plan, on_status)

    def set_input_handler(self, ask: InputHandler | None) -> None:
        self.execution.set_input_handler(ask)

    def withdrawable(self) -> ToolPlan | None:
        return self.execution.withdrawable()

    async def withdraw(self, turn: TurnRef) -> str:
        return await self.execution.withdraw(turn)
