"""Plain, immutable records the store hands to other planes (never live ORM objects)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from vocero.store.models import GenerationStatus, TurnSource


class AuditRecord(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    chain: str
    session_id: str
    kind: str
    actor: str
    at: datetime
    data: dict[str, Any]
    prev_hash: str
    hash: str


class ChainVerification(msgspec.Struct, frozen=True, kw_only=True):
    """``count`` is how many events the chain holds; ``broken_at_seq`` is the first event whose
    link or hash does not recompute (or the head's ``last_seq`` when events are missing)."""

    ok: bool
    count: int
    broken_at_seq: int | None = None


class SessionRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    tenant_id: str
    subject_ref: str
    profile_id: str
    profile_version: str
    state: str
    effective: dict[str, Any]
    resume_token_hash: str | None
    created_at: datetime
    closed_at: datetime | None
    owner_id: str = ""
    """The process holding it (a row of ``nodes``); empty when none does."""
    lease_expires_at: datetime | None = None
    channel: str = "web"
    call_sid: str = ""
    followup_id: str = ""
    """The follow-up this session is the call-back of (empty: none)."""


class TurnRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    session_id: str
    seq: int
    source: TurnSource
    text: str
    created_at: datetime


class GenerationRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    session_id: str
    turn_id: str | None
    status: GenerationStatus
    generated_text: str
    heard_text: str
    played_ms: int
    sent_ms: int
    created_at: datetime
    completed_at: datetime | None


class HistoryEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One line of ``GET /v1/sessions/{id}`` history: assistant text is what was heard."""

    role: Literal["user", "assistant"]
    text: str
    turn_id: str = ""
    generation_id: str = ""
    status: str = ""
