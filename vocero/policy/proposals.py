"""One session's proposals: what the model asks for becomes a plan the application decided.

The model proposes, the application decides (``docs/adr/0009-policy-outside-the-llm.md``):
:meth:`Proposals.propose` resolves the tool through the profile, canonicalises the arguments and
asks :func:`~vocero.policy.gate.permit`. A read runs; a write that needs no confirmation runs
through the outbox; a confirmable write becomes a proposal revision whose read-back the caller
hears, its question handed to :class:`~vocero.policy.answers.Confirmations`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import structlog

from vocero.contracts.actions import ToolPlan, TurnRef
from vocero.contracts.ports import Message, ToolIntent
from vocero.policy import readback
from vocero.policy.answers import Confirmations
from vocero.policy.canonical import Canonical, CanonicalError
from vocero.policy.confirmations import Question
from vocero.policy.gate import Decision, ResolvedTool, arguments_hash, permit, resolve
from vocero.policy.reasons import explain
from vocero.policy.records import OpenedRevision
from vocero.policy.repository import RevisionDraft
from vocero.policy.rows import new_id
from vocero.policy.runnables import Runnable, Runnables
from vocero.policy.session import SessionFacts
from vocero.policy.steps import RequiredSteps

log = structlog.get_logger("vocero.policy")


class Proposals:
    """Turns a tool intent into a plan: deny, run (a read, or a write allowed outright), or a
    proposal revision to confirm."""

    def __init__(
        self,
        facts: SessionFacts,
        *,
        confirmation_ttl_s: float,
        confirmations: Confirmations,
        runnables: Runnables,
        steps: RequiredSteps | None = None,
    ) -> None:
        self._facts = facts
        self._steps = steps
        """The profile's required steps: the propose stage knows which are missing (ADR-0030)."""
        self.confirmation_ttl_s = confirmation_ttl_s
        """How long a read-back can be answered (and its confirmation used)."""
        self._confirmations = confirmations
        self._runnables = runnables

    async def propose(
        self,
        turn: TurnRef,
        intent: ToolIntent,
        *,
        history: Sequence[Message] = (),
        locale: str = "",
    ) -> ToolPlan:
        """``history`` is the conversation as heard: built-in tools judge against it (the
        call-back rule takes the time from the caller's own words). ``locale`` is the session's
        effective one (a ``session.update`` may have changed it): values are read in it."""
        facts = self._facts
        tool = resolve(facts.profile, intent.name)
        call_id = new_id("call")
        schema, schema_ver, available = facts.definition(tool)
        request = facts.request("propose", tool, schema_ver, available)
        if self._steps is not None:
            request = replace(request, steps=self._steps.facts(tool))
        decision = permit(request)
        canonical: Canonical | None = None
        if decision.outcome != "deny" and tool is not None:
            try:
                canonical = facts.canonical(
                    tool, intent.arguments, schema, history, locale or facts.caller.locale
                )
            except CanonicalError as exc:
                lead = explain(exc.reason_code) if exc.result is None else ""
                return await self._deny(
                    intent.name,
                    call_id,
                    exc.reason_code,
                    "propose",
                    summary=f"{lead} {exc.question}".strip(),
                    result=exc.result,
                )
            decision = permit(replace(request, claimed_tenant=canonical.claimed_tenant))
        if decision.outcome == "deny" or tool is None or canonical is None:
            reason = decision.reason
            if reason == "tool_unavailable":  # a tool awaiting review says so (tool_pending)
                reason = facts.withheld(tool) or reason
            return await self._deny(intent.name, call_id, reason, "propose")
        args_hash = arguments_hash(tool, schema_ver or "", canonical.arguments)
        if not tool.write:
            self._runnables.allow(
                call_id,
                Runnable(
                    tool=tool,
                    arguments=canonical.arguments,
                    arguments_hash=args_hash,
                    traceparent=turn.traceparent,
                ),
            )
            return ToolPlan(kind="run", tool=intent.name, tool_call_id=call_id)
        try:
            return await self._open(
                turn, intent.name, call_id, tool, canonical, args_hash, decision
            )
        except Exception:  # unavailable policy data denies
            log.exception("policy.propose_failed")
            return await self._deny(intent.name, call_id, "authorization_unavailable", "propose")

    async def _open(
        self,
        turn: TurnRef,
        name: str,
        call_id: str,
        tool: ResolvedTool,
        canonical: Canonical,
        args_hash: str,
        decision: Decision,
    ) -> ToolPlan:
        facts = self._facts
        now = facts.clock.now()
        expires = datetime.fromtimestamp(now + self.confirmation_ttl_s, UTC)
        spoken = readback.readback(
            tool.tool,
            canonical.arguments,
            template=facts.readback_template(tool),
            today=facts.today(),
            keypad=facts.keypad,
        )
        summary = spoken.text
        opened = await facts.repo.open_revision(
            RevisionDraft(
                session_id=facts.session_id,
                turn_id=turn.turn_id,
                tool=tool,
                arguments=canonical.arguments,
                target_resource=canonical.target_resource,
                object_version=canonical.object_version,
                arguments_hash=args_hash,
                workflow_revision=facts.workflow_revision,
                summary=summary,
                expires_at=expires,
            )
        )
        self._confirmations.revised(opened)
        expires_at = opened.expires_at
        if decision.outcome == "allow":
            self._runnables.allow(
                call_id,
                Runnable(
                    tool=tool,
                    arguments=canonical.arguments,
                    arguments_hash=args_hash,
                    proposal_id=opened.proposal_id,
                    revision=opened.revision,
                    operation_id=new_id("op"),
                    traceparent=turn.traceparent,
                ),
            )
            return ToolPlan(
                kind="run",
                tool=name,
                tool_call_id=call_id,
                proposal_id=opened.proposal_id,
                revision=opened.revision,
            )
        fields = readback.fields_of(canonical.arguments)
        expires_text = datetime.fromtimestamp(expires_at, UTC).isoformat().replace("+00:00", "Z")
        question = Question(
            proposal_id=opened.proposal_id,
            revision=opened.revision,
            tool=name,
            summary=summary,
            expires_at=expires_at,
            asked_turn_id=turn.turn_id,
            fields=fields,
            expires_at_text=expires_text,
            parts=spoken.parts,
        )
        asked = await self._confirmations.ask(question, turn.generation_id)
        return asked or ToolPlan(kind="deny", tool=name)

    async def restore(self) -> ToolPlan | None:
        """A resumed session's question that was asked and never acted on (the caller's answer
        may have been lost with the connection): the active question again, its read-back to
        be spoken anew (its generation is recorded by ``readback_started``), so that a "yes"
        binds once that read-back was heard. ``None``: there is none to ask."""
        facts = self._facts
        stored = await facts.repo.open_question(facts.session_id)
        tool = resolve(facts.profile, stored.tool) if stored is not None else None
        if stored is None or tool is None:
            return None
        spoken = readback.readback(
            tool.tool,
            stored.canonical_arguments,
            template=facts.readback_template(tool),
            today=facts.today(),
            keypad=facts.keypad,
        )
        self._confirmations.revised(OpenedRevision(
            proposal_id=stored.proposal_id, revision=stored.revision, created=False,
            expires_at=stored.expires_at))
        expires_text = datetime.fromtimestamp(stored.expires_at, UTC).isoformat().replace(
            "+00:00", "Z")
        question = Question(
            proposal_id=stored.proposal_id,
            revision=stored.revision,
            tool=stored.tool,
            summary=spoken.text,
            expires_at=stored.expires_at,
            asked_turn_id=stored.turn_id,
            fields=readback.fields_of(stored.canonical_arguments),
            expires_at_text=expires_text,
            parts=spoken.parts,
        )
        return await self._confirmations.ask(question, "")

    async def _deny(
        self,
        name: str,
        call_id: str,
        reason: str,
        stage: str,
        summary: str = "",
        result: dict[str, Any] | None = None,
    ) -> ToolPlan:
        tool = resolve(self._facts.profile, name)
        await self._facts.audit(
            "action.denied",
            {
                "stage": stage,
                "tool": name,
                "tool_call_id": call_id,
                "reason_code": reason,
                "resolved_tool": f"{tool.server}/{tool.tool}" if tool else "",
            },
        )
        return ToolPlan(
            kind="deny",
            tool=name,
            tool_call_id=call_id,
            reason_code=reason,
            summary=summary or explain(reason),
            result=result,
        )
