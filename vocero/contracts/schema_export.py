"""JSON Schema for every wire event, one file per event type."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from vocero.contracts import events as ev


def event_schemas() -> dict[str, dict[str, Any]]:
    """``{"vocero.session.connect.v1": {...}, ...}`` for both directions."""
    schemas: dict[str, dict[str, Any]] = {}
    for direction, classes in (
        ("client", ev.CLIENT_EVENT_TYPES),
        ("server", ev.SERVER_EVENT_TYPES),
    ):
        for cls in classes:
            name = ev.event_type(cls)
            schema = msgspec.json.schema(cls)
            schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
            schema["$id"] = f"https://vocero.local/schemas/{name}.json"
            schema["x-direction"] = direction
            schemas[name] = schema
    return schemas


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
