"""The voice vault: consented voice profiles, their versions and the two-person approvals."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import (
    JSON,
    ForeignKey,
    ForeignKeyConstraint,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import ID, NAME, Base, UtcDateTime, one_of, utcnow

VoiceVersionStatus = Literal["pending", "approved", "revoked"]
VOICE_VERSION_STATUSES: tuple[str, ...] = get_args(VoiceVersionStatus)


class VoiceProfileRow(Base):
    __tablename__ = "voice_profiles"

    voice_id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(NAME), index=True)
    owner: Mapped[str] = mapped_column(String(256))
    purpose: Mapped[str] = mapped_column(Text)
    languages: Mapped[list[str]] = mapped_column(JSON, default=list)
    usage_until: Mapped[datetime] = mapped_column(UtcDateTime)
    consent_ref: Mapped[str] = mapped_column(String(256))
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class VoiceVersionRow(Base):
    """One reference recording. ``ref_audio`` is ciphertext from the vault, opaque here."""

    __tablename__ = "voice_versions"
    __table_args__ = (one_of("status", VOICE_VERSION_STATUSES),)

    voice_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("voice_profiles.voice_id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    audio_sha256: Mapped[str] = mapped_column(String(ID))
    text_sha256: Mapped[str] = mapped_column(String(ID))
    ref_audio: Mapped[bytes] = mapped_column(LargeBinary)
    ref_text: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(NAME))
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    engine_voice: Mapped[str] = mapped_column(String(ID), default="", server_default="")
    """The serving engine's voice name this version is spoken with on a remote TTS, approved
    with the version ("": none; a remote TTS cannot speak it)."""
    status: Mapped[VoiceVersionStatus] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    effective_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class VoiceApprovalRow(Base):
    __tablename__ = "voice_approvals"
    __table_args__ = (
        ForeignKeyConstraint(
            ["voice_id", "version"],
            ["voice_versions.voice_id", "voice_versions.version"],
            ondelete="CASCADE",
        ),
        UniqueConstraint("voice_id", "version", "operator"),
    )

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    voice_id: Mapped[str] = mapped_column(String(ID))
    version: Mapped[int] = mapped_column(Integer)
    operator: Mapped[str] = mapped_column(String(NAME))
    role: Mapped[str] = mapped_column(String(ID))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
