"""Protocol-neutral shapes the adapters produce: what a server listed and what a call returned.

Adapters translate each MCP revision into these, so pinning, validation and the gateway never see
a transport or an SDK type (ADR-0004: the data layer apart from the transport).
"""

from __future__ import annotations

from typing import Any

import msgspec


class RemoteTool(msgspec.Struct, frozen=True, kw_only=True):
    """A tool as a server lists it."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = {}
    output_schema: dict[str, Any] | None = None

    def definition(self) -> dict[str, Any]:
        """The pinned part of a tool: what the model and the validators rely on."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
        }


class RemoteResult(msgspec.Struct, frozen=True, kw_only=True):
    """A tools/call result: text blocks, structured content, and what was dropped."""

    is_error: bool = False
    texts: list[str] = []
    structured: Any = None
    dropped_blocks: int = 0
    """Images, audio, resources: a voice agent has no use for them, so they never pass."""


class Listing(msgspec.Struct, frozen=True, kw_only=True):
    """A complete tools/list (every page) with the server's caching hints (2026-07-28)."""

    tools: list[RemoteTool] = []
    ttl_ms: int | None = None
    """Shortest ``ttlMs`` over the pages; ``None``: the revision has no hints (2025-11-25)."""
    cache_scope: str = "private"
    """``private`` when any page says so (the listing belongs to this credential only)."""
