"""Versioned agent profiles: every distinct content a profile was loaded with, and which one
new sessions get (ADR-0023, docs/runbooks/rollback.md).

A profile revision is the profile file and its claim catalog as read, with their content hash,
who loaded it and when. ``profile_heads`` names, per profile id, the revision new sessions are
given; a rollback moves it back without a restart. ``file_hash`` is the content last read from
the profile directory, so an unchanged file never undoes a rollback.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import ID, NAME, Base, UtcDateTime


class ProfileRevisionRow(Base):
    __tablename__ = "profile_revisions"
    __table_args__ = (UniqueConstraint("profile_id", "revision"),)

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    profile_id: Mapped[str] = mapped_column(String(NAME), index=True)
    revision: Mapped[int] = mapped_column(Integer)
    version: Mapped[str] = mapped_column(String(NAME))
    """The ``version`` the profile file declares (what sessions report as profile_version)."""
    content_hash: Mapped[str] = mapped_column(String(ID))
    snapshot: Mapped[dict[str, Any]] = mapped_column(JSON)
    loaded_by: Mapped[str] = mapped_column(String(NAME))
    loaded_at: Mapped[datetime] = mapped_column(UtcDateTime)


class ProfileHeadRow(Base):
    __tablename__ = "profile_heads"

    profile_id: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    revision: Mapped[int] = mapped_column(Integer)
    file_hash: Mapped[str] = mapped_column(String(ID))
    changed_by: Mapped[str] = mapped_column(String(NAME))
    changed_at: Mapped[datetime] = mapped_column(UtcDateTime)
    reason: Mapped[str] = mapped_column(String(NAME), default="")
