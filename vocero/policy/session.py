"""What every stage of one session's action path judges against: who acts, under which profile,
with which tools, at what time (the application decides, not the model: see
``docs/adr/0009-policy-outside-the-llm.md``).

:class:`SessionFacts` is shared by the proposals, the confirmations and the execution of one
session (:mod:`vocero.policy.coordinator`); the only thing in it that changes is
:attr:`SessionFacts.observed`, the object versions the owning services reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any, Literal

import structlog

from vocero.contracts.domain import AgentProfile, Caller, Principal
from vocero.contracts.ports import Message, Timers, ToolGateway
from vocero.policy.canonical import Canonical, Context, canonicalize, observed_versions, zone_of
from vocero.policy.gate import PermitRequest, ResolvedTool, binding_hash, schema_version
from vocero.policy.ports import BuiltinTools, Counter, SupportsWithheld
from vocero.policy.repository import ActionRepository

log = structlog.get_logger("vocero.policy")

POLICY_VERSION = "actions.v1"


class SessionFacts:
    """One session's caller, profile, tools and clock, and the judgements made from them alone:
    a tool's definition, a permit request, canonical arguments, a binding, today's date."""

    def __init__(
        self,
        *,
        session_id: str,
        caller: Caller,
        profile: AgentProfile,
        gateway: ToolGateway | None,
        builtins: BuiltinTools | None,
        repo: ActionRepository,
        clock: Timers,
        metrics: Counter,
        keypad: bool = False,
    ) -> None:
        self.session_id = session_id
        self.keypad = keypad
        """The caller can answer with keys (the phone): read-backs say how."""
        self.caller = caller
        self.principal = Principal.of(caller)
        self.profile = profile
        self.gateway = gateway
        self.builtins = builtins
        self.repo = repo
        self.clock = clock
        self.metrics = metrics
        self.workflow_revision = f"{profile.id}@{profile.version}/{POLICY_VERSION}"
        self.observed: dict[str, int] = {}
        """Object versions the owning services reported in this session (``expected_version``)."""

    def definition(self, tool: ResolvedTool | None) -> tuple[dict[str, Any], str | None, bool]:
        """(input schema, schema version or ``None`` when not callable, policy data available)."""
        if tool is None:
            return {}, "", True
        if tool.builtin:
            if self.builtins is None or not self.builtins.handles(tool.tool):
                return {}, None, self.builtins is not None
            schema = self.builtins.schema(tool.tool)
            return schema, schema_version(schema), True
        if self.gateway is None:
            return {}, None, False
        try:
            definitions = list(self.gateway.definitions())
        except Exception:  # unavailable policy data denies
            log.exception("policy.definitions_failed")
            return {}, None, False
        found = next((d for d in definitions if d.name == tool.name), None)
        if found is None:
            return {}, None, True
        return found.input_schema, schema_version(found.input_schema), True

    def withheld(self, tool: ResolvedTool | None) -> str:
        """Why the gateway does not offer this MCP tool, when the caller should hear it apart
        from ``tool_unavailable`` (``tool_pending``); "" otherwise."""
        if tool is None or tool.builtin or not isinstance(self.gateway, SupportsWithheld):
            return ""
        try:
            return self.gateway.withheld(tool.name)
        except Exception:  # the plain reason stands
            log.exception("policy.withheld_failed")
            return ""

    def request(
        self,
        stage: Literal["propose", "execute"],
        tool: ResolvedTool | None,
        schema: str | None,
        available: bool,
    ) -> PermitRequest:
        return PermitRequest(
            stage=stage,
            tenant=self.caller.tenant,
            principal=self.principal,
            profile_version=self.profile.version,
            tool=tool,
            policy_available=available,
            schema_version=schema,
            now=self.clock.now(),
        )

    def canonical(
        self,
        tool: ResolvedTool,
        arguments: dict[str, Any],
        schema: dict[str, Any],
        history: Sequence[Message] = (),
        locale: str = "",
    ) -> Canonical:
        ctx = Context(
            tenant=self.caller.tenant,
            timezone=self.caller.timezone,
            now=datetime.fromtimestamp(self.clock.now(), UTC),
            server=tool.server,
            observed_versions=self.observed,
            history=tuple(history),
            locale=locale or self.caller.locale,
            subject_ref=self.caller.subject_ref,
        )
        if tool.builtin and self.builtins is not None:
            return self.builtins.canonicalize(tool.tool, arguments, ctx)
        return canonicalize(arguments, schema, ctx)

    def readback_template(self, tool: ResolvedTool) -> str:
        """The profile's read-back wording for the tool, only when every profile tool resolving
        to the same server tool says the same: an alias must never read back as something else
        than what will actually happen (then the generic read-back of the resolved tool)."""
        same = {
            t.readback
            for t in self.profile.tools
            if (t.server, t.resolves_to) == (tool.server, tool.tool)
        }
        return same.pop() if len(same) == 1 else ""

    def today(self) -> date:
        moment = datetime.fromtimestamp(self.clock.now(), UTC)
        return moment.astimezone(zone_of(self.caller.timezone)).date()

    def binding(self, proposal_id: str, revision: int, args_hash: str, expires_at: float) -> str:
        return binding_hash(
            proposal_id=proposal_id,
            revision=revision,
            arguments_digest=args_hash,
            principal=self.principal,
            expires_at=expires_at,
            workflow_revision=self.workflow_revision,
        )

    async def audit(self, kind: str, data: dict[str, Any]) -> None:
        try:
            await self.repo.audit(kind, data, session_id=self.session_id)
        except Exception:  # a failed audit is logged; the decision stands
            log.exception("policy.audit_failed", kind=kind)

    def observe(self, content: dict[str, Any]) -> None:
        """Remember object versions the owning service reported (``expected_version``)."""
        self.observed.update(observed_versions(content))
