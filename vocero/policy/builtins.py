"""Vocero's built-in tools: ``followups.record`` (seed 003's call-back rule), minimal for now.

The due time is resolved from the caller's words in their timezone when it can be; anything
that resolves to nothing usable becomes 11:00 tomorrow (seed 003) and is left ``needs_review``
instead of ``scheduled``, so a person checks it rather than a caller waiting on a guess. The
record is idempotent by operation id, and a second follow-up with the same *when* for the same
person is a duplicate, not a second promise. A fuller follow-up plane replaces this later.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.contracts.ports import CallMeta, Clock, ToolResult
from vocero.policy.canonical import Canonical, CanonicalError, Context, resolve_when
from vocero.policy.rows import ACTOR, new_id
from vocero.store.audit_tx import append_in
from vocero.store.engine import Store
from vocero.store.models import FollowupRow

FOLLOWUPS = "followups.record"
CHANNELS = {"phone": "phone", "call": "phone", "callback": "phone", "sms": "sms", "text": "sms",
            "email": "email", "mail": "email", "task": "task"}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "when": {"type": "string", "description": "When to call back, in the caller's words"},
        "reason": {"type": "string", "description": "What the call-back is about"},
        "channel": {"type": "string", "enum": sorted(set(CHANNELS.values()))},
    },
    "required": ["when", "reason"],
}


class FollowupTools:
    """The :class:`~vocero.policy.ports.BuiltinTools` of ``server: vocero``."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def handles(self, tool: str) -> bool:
        return tool == FOLLOWUPS

    def schema(self, tool: str) -> dict[str, Any]:
        return SCHEMA

    def canonicalize(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Canonical:
        when = " ".join(str(arguments.get("when") or "").split())
        reason = " ".join(str(arguments.get("reason") or "").split())
        if not when:
            raise CanonicalError("when", "missing", "When should we call you back?")
        if not reason:
            raise CanonicalError("reason", "missing", "What should the call-back be about?")
        channel = CHANNELS.get(str(arguments.get("channel") or "phone").strip().lower())
        if channel is None:
            raise CanonicalError("channel", "unknown", "Should we call, text or email you?")
        due, exact = resolve_when(when, ctx)
        canonical = {
            "when": when, "reason": reason, "channel": channel, "timezone": ctx.timezone,
            "due_at": due.isoformat(), "due_exact": exact,
        }
        return Canonical(arguments=canonical)

    async def call(
        self, tool: str, arguments: dict[str, Any], meta: CallMeta, *, session_id: str
    ) -> ToolResult:
        if tool != FOLLOWUPS:
            return ToolResult(content={"error": "unknown_tool"}, is_error=True)
        now = datetime.fromtimestamp(self._clock.now(), UTC)
        async with _shielded(self._store) as session:
            row, duplicate = await _existing(session, meta, arguments)
            if row is None:
                row = FollowupRow(
                    id=new_id("fup"), session_id=session_id or None,
                    tenant_id=meta.principal.tenant_id,
                    subject_ref=meta.principal.subject_ref,
                    when_text=str(arguments["when"])[:256],
                    due_at=datetime.fromisoformat(arguments["due_at"]),
                    timezone=str(arguments["timezone"]), channel=str(arguments["channel"]),
                    reason=str(arguments["reason"]),
                    status="scheduled" if arguments.get("due_exact") else "needs_review",
                    operation_id=meta.operation_id, created_at=now, updated_at=now,
                )
                session.add(row)
                await session.flush()
                await append_in(session, "followup.recorded", {
                    "followup_id": row.id, "operation_id": meta.operation_id,
                    "status": row.status, "channel": row.channel,
                    "due_at": row.due_at.isoformat(),
                }, at=now, session_id=session_id, actor=ACTOR)
            return ToolResult(content={
                "followup_id": row.id, "due_at": row.due_at.isoformat(),
                "timezone": row.timezone, "channel": row.channel, "state": row.status,
                "duplicate": duplicate,
            })


@asynccontextmanager
async def _shielded(store: Store) -> AsyncIterator[AsyncSession]:
    with anyio.CancelScope(shield=True):
        async with store.write() as session:
            yield session


async def _existing(
    session: AsyncSession, meta: CallMeta, arguments: dict[str, Any]
) -> tuple[FollowupRow | None, bool]:
    by_operation = (await session.scalars(
        select(FollowupRow).where(FollowupRow.operation_id == meta.operation_id))).first()
    if by_operation is not None:
        return by_operation, False
    same_when = (await session.scalars(select(FollowupRow).where(
        FollowupRow.tenant_id == meta.principal.tenant_id,
        FollowupRow.subject_ref == meta.principal.subject_ref,
        FollowupRow.when_text == str(arguments["when"])[:256],
        FollowupRow.status.in_(("scheduled", "needs_review")),
    ))).first()
    return same_when, same_when is not None
