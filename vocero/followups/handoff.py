"""``handoff.request``: the built-in tool that hands a caller to a person (docs/telephony.md
"Handing a caller to a person").

The gate has already allowed it (a reversible write of the profile that has a ``handoff``),
and for a phone call the orchestrator has already said the transfer and the caller heard it.
Execution then does one of:

* the session is a phone call (``channel`` ``twilio`` with its ``call_sid``) and a carrier
  client is configured: the call is put through to the profile's ``handoff.phone``
  (``transferred``); when the carrier refuses, a ``task`` follow-up is recorded instead
  (``NOT transferred``, with the reason);
* otherwise (the web): a ``task`` follow-up for a person to call the caller back.

The number always comes from the profile, never from the model's arguments. A session is handed
off at most once: a repeat (the same operation retried, or another request in the same session)
returns the first result and never transfers again. Every outcome is audited
(``handoff.transferred``, ``handoff.transfer_failed`` with its reason, ``handoff.task_recorded``)
and the phone number appears there only as a digest.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio
import structlog

from vocero.contracts.builtins import HANDOFF_TOOL, Canonical, Context
from vocero.contracts.domain import AgentProfile
from vocero.contracts.handoff import CallTransfer, TransferFailed
from vocero.contracts.ports import CallMeta, Clock, ToolResult
from vocero.followups.ports import FollowupStore, ProfileLookup
from vocero.followups.records import FollowupDraft
from vocero.store.records import SessionRecord

log = structlog.get_logger("vocero.handoff")

PHONE_CHANNEL = "twilio"
MAX_REASON = 500
DEFAULT_REASON = "The caller asked to speak to a person."
WHEN = "as soon as possible (the caller asked for a person)"
REMEMBERED = 10_000
"""Sessions whose handoff result is kept (a repeat returns it); the oldest is forgotten."""
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": MAX_REASON,
                   "description": "What the caller needs a person for, briefly"},
    },
}

SessionLookup = Callable[[str], Awaitable[SessionRecord | None]]


class AuditSink(Protocol):
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> Any: ...


class HandoffTools:
    """The :class:`~vocero.contracts.builtins.BuiltinTools` of ``handoff.request``."""

    def __init__(
        self,
        store: FollowupStore,
        clock: Clock,
        *,
        sessions: SessionLookup,
        profiles: ProfileLookup,
        audit: AuditSink,
        transfer: CallTransfer | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._sessions = sessions
        self._profiles = profiles
        self._audit = audit
        self._transfer = transfer
        self._done: OrderedDict[str, ToolResult] = OrderedDict()
        self._locks: dict[str, anyio.Lock] = {}

    def handles(self, tool: str) -> bool:
        return tool == HANDOFF_TOOL

    def schema(self, tool: str) -> dict[str, Any]:
        return SCHEMA

    def canonicalize(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Canonical:
        reason = " ".join(str(arguments.get("reason") or "").split())[:MAX_REASON]
        return Canonical(arguments={"reason": reason or DEFAULT_REASON,
                                    "timezone": ctx.timezone})

    async def call(
        self, tool: str, arguments: dict[str, Any], meta: CallMeta, *, session_id: str
    ) -> ToolResult:
        if tool != HANDOFF_TOOL:
            return ToolResult(content={"error": "unknown_tool"}, is_error=True)
        lock = self._locks.setdefault(session_id, anyio.Lock())
        async with lock:
            first = self._done.get(session_id)
            if first is not None:  # handed off already: never a second transfer
                log.info("handoff.repeat", session_id=session_id)
                return first
            result = await self._hand_off(arguments, meta, session_id)
            self._done[session_id] = result
            while len(self._done) > REMEMBERED:
                self._done.popitem(last=False)
        self._locks.pop(session_id, None)
        return result

    async def _hand_off(
        self, arguments: dict[str, Any], meta: CallMeta, session_id: str
    ) -> ToolResult:
        session = await self._sessions(session_id)
        profile = (self._profiles(session.profile_id, session.profile_version)
                   if session is not None else None)
        handoff = profile.handoff if profile is not None else None
        if session is None or profile is None or handoff is None:
            await self._audit.record("handoff.refused", {
                "operation_id": meta.operation_id, "reason_code": "handoff_not_configured"},
                session_id=session_id)
            return ToolResult(content={"status": "NOT handed off",
                                       "reason": "handoff_not_configured"}, is_error=True)
        number_ref = phone_digest(handoff.phone)
        if session.channel == PHONE_CHANNEL and session.call_sid and self._transfer is not None:
            try:
                await self._transfer.transfer(session.call_sid, handoff.phone)
            except TransferFailed as failed:
                await self._audit.record("handoff.transfer_failed", {
                    "operation_id": meta.operation_id, "call_sid": session.call_sid,
                    "number_ref": number_ref, "reason_code": failed.reason_code,
                    "status": failed.status}, session_id=session_id)
                log.warning("handoff.transfer_failed", reason_code=failed.reason_code,
                            status=failed.status)
                return await self._task(arguments, meta, session, profile,
                                        transfer_failed=failed.reason_code)
            await self._audit.record("handoff.transferred", {
                "operation_id": meta.operation_id, "call_sid": session.call_sid,
                "number_ref": number_ref}, session_id=session_id)
            log.info("handoff.transferred", call_sid=session.call_sid)
            return ToolResult(content={"status": "transferred", "channel": "phone"})
        return await self._task(arguments, meta, session, profile, transfer_failed="")

    async def _task(
        self,
        arguments: dict[str, Any],
        meta: CallMeta,
        session: SessionRecord,
        profile: AgentProfile,
        *,
        transfer_failed: str,
    ) -> ToolResult:
        """A ``task`` follow-up for a person to call the caller back."""
        now = datetime.fromtimestamp(self._clock.now(), UTC)
        reason = str(arguments.get("reason") or DEFAULT_REASON)
        if transfer_failed:
            reason = f"{reason} (the phone transfer failed: {transfer_failed})"
        draft = FollowupDraft(
            session_id=session.id, tenant_id=meta.principal.tenant_id,
            subject_ref=meta.principal.subject_ref, when_text=WHEN, due_at=now,
            timezone=str(arguments.get("timezone") or "UTC"), channel="task",
            reason=("Handoff: " + reason)[:MAX_REASON], operation_id=meta.operation_id,
        )
        try:
            record, duplicate = await self._store.record(draft, now)
        except Exception:  # nothing recorded: the caller is told so
            log.exception("handoff.task_failed")
            await self._audit.record("handoff.task_failed", {
                "operation_id": meta.operation_id, "reason_code": "store_unavailable",
                "transfer_failed": transfer_failed}, session_id=session.id)
            return ToolResult(content={"status": "NOT handed off",
                                       "reason": "store_unavailable"}, is_error=True)
        await self._audit.record("handoff.task_recorded", {
            "operation_id": meta.operation_id, "followup_id": record.id,
            "profile_id": profile.id, "duplicate": duplicate,
            "transfer_failed": transfer_failed}, session_id=session.id)
        status = "NOT transferred" if transfer_failed else "task_recorded"
        content: dict[str, Any] = {"status": status, "channel": "task",
                                   "followup_id": record.id}
        if transfer_failed:
            content["reason"] = transfer_failed
        return ToolResult(content=content)


def phone_digest(number: str) -> str:
    """A number as the audit may hold it: a digest prefix, never the number."""
    return "tel_" + hashlib.sha256(number.encode()).hexdigest()[:16]
