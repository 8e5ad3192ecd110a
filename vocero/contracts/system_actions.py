"""The port of system-initiated actions: work Vocero starts itself, with no caller on the line.

The follow-up queue places a call-back through the profile's ``call_tool`` as an *ordinary
durable operation*: the same permit gate, an operations row and its outbox row written in one
transaction, the outbox worker dispatching with ``_meta`` as docs/mcp.md "A call" says. The
initiator chooses the ``operation_id`` and records it durably *before* submitting, one per attempt:
a crash between the two is repaired by submitting the same id again (``submit`` is idempotent by
it), and the tool's server deduplicates by it, so a restart never places a second call.

The policy plane implements it; planes that start work (``vocero.followups``) call it and never
import the policy plane.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

import msgspec

from vocero.contracts.domain import Principal
from vocero.contracts.events import ToolStatus

ActionState = Literal["denied"] | ToolStatus


class SystemAction(msgspec.Struct, frozen=True, kw_only=True):
    operation_id: str
    """Chosen by the initiator, one per attempt; the ``io.vocero/operation_id`` sent."""
    session_id: str
    """The session the work comes from: its profile governs the tool."""
    profile_id: str
    profile_version: str
    tool: str
    """The profile's tool name (e.g. the ``followups.call_tool``)."""
    arguments: dict[str, Any]
    principal: Principal
    """Whom the action is for, from the identities file (never from model output)."""
    initiator: str
    """Which plane started it (``followups``), for the audit log."""
    subject: str = ""
    """What it is about in the initiator's terms (a follow-up id), for the audit log."""


class SystemActionState(msgspec.Struct, frozen=True, kw_only=True):
    operation_id: str
    status: ActionState
    """``denied`` when the gate refused (nothing was written, nothing will be sent)."""
    reason_code: str = ""
    receipt: dict[str, Any] | None = None
    """The owning service's answer once ``committed`` (``{"source", "content"}``)."""
    settled: bool = False
    """Nothing more will happen without an operator (committed, rejected, denied, or unknown
    beyond reconciliation)."""


class SystemActions(Protocol):
    async def submit(self, action: SystemAction) -> SystemActionState:
        """Gate and durably authorize ``action``; the same ``operation_id`` again returns the
        operation already authorized (one effect)."""
        ...

    async def state(self, operation_id: str) -> SystemActionState | None:
        """The operation's current state; ``None`` when it was never authorized."""
        ...

    async def wait(
        self, operation_ids: Sequence[str], timeout_s: float
    ) -> dict[str, SystemActionState]:
        """The state of each operation once settled or after ``timeout_s``."""
        ...
