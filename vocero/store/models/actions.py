"""Governed actions (ADR-0009, ADR-0010): evidence steps, proposals and their revisions,
confirmations bound to one revision, durable operations and the outbox that dispatches them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from vocero.contracts.domain import ActionClass
from vocero.contracts.events import Decision, ToolStatus
from vocero.store.models.base import ID, NAME, AutoIncrement, Base, UtcDateTime, one_of, utcnow

EvidenceStatus = Literal["missing", "in_progress", "satisfied", "invalidated", "unobservable"]
ConfirmationStatus = Literal["pending", "used", "expired", "invalidated", "rejected"]
OperationStatus = ToolStatus

EVIDENCE_STATUSES: tuple[str, ...] = get_args(EvidenceStatus)
CONFIRMATION_STATUSES: tuple[str, ...] = get_args(ConfirmationStatus)
OPERATION_STATUSES: tuple[str, ...] = get_args(OperationStatus)
ACTION_CLASSES: tuple[str, ...] = get_args(ActionClass)
DECISIONS: tuple[str, ...] = get_args(Decision)

_REVISION_FK = ("proposal_revisions.proposal_id", "proposal_revisions.revision")


class EvidenceStepRow(Base):
    """One required policy step and the evidence for it; ``generation_id`` names the audio
    attempt that delivered it, so completion of a canceled generation cannot satisfy it."""

    __tablename__ = "evidence_steps"
    __table_args__ = (one_of("status", EVIDENCE_STATUSES),)

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("sessions.id", ondelete="CASCADE"), index=True
    )
    proposal_id: Mapped[str | None] = mapped_column(
        String(ID), ForeignKey("proposals.id", ondelete="CASCADE"), index=True
    )
    step: Mapped[str] = mapped_column(String(NAME))
    status: Mapped[EvidenceStatus] = mapped_column(String(16))
    policy_version: Mapped[str] = mapped_column(String(ID))
    generation_id: Mapped[str | None] = mapped_column(String(ID))
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)


class ProposalRow(Base):
    """An application-owned proposal; ``tool`` is the model-facing name, ``resolved_tool`` the
    server tool the gate actually checks."""

    __tablename__ = "proposals"
    __table_args__ = (one_of("action_class", ACTION_CLASSES),)

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(ID), ForeignKey("sessions.id"), index=True)
    turn_id: Mapped[str] = mapped_column(String(ID))
    tool: Mapped[str] = mapped_column(String(NAME))
    server: Mapped[str] = mapped_column(String(NAME))
    resolved_tool: Mapped[str] = mapped_column(String(NAME))
    action_class: Mapped[ActionClass] = mapped_column(String(24))
    status: Mapped[str] = mapped_column(String(24))
    current_revision: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class ProposalRevisionRow(Base):
    """One immutable revision of a proposal: the canonical arguments a confirmation binds to."""

    __tablename__ = "proposal_revisions"

    proposal_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("proposals.id", ondelete="CASCADE"), primary_key=True
    )
    revision: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    canonical_arguments: Mapped[dict[str, Any]] = mapped_column(JSON)
    target_resource: Mapped[str] = mapped_column(String(256), default="")
    object_version: Mapped[str] = mapped_column(String(NAME), default="")
    workflow_revision: Mapped[str] = mapped_column(String(ID), default="")
    arguments_hash: Mapped[str] = mapped_column(String(ID))
    summary: Mapped[str] = mapped_column(Text, default="")
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    invalidated_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class ConfirmationRow(Base):
    """A caller's answer bound to exactly one proposal revision (``binding_hash``)."""

    __tablename__ = "confirmations"
    __table_args__ = (
        ForeignKeyConstraint(["proposal_id", "revision"], _REVISION_FK, ondelete="CASCADE"),
        Index("ix_confirmations_proposal_id_revision", "proposal_id", "revision"),
        one_of("status", CONFIRMATION_STATUSES),
        one_of("decision", DECISIONS),
    )

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    proposal_id: Mapped[str] = mapped_column(String(ID))
    revision: Mapped[int] = mapped_column(Integer)
    binding_hash: Mapped[str] = mapped_column(String(ID))
    turn_id: Mapped[str | None] = mapped_column(String(ID))
    decision: Mapped[Decision | None] = mapped_column(String(16))
    status: Mapped[ConfirmationStatus] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class OperationRow(Base):
    """A durable operation; ``id`` is the ``io.vocero/operation_id`` every retry reuses. Reads
    have no proposal; a write has exactly one operation per proposal revision."""

    __tablename__ = "operations"
    __table_args__ = (
        ForeignKeyConstraint(["proposal_id", "revision"], _REVISION_FK),
        UniqueConstraint("proposal_id", "revision"),
        Index("ix_operations_status_updated_at", "status", "updated_at"),
        one_of("status", OPERATION_STATUSES),
    )

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    proposal_id: Mapped[str | None] = mapped_column(String(ID))
    revision: Mapped[int | None] = mapped_column(Integer)
    session_id: Mapped[str] = mapped_column(String(ID), ForeignKey("sessions.id"), index=True)
    tenant_id: Mapped[str] = mapped_column(String(NAME))
    tool: Mapped[str] = mapped_column(String(NAME))
    server: Mapped[str] = mapped_column(String(NAME))
    resolved_tool: Mapped[str] = mapped_column(String(NAME))
    arguments: Mapped[dict[str, Any]] = mapped_column(JSON)
    principal: Mapped[dict[str, Any]] = mapped_column(JSON)
    idempotent: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[OperationStatus] = mapped_column(String(24))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    receipt: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    reason_code: Mapped[str] = mapped_column(String(ID), default="")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)


class OutboxRow(Base):
    """Written in the same transaction as the authorized operation; a worker claims due rows.

    ``claimed_by`` is the process holding the row under a lease until ``lease_expires_at`` (the
    authorizing process holds it from the start, so its live session hears every status);
    ``claimed_at`` is set while its worker is processing it and cleared when the row waits for a
    later attempt. A row whose lease ran out may be claimed by any process."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_done_available_at", "done", "available_at"),)

    id: Mapped[int] = mapped_column(AutoIncrement, primary_key=True, autoincrement=True)
    operation_id: Mapped[str] = mapped_column(
        String(ID), ForeignKey("operations.id", ondelete="CASCADE"), unique=True
    )
    available_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    claimed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    claimed_by: Mapped[str | None] = mapped_column(String(NAME))
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
