"""``followups.record``: the built-in tool that books a follow-up, under the call-back rule
(docs/followups.md "The call-back rule").

Canonicalisation runs while the call is live, on the conversation as heard: the ``when`` must
pass :func:`~vocero.followups.rule.judge`, or a :class:`CanonicalError` refuses the record with
the result the model sees (``NOT recorded``) and the read-back the caller hears. Every follow-up
has a reason and a channel (``phone`` for a call-back; ``task`` for work only a person can do,
which the queue never sends); "no follow-up needed" records nothing. The due time is resolved in
the caller's timezone (:mod:`.due`). Execution (from the outbox, possibly after a restart) only
stores the canonical values: idempotent by the recording operation, and a second follow-up of
the same caller with the same *when* returns the open one (``duplicate``). A follow-up over the
caps of the session's profile (:mod:`.limits`) is refused there, in the same transaction that
would store it: ``NOT recorded`` with ``caller_limit`` or ``session_limit``, nothing stored.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import structlog

from vocero.contracts.builtins import Canonical, CanonicalError, Context, zone_of
from vocero.contracts.domain import FollowupSettings
from vocero.contracts.ports import CallMeta, Clock, ToolResult
from vocero.followups import lexicon as lx
from vocero.followups.due import resolve_reading
from vocero.followups.limits import FollowupLimitError, LimitsLookup, RecordLimits
from vocero.followups.ports import FollowupStore, ProfileLookup
from vocero.followups.records import Channel, FollowupDraft
from vocero.followups.rule import judge, question
from vocero.followups.timewords import read

log = structlog.get_logger("vocero.followups")

FOLLOWUPS = "followups.record"
NO_SETTINGS = FollowupSettings()
CHANNEL_WORDS: dict[str, Channel] = {
    "phone": "phone", "call": "phone", "callback": "phone", "call-back": "phone",
    "call_back": "phone", "voice": "phone", "ring": "phone",
    "task": "task", "email": "task", "mail": "task", "sms": "task", "text": "task",
    "message": "task", "whatsapp": "task",
}
"""Anything but a phone call is work a person does: a ``task``."""
_TASK_WORDS = re.compile(
    r"\b(send|email|e-mail|mail|post|ship|prepare|review|fix|repair|forward|draft|write|"
    r"upload)(s|ed|ing)?\b")
"""Work verbs: a reason that asks for one (and no call) is a task for a person."""
_CALL_WORDS = re.compile(r"\b(call|ring|phone|callback|call-back|speak|talk)\w*\b")
MAX_WHEN = 256
MAX_REASON = 500
"""Characters of ``when`` and ``reason`` (after collapsing blanks): a longer one is refused
(``NOT recorded``, ``when_too_long`` / ``reason_too_long``) and the caller asked again, never cut
short; the queue reads ``reason`` to the person who calls back."""
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "when": {"type": "string", "maxLength": MAX_WHEN,
                 "description": "When, in the caller's own words (or the time they agreed to)"},
        "reason": {"type": "string", "maxLength": MAX_REASON,
                   "description": "What the follow-up is about, briefly"},
        "channel": {"type": "string", "enum": ["phone", "task"],
                    "description": "phone: we call them back; task: work a person does"},
    },
    "required": ["when", "reason"],
}


def not_recorded(reason: str, **extra: Any) -> dict[str, Any]:
    """What the model sees when nothing was booked: it cannot report a booking from this."""
    return {"status": "NOT recorded", "reason": reason,
            "note": "Nothing was booked. Do not tell the caller that a follow-up is arranged.",
            **extra}


class FollowupTools:
    """The :class:`~vocero.contracts.builtins.BuiltinTools` of ``followups.record``.

    With ``profiles``, a follow-up over its session profile's caps (:mod:`.limits`) is refused
    when it is executed; without, nothing is capped (stores and tests that record directly)."""

    def __init__(
        self, store: FollowupStore, clock: Clock, profiles: ProfileLookup | None = None
    ) -> None:
        self._store = store
        self._clock = clock
        self._profiles = profiles

    def handles(self, tool: str) -> bool:
        return tool == FOLLOWUPS

    def schema(self, tool: str) -> dict[str, Any]:
        return SCHEMA

    def canonicalize(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Canonical:
        when = _collapse(arguments.get("when"))
        reason = _collapse(arguments.get("reason"))
        raw_channel = _collapse(arguments.get("channel")).lower()
        if no_followup_needed(when, reason, raw_channel):
            raise CanonicalError("when", "no follow-up needed", "All right, no follow-up then.",
                                 reason_code="no_followup_needed",
                                 result=not_recorded("no_followup_needed"))
        if not reason:
            raise CanonicalError("reason", "missing", "What should the follow-up be about?",
                                 reason_code="arguments_unresolved",
                                 result=not_recorded("reason_missing"))
        _bounded(when, reason)
        channel = channel_of(raw_channel, reason)
        reading = read(when)
        due = resolve_reading(reading, ctx.now, ctx.timezone)
        verdict = judge(when, ctx.history, ctx.locale, due)
        if not verdict.accepted:
            log.info("followups.when_refused", detail=verdict.detail, channel=channel)
            raise CanonicalError(
                "when", verdict.detail, question(reading, due, ctx.now, ctx.history, channel),
                reason_code="when_mismatch",
                result=not_recorded("when_mismatch", detail=verdict.detail),
            )
        log.info("followups.when_accepted", basis=verdict.basis, exact=due.exact)
        return Canonical(arguments={
            "when": when, "reason": reason, "channel": channel, "timezone": ctx.timezone,
            "due_at": due.at.isoformat(),
        })

    async def call(
        self, tool: str, arguments: dict[str, Any], meta: CallMeta, *, session_id: str
    ) -> ToolResult:
        if tool != FOLLOWUPS:
            return ToolResult(content={"error": "unknown_tool"}, is_error=True)
        draft = FollowupDraft(
            session_id=session_id, tenant_id=meta.principal.tenant_id,
            subject_ref=meta.principal.subject_ref, when_text=str(arguments["when"])[:MAX_WHEN],
            due_at=datetime.fromisoformat(str(arguments["due_at"])),
            timezone=str(arguments["timezone"]), channel=arguments["channel"],
            reason=str(arguments["reason"])[:MAX_REASON], operation_id=meta.operation_id,
        )
        now = datetime.fromtimestamp(self._clock.now(), UTC)
        try:
            record, duplicate = await self._store.record(draft, now, limits=self._limits())
        except FollowupLimitError as refused:
            log.info("followups.over_limit", reason_code=refused.reason_code,
                     limit=refused.limit, channel=draft.channel)
            return ToolResult(content=not_recorded(
                refused.reason_code, limit=refused.limit, error=refused.reason_code),
                is_error=True)
        return ToolResult(content={
            "followup_id": record.id,
            "due_at": record.due_at.astimezone(zone_of(record.timezone)).isoformat(),
            "timezone": record.timezone, "channel": record.channel, "state": record.status,
            "duplicate": duplicate,
        })


    def _limits(self) -> LimitsLookup | None:
        profiles = self._profiles
        if profiles is None:
            return None

        def of(profile_id: str, version: str) -> RecordLimits:
            profile = profiles(profile_id, version)
            return RecordLimits.of(profile.followups if profile is not None else NO_SETTINGS)

        return of


def _bounded(when: str, reason: str) -> None:
    """Refuse a ``when`` or ``reason`` too long to record whole (:data:`MAX_WHEN`,
    :data:`MAX_REASON`); the caller hears a short question."""
    if len(when) > MAX_WHEN:
        raise CanonicalError("when", "too long", "When should we follow up, in a few words?",
                             reason_code="arguments_unresolved",
                             result=not_recorded("when_too_long", max_chars=MAX_WHEN))
    if len(reason) > MAX_REASON:
        raise CanonicalError("reason", "too long",
                             "Briefly, what should the follow-up be about?",
                             reason_code="arguments_unresolved",
                             result=not_recorded("reason_too_long", max_chars=MAX_REASON))


def channel_of(said: str, reason: str) -> Channel:
    """The channel the model named, else a task when the reason is work a person does."""
    if said:
        channel = CHANNEL_WORDS.get(said)
        if channel is None:
            raise CanonicalError("channel", "unknown",
                                 "Should we call you back, or is this something for our team "
                                 "to do?", result=not_recorded("channel_unknown"))
        return channel
    text = reason.lower()
    if _TASK_WORDS.search(text) and not _CALL_WORDS.search(text):
        return "task"
    return "phone"


def no_followup_needed(when: str, reason: str, channel: str) -> bool:
    if channel in ("none", "no"):
        return True
    said = when.lower()
    if said in ("none", "no", "n/a", "never") or any(p in said for p in lx.NO_FOLLOWUP):
        return True
    about = reason.lower()
    return any(p in about for p in lx.NO_FOLLOWUP if "follow" in p)


def _collapse(value: Any) -> str:
    return " ".join(str(value or "").split())
