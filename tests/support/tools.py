"""Tool definitions for the dialogue tests' made-up businesses: every listed property required,
as a profile's tool usually has them."""

from __future__ import annotations

from typing import Any

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import Message, ToolIntent


def tool(name: str, description: str, properties: dict[str, Any], **extra: Any) -> ToolDefinition:
    """A tool whose every property is required (``extra``: examples, builtin, ...)."""
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return ToolDefinition(name=name, description=description, input_schema=schema, **extra)


def conversation(system: Message, lines: tuple[str, ...]) -> list[Message]:
    """The system message, then ``lines`` as the caller and the agent in turn, the caller first:
    a conversation a dialogue test decides the last line of."""
    return [
        system,
        *(
            Message(role="assistant" if index % 2 else "user", content=line)
            for index, line in enumerate(lines)
        ),
    ]


def called(decision: object) -> ToolIntent:
    """The intent a dialogue decision calls (it must call one)."""
    intent = getattr(decision, "intent", None)
    assert isinstance(intent, ToolIntent), decision
    return intent
