"""System-initiated operations: work Vocero starts itself, on the ordinary durable action path.

:class:`SystemOperations` implements :class:`~vocero.contracts.system_actions.SystemActions`
for the follow-up queue. A submitted action is checked by the same permit gate as a caller's
(``initiator="system"``: only the profile's ``followups.call_tool`` may be started this way, and
that tool never by the model), against the profile of the session it comes from and the tool's
pinned definition; a tool that needs a caller's confirmation is refused
(``confirmation_missing``): there is nobody on the line to confirm. When the gate allows, one
transaction writes an authorized proposal revision, the operation under the initiator's
``operation_id``, its outbox row and the ``operation.authorized`` audit event; the outbox worker
then dispatches it with ``_meta`` (``docs/mcp.md``) exactly as it does a confirmed write, including
crash recovery and reconciliation. Submitting the same ``operation_id`` again returns the
operation already there: one effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import anyio
import msgspec
import structlog
from sqlalchemy.exc import IntegrityError

from vocero.contracts.domain import AgentProfile
from vocero.contracts.system_actions import SystemAction, SystemActionState
from vocero.policy.executor import OperationExecutor, Watch
from vocero.policy.gate import (
    Decision,
    PermitRequest,
    ResolvedTool,
    arguments_hash,
    permit,
    resolve,
    schema_version,
)
from vocero.policy.operations import settled
from vocero.policy.ports import BuiltinTools
from vocero.policy.records import OperationRecord
from vocero.policy.repository import ActionRepository
from vocero.policy.rows import ACTOR, new_id, operation_record
from vocero.policy.targets import GatewayFactory, ProfileLookup
from vocero.store.audit_tx import append_in
from vocero.store.models import OperationRow, ProposalRevisionRow, ProposalRow

log = structlog.get_logger("vocero.policy.system")

WORKFLOW = "system.v1"


class SystemOperations:
    def __init__(
        self,
        repo: ActionRepository,
        executor: OperationExecutor,
        *,
        profiles: ProfileLookup | None,
        gateway_for: GatewayFactory | None,
        builtins: BuiltinTools | None = None,
    ) -> None:
        self._repo = repo
        self._executor = executor
        self._profiles = profiles
        self._gateway_for = gateway_for
        self._builtins = builtins

    async def submit(self, action: SystemAction) -> SystemActionState:
        existing = await self._repo.get(action.operation_id)
        if existing is not None:
            return state_of(existing)
        profile, tool, decision, schema = await self._decide(action)
        if not decision.allowed or tool is None or profile is None:
            await self._repo.audit("action.denied", {
                "stage": "system", "initiator": action.initiator, "subject": action.subject,
                "operation_id": action.operation_id, "tool": action.tool,
                "resolved_tool": f"{tool.server}/{tool.tool}" if tool else "",
                "reason_code": decision.reason,
            }, session_id=action.session_id)
            return SystemActionState(operation_id=action.operation_id, status="denied",
                                     reason_code=decision.reason, settled=True)
        op = await self._authorize(action, profile, tool, schema)
        self._executor.step("authorized", op.id)
        self._executor.nudge()
        return state_of(op)

    async def state(self, operation_id: str) -> SystemActionState | None:
        op = await self._repo.get(operation_id)
        return None if op is None else state_of(op)

    async def wait(
        self, operation_ids: Sequence[str], timeout_s: float
    ) -> dict[str, SystemActionState]:
        watches = [Watch(self._executor, op_id, _ignore) for op_id in operation_ids]
        found: dict[str, SystemActionState] = {}
        try:
            with anyio.move_on_after(timeout_s):
                for watch, op_id in zip(watches, operation_ids, strict=True):
                    record = await watch.wait(timeout_s)
                    if record is not None:
                        found[op_id] = state_of(record)
        finally:
            for watch in watches:
                watch.close()
        for op_id in operation_ids:  # whatever the wait did not see, as it stands now
            if op_id not in found or not found[op_id].settled:
                current = await self.state(op_id)
                if current is not None:
                    found[op_id] = current
        return found

    # ----------------------------------------------------------------------- internals

    async def _decide(
        self, action: SystemAction
    ) -> tuple[AgentProfile | None, ResolvedTool | None, Decision, str]:
        ref = await self._repo.session_profile(action.session_id)
        wanted = (action.profile_id, action.profile_version)
        profile = self._profiles(*wanted) if self._profiles is not None and ref == wanted \
            else None
        tool = resolve(profile, action.tool) if profile is not None else None
        schema, available = self._schema(profile, tool)
        decision = permit(PermitRequest(
            stage="execute", tenant=profile.match.tenant if profile else "",
            principal=action.principal, profile_version=action.profile_version, tool=tool,
            policy_available=profile is not None and available, schema_version=schema,
            revision=1, current_revision=1, initiator="system", now=self._repo.clock.now(),
        ))
        return profile, tool, decision, schema or ""

    def _schema(
        self, profile: AgentProfile | None, tool: ResolvedTool | None
    ) -> tuple[str | None, bool]:
        """(pinned schema version or ``None`` when not callable, policy data available)."""
        if profile is None or tool is None:
            return "", True
        if tool.builtin:
            if self._builtins is None or not self._builtins.handles(tool.tool):
                return None, True
            return schema_version(self._builtins.schema(tool.tool)), True
        gateway = self._gateway_for(profile) if self._gateway_for is not None else None
        if gateway is None:
            return None, False
        try:
            definitions = list(gateway.definitions())
        except Exception:  # unavailable policy data denies
            log.exception("policy.system_definitions_failed")
            return None, False
        found = next((d for d in definitions if d.name == tool.name), None)
        return (schema_version(found.input_schema) if found else None), True

    async def _authorize(
        self, action: SystemAction, profile: AgentProfile, tool: ResolvedTool, schema: str
    ) -> OperationRecord:
        try:
            return await self._write(action, profile, tool, schema)
        except IntegrityError:  # submitted concurrently under the same id: one operation
            existing = await self._repo.get(action.operation_id)
            if existing is None:
                raise
            return existing

    async def _write(
        self, action: SystemAction, profile: AgentProfile, tool: ResolvedTool, schema: str
    ) -> OperationRecord:
        now = self._repo.now()
        digest = arguments_hash(tool, schema, action.arguments)
        proposal_id = new_id("prp")
        async with self._repo.write() as session:
            session.add(ProposalRow(
                id=proposal_id, session_id=action.session_id, turn_id="", tool=tool.name,
                server=tool.server, resolved_tool=tool.tool, action_class=tool.action_class,
                status="authorized", current_revision=1, created_at=now))
            await session.flush()
            session.add(ProposalRevisionRow(
                proposal_id=proposal_id, revision=1, canonical_arguments=action.arguments,
                target_resource="", object_version="",
                workflow_revision=f"{profile.id}@{profile.version}/{WORKFLOW}",
                arguments_hash=digest, summary="",
                expires_at=now + timedelta(seconds=self._executor.settings.authorization_ttl_s),
                invalidated_at=None, created_at=now))
            await session.flush()
            row = OperationRow(
                id=action.operation_id, proposal_id=proposal_id, revision=1,
                session_id=action.session_id, tenant_id=action.principal.tenant_id,
                tool=tool.name, server=tool.server, resolved_tool=tool.tool,
                arguments=dict(action.arguments), principal=msgspec.to_builtins(action.principal),
                idempotent=tool.idempotent, status="authorized", attempts=0, receipt=None,
                reason_code="", created_at=now, updated_at=now)
            session.add(row)
            await session.flush()
            session.add(self._repo.outbox.new_row(action.operation_id, now))
            await session.flush()
            await append_in(session, "operation.authorized", {
                "operation_id": action.operation_id, "proposal_id": proposal_id, "revision": 1,
                "tool": tool.name, "resolved_tool": f"{tool.server}/{tool.tool}",
                "action_class": tool.action_class, "arguments_hash": digest,
                "initiator": action.initiator, "subject": action.subject,
            }, at=now, session_id=action.session_id, actor=ACTOR)
            return operation_record(row)


def state_of(op: OperationRecord) -> SystemActionState:
    return SystemActionState(operation_id=op.id, status=op.status, reason_code=op.reason_code,
                             receipt=op.receipt, settled=settled(op))


def _ignore(_: Any) -> None:
    return None
