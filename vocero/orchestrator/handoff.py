"""Handing the caller to a person, inside one answer (docs/telephony.md "Handing a caller to a
person").

The profile's ``handoff`` makes the built-in ``handoff.request`` a tool the model may pick (the
caller asked for a person); and once the gate has refused the caller ``after_denials`` times in
this session (:data:`POLICY_REFUSALS`, counted here), the orchestrator proposes it itself, right
after the refusal was said. Either way the gate decides (it is a tool like any other), and the
order of what happens is fixed here:

* on the phone: the announcement (the profile's ``message``) is said and the answer waits until
  it was played; only when the caller heard it whole is the operation executed (the built-in puts
  the call through). Not heard (a barge-in, a stalled line): nothing is executed. When the carrier
  refuses, the built-in records a ``task`` follow-up and the caller is told so, truthfully;
* on the web: the operation is executed first (a ``task`` follow-up), then the caller hears that
  their request was passed on; a failure is said as a failure.

A session is handed off at most once (the built-in keeps to that too).
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from vocero.contracts.actions import ToolOutcome, ToolPlan, TurnRef
from vocero.contracts.builtins import HANDOFF_TOOL
from vocero.contracts.handoff import (
    ALREADY,
    ANNOUNCEMENT,
    NOT_PASSED_ON,
    PASSED_ON,
    TRANSFER_FAILED,
)
from vocero.contracts.ports import Message, ToolIntent
from vocero.orchestrator.acting import Actor, builtin_of
from vocero.orchestrator.core import SessionCore
from vocero.orchestrator.generation import Generation
from vocero.orchestrator.speaking import Speaker, speaking

log = structlog.get_logger("vocero.handoff")

PHONE_CHANNELS = frozenset({"twilio"})
POLICY_REFUSALS = frozenset({
    "authorization_unavailable", "tool_not_allowed", "prohibited", "cross_tenant_target",
    "scope_missing", "tool_unavailable", "tool_pending", "disclosure_not_heard",
    "identity_not_verified", "proposal_changed", "confirmation_used", "authorization_expired",
    "required_delivery_missing",
})
"""The gate's own refusals: what counts toward ``after_denials``. A question about the
arguments (a missing value, a time that needs reading back) is not a refusal."""


class Handoff:
    """One session's handoff: the refusals counted so far, and whether it was handed off."""

    def __init__(self, core: SessionCore, actor: Actor) -> None:
        self.core = core
        self.actor = actor
        self.refusals = 0
        self.done = False
        self.proposed_after_refusals = False

    @property
    def _tool(self) -> str:
        """The profile's name of the handoff tool ("" when the profile offers none)."""
        profile = self.core.ctx.profile
        if profile.handoff is None:
            return ""
        spec = next((t for t in profile.tools if builtin_of(t) == HANDOFF_TOOL), None)
        return "" if spec is None else spec.name

    def claims(self, plan: ToolPlan) -> bool:
        """Whether ``plan`` is an allowed handoff this module must carry out."""
        if plan.kind != "run":
            return False
        spec = self.core.ctx.profile.tool(plan.tool)
        return spec is not None and builtin_of(spec) == HANDOFF_TOOL

    def refused(self, plan: ToolPlan) -> bool:
        """Count a refusal by the gate; whether the handoff is now due (once per session)."""
        handoff = self.core.ctx.profile.handoff
        if plan.kind != "deny" or plan.reason_code not in POLICY_REFUSALS:
            return False
        if handoff is None or plan.tool == self._tool:
            return False
        self.refusals += 1
        due = (self.refusals >= handoff.after_denials and not self.done
               and not self.proposed_after_refusals)
        if due:
            self.proposed_after_refusals = True
            log.info("handoff.due", refusals=self.refusals)
            self.core.metrics.count("handoffs", trigger="refusals")
        return due

    async def after_refusals(
        self,
        generation: Generation,
        speaker: Speaker,
        turn: TurnRef,
        history: Sequence[Message],
    ) -> None:
        """The gate refused the caller often enough: propose the handoff and carry it out."""
        tool = self._tool
        if not tool or generation.done:
            return
        reasons = "the policy refused the caller's requests"
        plan = await self.actor.propose(
            generation, turn, ToolIntent(name=tool, arguments={"reason": reasons}), history
        )
        if self.claims(plan):
            await self.perform(generation, speaker, plan)
        elif plan.kind == "deny":
            log.info("handoff.refused", reason_code=plan.reason_code)

    async def perform(self, generation: Generation, speaker: Speaker, plan: ToolPlan) -> None:
        """Carry out an allowed handoff in this answer (the order is the module's)."""
        core = self.core
        handoff = core.ctx.profile.handoff
        if handoff is None:
            return
        if self.done:  # handed off already in this session: nothing runs again
            await speaker.say(ALREADY)
            return
        self.done = True
        if core.ctx.channel in PHONE_CHANNELS:
            announcement = handoff.message or ANNOUNCEMENT
            await speaker.say(announcement)
            await speaker.finish()  # said, sent and played (by the carrier's marks)
            if generation.done or not self._heard(generation, announcement):
                self.done = False  # the caller may ask again
                log.info("handoff.not_heard")
                core.metrics.count("handoffs", outcome="not_heard")
                return
            outcome = await self.actor.execute(generation, plan)
            status = _status(outcome)
            core.metrics.count("handoffs", outcome=status or "failed")
            if status == "transferred":
                return  # the carrier takes the call away: nothing more is said
            await self._say_after(generation, speaker, _line(status))
            return
        outcome = await self.actor.execute(generation, plan)
        status = _status(outcome)
        core.metrics.count("handoffs", outcome=status or "failed")
        await speaker.say(_line(status))

    def _heard(self, generation: Generation, text: str) -> bool:
        out = self.core.out
        gid = generation.generation_id
        played = out.acknowledged_ms(gid) if out.playout_acks else out.playout_of(gid).sent_ms
        heard = generation.heard_text(played) if generation.had_audio else ""
        return _squash(text) in _squash(heard)

    async def _say_after(self, generation: Generation, speaker: Speaker, text: str) -> None:
        """Say ``text`` in the same answer after its speaker was finished (it waited for the
        announcement to be played)."""
        async with speaking(self.core, generation, speaker.planner, None) as more:
            await more.say(text)
            await more.finish()


def _status(outcome: ToolOutcome | None) -> str:
    """What the built-in did (a write's result carries its answer as ``receipt``)."""
    if outcome is None or outcome.status != "committed" or not outcome.result:
        return ""
    receipt = outcome.result.get("receipt", outcome.result)
    return str(receipt.get("status") or "") if isinstance(receipt, dict) else ""


def _line(status: str) -> str:
    if status == "task_recorded":
        return PASSED_ON
    if status == "NOT transferred":
        return TRANSFER_FAILED
    return NOT_PASSED_ON


def _squash(text: str) -> str:
    return " ".join(text.casefold().split())
