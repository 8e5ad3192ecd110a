"""The MCP gateway's pinned tool definitions (rug-pull protection) and its sealed OAuth records."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import JSON, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from vocero.store.models.base import NAME, Base, UtcDateTime, one_of, utcnow

ToolPinStatus = Literal["approved", "changed", "missing", "pending", "rejected"]
TOOL_PIN_STATUSES: tuple[str, ...] = get_args(ToolPinStatus)


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
