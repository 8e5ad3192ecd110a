"""Plain records of the action path, read from trusted storage (never live ORM objects)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from vocero.contracts.domain import Principal
from vocero.contracts.events import ToolStatus
from vocero.policy.readback import fields_of


class OperationRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    session_id: str
    proposal_id: str | None
    revision: int | None
    tenant_id: str
    tool: str
    server: str
    resolved_tool: str
    arguments: dict[str, Any]
    principal: Principal
    idempotent: bool
    status: ToolStatus
    attempts: int
    receipt: dict[str, Any] | None
    reason_code: str
    created_at: datetime
    updated_at: datetime

    def public(self) -> dict[str, Any]:
        """The operator view (``GET /v1/operations``, docs/operators.md): no principal; a write's
        canonical ``arguments`` without their sensitive keys (what ``tool.confirmation_required.v1``
        shows as ``fields``), ``None`` for a read (its row keeps only the arguments' hash)."""
        return {
            "operation_id": self.id, "proposal_id": self.proposal_id, "revision": self.revision,
            "tool": self.tool, "resolved_tool": self.resolved_tool, "status": self.status,
            "arguments": None if self.proposal_id is None else fields_of(self.arguments),
            "attempts": self.attempts, "receipt": self.receipt, "reason_code": self.reason_code,
            "created_at": self.created_at, "updated_at": self.updated_at,
        }


class OpenedRevision(msgspec.Struct, frozen=True, kw_only=True):
    proposal_id: str
    revision: int
    created: bool
    """False when the same canonical action was already the current, valid revision."""
    superseded: int | None = None
    """The revision this one replaced (its confirmation and evidence are now invalid)."""
    expires_at: float = 0.0


class OpenQuestion(msgspec.Struct, frozen=True, kw_only=True):
    """A read-back asked and never acted on: its proposal still open, its revision current,
    unexpired and read back (evidence recorded), nothing executed for it. A resumed session
    asks it again (the answer may have been lost with the connection)."""

    proposal_id: str
    revision: int
    tool: str
    """The model-facing tool name the proposal was made for."""
    canonical_arguments: dict[str, Any]
    expires_at: float
    turn_id: str


class StoredRevision(msgspec.Struct, frozen=True, kw_only=True):
    """What the final gate reloads: the proposal as stored, not as the plan claims."""

    session_id: str
    proposal_status: str
    current_revision: int
    revision: int
    canonical_arguments: dict[str, Any]
    arguments_hash: str
    workflow_revision: str
    expires_at: float
    confirmation_status: str
    confirmation_hash: str
    confirmation_expires_at: float
    evidence_status: str
    steps: dict[str, tuple[str, str]] = {}
    """The session's required-step evidence (ADR-0030): step id -> (status, policy version)."""


class Authorization(msgspec.Struct, frozen=True, kw_only=True):
    operation: OperationRecord | None
    created: bool = False
    reason: str = ""
