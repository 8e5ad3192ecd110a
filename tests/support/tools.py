"""Tool definitions for the dialogue tests' made-up businesses: every listed property required,
as a profile's tool usually has them."""

from __future__ import annotations

from typing import Any

from vocero.contracts.domain import ToolDefinition


def tool(name: str, description: str, properties: dict[str, Any], **extra: Any) -> ToolDefinition:
    """A tool whose every property is required (``extra``: examples, builtin, ...)."""
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return ToolDefinition(name=name, description=description, input_schema=schema, **extra)
