"""The MCP gateway's pinned tool definitions (rug-pull protection), its sealed OAuth records and
the operators' consents it waits for."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import JSON, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import ID, NAME, Base, UtcDateTime, one_of, utcnow

ToolPinStatus = Literal["approved", "changed", "missing", "pending", "rejected"]
TOOL_PIN_STATUSES: tuple[str, ...] = get_args(ToolPinStatus)
ConsentStatus = Literal[
    "pending", "answered", "granted", "refused", "expired", "superseded", "failed"
]
CONSENT_STATUSES: tuple[str, ...] = get_args(ConsentStatus)


class ToolPinRow(Base):
    """A tool definition as first approved; a changed definition is not used until re-pinned."""

    __tablename__ = "tool_pins"
    __table_args__ = (one_of("status", TOOL_PIN_STATUSES),)

    server: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    tool: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    definition_hash: Mapped[str] = mapped_column(String(NAME))
    """``sha256:`` and 64 hex digits."""
    definition: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[ToolPinStatus] = mapped_column(String(16))
    pinned_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    changed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    observed_hash: Mapped[str] = mapped_column(String(NAME), server_default="")
    """What the server listed after a change, until an operator re-approves it."""
    observed_definition: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    approved_by: Mapped[str] = mapped_column(String(NAME), server_default="")


class McpOAuthTokenRow(Base):
    """The gateway's OAuth record of one MCP server (tokens, expiry, client registration),
    sealed with the vault key (AES-GCM, associated data ``mcp-oauth:<server>``): nothing in it
    is readable, or movable to another server's row, without that key."""

    __tablename__ = "mcp_oauth_tokens"

    server: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    sealed: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class McpOAuthConsentRow(Base):
    """An authorization the gateway waits for an operator to give (the authorization-code
    grant). The callback may reach any node: it leaves the answer here, sealed, for the node
    whose flow holds the PKCE verifier. Found by the SHA-256 of the ``state``, never the state."""

    __tablename__ = "mcp_oauth_consents"
    __table_args__ = (
        one_of("status", CONSENT_STATUSES),
        Index("ix_mcp_oauth_consents_state_sha256", "state_sha256", unique=True),
        Index("ix_mcp_oauth_consents_status", "status"),
    )

    id: Mapped[str] = mapped_column(String(ID), primary_key=True)
    server: Mapped[str] = mapped_column(String(NAME))
    node_id: Mapped[str] = mapped_column(String(NAME), server_default="")
    state_sha256: Mapped[str] = mapped_column(String(ID))
    authorization_url: Mapped[str] = mapped_column(Text)
    """Where the operator approves (the authorization server's page, the PKCE challenge and
    ``state`` in it): for operators only."""
    status: Mapped[ConsentStatus] = mapped_column(String(16))
    answer_sealed: Mapped[str | None] = mapped_column(Text)
    """The authorization response (code, ``iss`` or error), sealed with the vault key."""
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
