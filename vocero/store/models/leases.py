"""Processes sharing one store and what they hold (ADR-0006: external state with leases;
docs/scaling.md "Leases and takeover").

Every Vocero process (a ``serve`` worker, a ``followups tick`` run) registers one row of
``nodes`` and renews its lease while it lives; sessions and outbox rows name the node that holds
them. ``leases`` are named singleton jobs (one pass of the follow-up queue at a time).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import ID, NAME, Base, UtcDateTime, utcnow

NODE_ENDINGS = ("released", "expired", "dead")
"""How a node's hold ended: it let go (drain), its lease ran out, or its process was seen gone
(same host, same PID namespace, no such process)."""


class NodeRow(Base):
    __tablename__ = "nodes"
    __table_args__ = (Index("ix_nodes_expires_at", "expires_at"),)

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    host: Mapped[str] = mapped_column(String(256))
    """Host name, boot id and PID namespace: a process id means something only within these."""
    pid: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(32))
    started_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    renewed_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    ending: Mapped[str | None] = mapped_column(String(16))
    """One of :data:`NODE_ENDINGS` once the node's hold is over."""


class LeaseRow(Base):
    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    owner_id: Mapped[str | None] = mapped_column(String(ID))
    acquired_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
