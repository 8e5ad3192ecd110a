"""Identifiers the caller's own records hold, and a heard identifier snapped to one of them.

A recogniser prints a spoken identifier in many ways: Piper's "A P T one thousand two" comes back
from Whisper as "APT-10002", "APT 1000 2" or "APT-102". When the conversation has already shown
the caller's records (a list, a lookup), an identifier that none of them has but exactly one of
them is a single edit away from is that one: the read-back then says the record that exists,
and the caller confirms or corrects it. An identifier two or more edits from every record, or
as near to two of them, is left as heard.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rapidfuzz.distance import Levenshtein

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import Message, ToolIntent
from vocero.inference.cpu import router, schema


def record_ids(messages: Sequence[Message], field: str) -> set[str]:
    """Every value of ``field`` in the tool results the conversation holds."""
    found: set[str] = set()
    for message in messages:
        if message.role == "tool" and message.tool_result is not None:
            found.update(str(v) for v in _values(message.tool_result, field))
    return found


def snapped(
    intent: ToolIntent, tool: ToolDefinition | None, messages: Sequence[Message]
) -> ToolIntent:
    """``intent`` with each identifier argument that no known record has replaced by the one
    known record a single edit away from it, if there is exactly one."""
    if tool is None:
        return intent
    properties = schema.model_facing(tool).get("properties", {})
    arguments = dict(intent.arguments)
    for name, value in intent.arguments.items():
        if not isinstance(value, str) or router.field_kind(name, properties.get(name, {})) != "id":
            continue
        known = record_ids(messages, name)
        if not known or value in known:
            continue
        near = [k for k in known if Levenshtein.distance(_plain(k), _plain(value)) <= 1]
        if len(near) == 1:
            arguments[name] = near[0]
    return ToolIntent(name=intent.name, arguments=arguments)


def _values(node: Any, field: str) -> Iterator[Any]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == field and isinstance(value, str | int):
                yield value
            else:
                yield from _values(value, field)
    elif isinstance(node, list):
        for item in node:
            yield from _values(item, field)


def _plain(value: str) -> str:
    return "".join(c for c in value.upper() if c.isalnum())
