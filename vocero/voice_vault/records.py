"""What the vault hands out: voices, versions and approvals, never reference audio or text."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from vocero.store.models.voices import VoiceApprovalRow, VoiceProfileRow, VoiceVersionRow


class ApprovalRecord(msgspec.Struct, frozen=True, kw_only=True):
    operator: str
    role: str
    at: datetime


class VersionRecord(msgspec.Struct, frozen=True, kw_only=True):
    voice_id: str
    version: int
    status: str
    audio_sha256: str
    text_sha256: str
    model: str
    params: dict[str, Any]
    engine_voice: str
    """The serving engine's voice this version is spoken with on a remote TTS ("": none)."""
    created_at: datetime
    effective_at: datetime | None
    approvals: list[ApprovalRecord]


class VoiceRecord(msgspec.Struct, frozen=True, kw_only=True):
    voice_id: str
    tenant: str
    owner: str
    purpose: str
    languages: list[str]
    usage_until: datetime
    consent_ref: str
    status: str
    created_at: datetime
    versions: list[VersionRecord]


def approval_record(row: VoiceApprovalRow) -> ApprovalRecord:
    return ApprovalRecord(operator=row.operator, role=row.role, at=row.created_at)


def version_record(row: VoiceVersionRow, approvals: list[VoiceApprovalRow]) -> VersionRecord:
    return VersionRecord(
        voice_id=row.voice_id, version=row.version, status=row.status,
        audio_sha256=row.audio_sha256, text_sha256=row.text_sha256, model=row.model,
        params=dict(row.params), engine_voice=row.engine_voice, created_at=row.created_at,
        effective_at=row.effective_at,
        approvals=[approval_record(a) for a in sorted(approvals, key=lambda a: a.created_at)],
    )


def voice_record(row: VoiceProfileRow, versions: list[VersionRecord]) -> VoiceRecord:
    return VoiceRecord(
        voice_id=row.voice_id, tenant=row.tenant, owner=row.owner, purpose=row.purpose,
        languages=list(row.languages), usage_until=row.usage_until, consent_ref=row.consent_ref,
        status=row.status, created_at=row.created_at, versions=versions,
    )
