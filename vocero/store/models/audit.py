"""The append-only, hash-chained audit log and the per-chain head that serialises appends."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import ID, NAME, AutoIncrement, Base, UtcDateTime

DEFAULT_CHAIN = "global"


class AuditEventRow(Base):
    """One audit event. UPDATE and DELETE are refused by triggers the migration installs;
    ``(chain, prev_hash)`` is unique, so a chain can never fork."""

    __tablename__ = "audit_events"
    __table_args__ = (
        UniqueConstraint("chain", "prev_hash"),
        Index("ix_audit_events_chain_seq", "chain", "seq"),
    )

    seq: Mapped[int] = mapped_column(AutoIncrement, primary_key=True, autoincrement=True)
    chain: Mapped[str] = mapped_column(String(ID), default=DEFAULT_CHAIN)
    session_id: Mapped[str | None] = mapped_column(String(ID), index=True)
    kind: Mapped[str] = mapped_column(String(NAME))
    actor: Mapped[str] = mapped_column(String(NAME))
    at: Mapped[datetime] = mapped_column(UtcDateTime)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    prev_hash: Mapped[str] = mapped_column(String(ID))
    hash: Mapped[str] = mapped_column(String(ID))


class AuditChainHeadRow(Base):
    """The last event of each chain. Appenders lock this row first, which serialises them
    across processes (SQLite's write lock, a PostgreSQL row lock)."""

    __tablename__ = "audit_chain_heads"

    chain: Mapped[str] = mapped_column(String(ID), primary_key=True)
    last_seq: Mapped[int] = mapped_column(BigInteger)
    last_hash: Mapped[str] = mapped_column(String(ID))
