"""Plain records of the follow-up plane (never live ORM objects) and their operator views."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Any, Literal, get_args

import msgspec

from vocero.contracts.builtins import zone_of

Status = Literal["scheduled", "awaiting_approval", "placed", "retry", "refused", "missed", "task"]
Channel = Literal["phone", "task"]
AttemptStatus = Literal["pending", "placed", "line_not_ready", "refused", "unknown", "deferred"]

STATUSES: tuple[str, ...] = get_args(Status)
CHANNELS: tuple[str, ...] = get_args(Channel)
ATTEMPT_STATUSES: tuple[str, ...] = get_args(AttemptStatus)
OPEN: frozenset[str] = frozenset({"scheduled", "awaiting_approval", "retry", "task"})
"""A follow-up still owed to the caller (a second one with the same *when* is a duplicate)."""
DUE: frozenset[str] = frozenset({"scheduled", "retry"})
"""Statuses the queue places when their time comes."""


class FollowupDraft(msgspec.Struct, frozen=True, kw_only=True):
    """What ``followups.record`` asks to store: canonical values and who they are for."""

    session_id: str
    tenant_id: str
    subject_ref: str
    when_text: str
    due_at: datetime
    timezone: str
    channel: Channel
    reason: str
    operation_id: str
    """The recording operation (idempotency: a repeat returns the first record)."""


class Followup(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    session_id: str | None
    tenant_id: str
    subject_ref: str
    profile_id: str
    profile_version: str
    when_text: str
    due_at: datetime
    """When the queue next considers it (moves on ``retry``)."""
    promised_at: datetime
    """When it was promised for (lateness is counted from here)."""
    timezone: str
    channel: Channel
    reason: str
    status: Status
    attempts: int
    outcome_reason: str
    attempt_operation_id: str | None
    approved_by: str
    created_at: datetime
    updated_at: datetime

    def public(self) -> dict[str, Any]:
        """``GET /v1/followups`` (docs/followups.md "Operator API"): ``due_at`` in the caller's own
        offset."""
        return {
            "id": self.id, "session_id": self.session_id, "when_text": self.when_text,
            "due_at": rfc3339(self.due_at.astimezone(zone_of(self.timezone))),
            "timezone": self.timezone, "channel": self.channel, "reason": self.reason,
            "status": self.status, "attempts": self.attempts,
            "outcome_reason": self.outcome_reason,
            "promised_at": rfc3339(self.promised_at.astimezone(zone_of(self.timezone))),
            "approved_by": self.approved_by,
            "created_at": rfc3339(self.created_at), "updated_at": rfc3339(self.updated_at),
        }


class Attempt(msgspec.Struct, frozen=True, kw_only=True):
    """One try at placing a phone follow-up: its own operation id, never reused."""

    operation_id: str
    followup_id: str
    attempt: int
    status: AttemptStatus
    reason_code: str
    created_at: datetime


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """A review finding (``GET /v1/findings``, docs/followups.md "Operator API")."""

    id: str
    kind: str
    session_id: str
    generation_id: str
    text: str
    at: datetime

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "session_id": self.session_id,
                "generation_id": self.generation_id, "text": self.text, "at": rfc3339(self.at)}


def rfc3339(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def finding_id(kind: str, session_id: str, generation_id: str, text: str) -> str:
    """Derived from what the finding is about, so the same finding is stored once."""
    digest = hashlib.sha256("\x00".join((kind, session_id, generation_id, text)).encode())
    return "fnd_" + digest.hexdigest()[:24]
