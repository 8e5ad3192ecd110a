"""Validation against pinned schemas: arguments before anything leaves the process, results
before anything reaches the model.

Validators are compiled once per pinned definition (``jsonschema``, with format checks and an
empty ``$ref`` registry so a schema can never make the gateway fetch anything).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from jsonschema import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry

from vocero.contracts.errors import ToolInvalidResultError
from vocero.contracts.ports import ToolResult
from vocero.mcp_gateway.errors import InvalidToolArgumentsError
from vocero.mcp_gateway.model import RemoteResult, RemoteTool
from vocero.mcp_gateway.pinning import ToolPin
from vocero.mcp_gateway.sanitize import scrub, wrap_untrusted
from vocero.mcp_gateway.settings import GatewaySettings

_MAX_FIELDS = 10


def schema_problem(tool: RemoteTool, settings: GatewaySettings) -> str | None:
    """Why a listed definition cannot be pinned, or ``None``: a malicious schema is refused."""
    for which, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
        if schema is None:
            continue
        if len(msgspec.json.encode(schema)) > settings.max_schema_bytes:
            return f"{which}_schema_too_large"
        if _depth(schema) > settings.max_schema_depth:
            return f"{which}_schema_too_deep"
        if any(not ref.startswith("#") for ref in _refs(schema)):
            return f"{which}_schema_remote_ref"
        try:
            validator_for(schema).check_schema(schema)
        except SchemaError:
            return f"{which}_schema_invalid"
    return None


def _depth(value: Any, level: int = 0) -> int:
    if level > 256:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _refs(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                found.append(ref)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


class Validators:
    """Compiled validators per pinned definition, and the two checks that use them."""

    def __init__(self, settings: GatewaySettings) -> None:
        self._settings = settings
        self._compiled: dict[tuple[str, str], Validator] = {}

    def check_arguments(self, pin: ToolPin, arguments: dict[str, Any]) -> None:
        """Raise :class:`InvalidToolArgumentsError` (paths and keywords only) unless valid."""
        if len(msgspec.json.encode(arguments)) > self._settings.max_argument_bytes:
            raise InvalidToolArgumentsError(["$:too_large"])
        schema = pin.input_schema
        fields = [
            _field(e.absolute_path, e.validator)
            for e in self._get(pin, "in").iter_errors(arguments)
        ]
        if self._settings.strict_arguments:
            fields += [f"{name}:not_declared" for name in _undeclared(schema, arguments)]
        if fields:
            raise InvalidToolArgumentsError(sorted(set(fields))[:_MAX_FIELDS])

    def check_result(self, pin: ToolPin, raw: RemoteResult, *, tool: str) -> ToolResult:
        """A result fit for the model, or :class:`ToolInvalidResultError` (nothing of it passes)."""
        if _size(raw) > self._settings.max_result_bytes:
            raise ToolInvalidResultError("result_too_large", possibly_executed=True)
        if raw.is_error:
            content: dict[str, Any] = {"error": "\n".join(raw.texts)}
        else:
            if pin.output_schema is not None:
                if not isinstance(raw.structured, dict):
                    raise ToolInvalidResultError(
                        "structured_content_missing", possibly_executed=True
                    )
                if next(self._get(pin, "out").iter_errors(raw.structured), None) is not None:
                    raise ToolInvalidResultError("output_schema_violation", possibly_executed=True)
            content = _content(raw)
        scrubbed = scrub(content)
        flags = scrubbed.flags | ({"blocks_dropped"} if raw.dropped_blocks else frozenset())
        return ToolResult(
            content=scrubbed.value,
            is_error=raw.is_error,
            text=wrap_untrusted(tool, scrubbed.value, flags),
        )

    def _get(self, pin: ToolPin, which: str) -> Validator:
        key = (pin.definition_hash, which)
        validator = self._compiled.get(key)
        if validator is None:
            schema = pin.input_schema if which == "in" else (pin.output_schema or {})
            cls = validator_for(schema)
            # Formats are checked on what Vocero sends; a result only has to have the right shape.
            formats = cls.FORMAT_CHECKER if which == "in" else None
            validator = cls(schema, registry=Registry(), format_checker=formats)
            self._compiled[key] = validator
        return validator


def _field(path: Any, keyword: Any) -> str:
    return ("/".join(str(p) for p in path) or "$") + f":{keyword}"


def _undeclared(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    properties = schema.get("properties")
    if not isinstance(properties, dict) or "additionalProperties" in schema:
        return []
    if "patternProperties" in schema:
        return []
    return [name for name in arguments if name not in properties]


def _size(raw: RemoteResult) -> int:
    size = sum(len(text.encode()) for text in raw.texts)
    if raw.structured is not None:
        size += len(msgspec.json.encode(raw.structured))
    return size


def _content(raw: RemoteResult) -> dict[str, Any]:
    if isinstance(raw.structured, dict):
        return raw.structured
    if raw.structured is not None:
        return {"value": raw.structured}
    if len(raw.texts) == 1 and raw.texts[0].lstrip().startswith("{"):
        try:
            parsed = json.loads(raw.texts[0])
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"text": "\n".join(raw.texts)}
