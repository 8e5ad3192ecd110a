"""``carrier.call``: the built-in call tool that rings a caller back through the carrier
(docs/followups.md "Call-backs through the carrier"; ADR-0035).

A profile names it as its ``followups.call_tool`` (a tool with ``server: vocero`` and
``resolves_to: carrier.call``). Only the queue starts it, as a system operation through the gate,
with ``{phone, reason, followup_id}``; it answers the way §9's call tool does:

* the carrier accepted the call (HTTP 201 with a call sid): ``{"status": "placed", "call_sid"}``
  (the operation's receipt keeps the sid);
* busy (429, 5xx, unreachable): ``line_not_ready`` (the follow-up is due again in an hour);
* refused (4xx, or no number to call from): an error with the reason (``refused``);
* a second dispatch of the same operation (a restart between the request and its answer) never
  asks the carrier again: the attempt was noted as dialling before the request
  (:meth:`~vocero.followups.sql.SqlFollowupStore.claim_dial`), so it answers
  ``call_outcome_unknown`` and the follow-up is closed (``refused``): it may have rung.

Every outcome is audited (``followup.call_placed``, ``followup.call_not_placed``) with the
number only as a digest.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from vocero.contracts.builtins import CARRIER_CALL_TOOL, Canonical, Context
from vocero.contracts.carrier_calls import CallNotPlaced, CallPlacer, opening_line
from vocero.contracts.domain import Caller
from vocero.contracts.ports import CallMeta, Clock, ToolResult
from vocero.followups.ports import Directory, ProfileLookup
from vocero.followups.records import Followup

log = structlog.get_logger("vocero.followups.carrier")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "phone": {"type": "string"}, "reason": {"type": "string"},
        "followup_id": {"type": "string"},
    },
    "required": ["phone", "followup_id"],
}


class DialBook(Protocol):
    """What the tool needs of the follow-up store."""

    async def get(self, followup_id: str) -> Followup | None: ...

    async def claim_dial(self, operation_id: str, now: datetime) -> bool: ...


class AuditSink(Protocol):
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> Any: ...


class CarrierCallTools:
    """The :class:`~vocero.contracts.builtins.BuiltinTools` of ``carrier.call``."""

    def __init__(
        self,
        store: DialBook,
        clock: Clock,
        *,
        placer: CallPlacer | None,
        profiles: ProfileLookup,
        audit: AuditSink,
        from_number: str = "",
    ) -> None:
        self._store = store
        self._clock = clock
        self._placer = placer
        self._profiles = profiles
        self._audit = audit
        self._from_number = from_number

    def handles(self, tool: str) -> bool:
        return tool == CARRIER_CALL_TOOL

    def schema(self, tool: str) -> dict[str, Any]:
        return SCHEMA

    def canonicalize(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Canonical:
        return Canonical(arguments={k: str(arguments.get(k) or "") for k in SCHEMA["properties"]})

    async def call(
        self, tool: str, arguments: dict[str, Any], meta: CallMeta, *, session_id: str
    ) -> ToolResult:
        if tool != CARRIER_CALL_TOOL:
            return ToolResult(content={"error": "unknown_tool"}, is_error=True)
        followup_id = str(arguments.get("followup_id") or "")
        phone = str(arguments.get("phone") or "")
        followup = await self._store.get(followup_id) if followup_id else None
        if followup is None:
            return await self._not_placed(meta, session_id, followup_id, phone,
                                          CallNotPlaced("followup_unknown"))
        from_number = self._from(followup)
        if self._placer is None:
            return await self._not_placed(meta, session_id, followup_id, phone,
                                          CallNotPlaced("carrier_not_configured"))
        now = datetime.fromtimestamp(self._clock.now(), UTC)
        if not await self._store.claim_dial(meta.operation_id, now):
            return await self._not_placed(meta, session_id, followup_id, phone,
                                          CallNotPlaced("call_outcome_unknown", unknown=True))
        try:
            placed = await self._placer.place(to=phone, from_=from_number,
                                              followup_id=followup_id)
        except CallNotPlaced as failed:
            return await self._not_placed(meta, session_id, followup_id, phone, failed)
        await self._audit.record("followup.call_placed", {
            "operation_id": meta.operation_id, "followup_id": followup_id,
            "call_sid": placed.call_sid, "phone_ref": phone_digest(phone)},
            session_id=session_id)
        return ToolResult(content={"status": "placed", "call_sid": placed.call_sid,
                                   "carrier_status": placed.status})

    def _from(self, followup: Followup) -> str:
        profile = self._profiles(followup.profile_id, followup.profile_version)
        own = profile.followups.from_number if profile is not None else ""
        return own or self._from_number

    async def _not_placed(
        self, meta: CallMeta, session_id: str, followup_id: str, phone: str,
        failed: CallNotPlaced,
    ) -> ToolResult:
        """Busy: ``line_not_ready`` (due again later); otherwise refused with the reason."""
        code = "line_not_ready" if failed.busy else failed.reason_code
        await self._audit.record("followup.call_not_placed", {
            "operation_id": meta.operation_id, "followup_id": followup_id,
            "reason_code": code, "carrier_reason": failed.reason_code,
            "status": failed.status, "phone_ref": phone_digest(phone) if phone else ""},
            session_id=session_id)
        log.warning("followups.call_not_placed", reason_code=code,
                    carrier_reason=failed.reason_code, status=failed.status)
        return ToolResult(content={"error": f"{code}: {failed.reason_code}",
                                   "status": failed.status}, is_error=True)


async def callback_answered(
    store: DialBook, directory: Directory, profiles: ProfileLookup, followup_id: str,
    number: str,
) -> tuple[Caller, str] | None:
    """The caller a call-back rang and the agent's first line (who is calling, the follow-up's
    reason), when ``followup_id`` is a phone follow-up Vocero is placing or placed and
    ``number`` is its caller's phone; ``None`` otherwise."""
    followup = await store.get(followup_id)
    if followup is None or followup.channel != "phone":
        return None
    if followup.status != "placed" and followup.attempt_operation_id is None:
        return None
    caller = directory.caller(followup.tenant_id, followup.subject_ref)
    if caller is None or not caller.phone or not hmac.compare_digest(
            caller.phone.encode(), number.encode()):
        return None
    profile = profiles(followup.profile_id, followup.profile_version)
    agent = profile.followups.agent_name if profile is not None else ""
    return caller, opening_line(followup.reason, agent)


def phone_digest(number: str) -> str:
    """A number as the audit may hold it: a digest prefix, never the number."""
    digits = "".join(c for c in number if c.isdigit() or c == "+")
    return "tel_" + hashlib.sha256(digits.encode()).hexdigest()[:16]
