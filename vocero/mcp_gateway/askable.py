"""What of a server's question may be put to a caller, and whether an answer fits (docs/mcp.md
"Questions from a server").

A question's schema is cut to the elicitation subset a caller can answer by voice: flat objects
of primitives, descriptive text scrubbed, secret fields dropped (or the question refused when one
is required). A link must be https (http only on loopback), carry no credentials and be of sane
length. An answer is validated against the cut schema before it is sent. Pure functions: the
routing and the audit of a question live in :mod:`vocero.mcp_gateway.questions`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator

from vocero.contracts.ports import InputRequest
from vocero.mcp_gateway.errors import (
    INPUT_SCHEMA_UNSUPPORTED,
    INPUT_SECRET_REQUESTED,
    INPUT_URL_REJECTED,
)
from vocero.mcp_gateway.sanitize import scrub, secret_field

MAX_MESSAGE_CHARS = 500
_MAX_URL_CHARS = 2048
_PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
_STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_KEPT_KEYS = frozenset(
    {
        "type",
        "title",
        "description",
        "enum",
        "enumNames",
        "oneOf",
        "anyOf",
        "items",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "format",
        "default",
        "const",
    }
)
_TEXT_KEYS = ("title", "description")
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


class Refusal(Exception):
    """A question the gateway will not put to the caller; the message is the reason code."""


def restrict_schema(schema: dict[str, Any], *, max_fields: int) -> dict[str, Any]:
    """The requested schema cut to what a caller may answer by voice.

    Flat objects of primitives only (the elicitation subset); descriptive text scrubbed; an
    optional secret field dropped, a required one refuses the whole question.
    """
    properties = schema.get("properties")
    if schema.get("type", "object") != "object" or not isinstance(properties, dict):
        raise Refusal(INPUT_SCHEMA_UNSUPPORTED)
    required = [name for name in schema.get("required") or [] if name in properties]
    kept: dict[str, Any] = {}
    for name, prop in properties.items():
        if not isinstance(name, str) or not isinstance(prop, dict):
            raise Refusal(INPUT_SCHEMA_UNSUPPORTED)
        if secret_field(name, prop):
            if name in required:
                raise Refusal(INPUT_SECRET_REQUESTED)
            continue
        kept[name] = _primitive(prop)
    if not kept or len(kept) > max_fields:
        raise Refusal(INPUT_SCHEMA_UNSUPPORTED)
    return {
        "type": "object",
        "properties": kept,
        "required": [name for name in required if name in kept],
        "additionalProperties": False,
    }


def with_defaults(request: InputRequest, content: dict[str, Any]) -> dict[str, Any]:
    """The answer with each omitted field that has a ``default`` set to it (SEP-1034): what a
    caller accepts without mentioning a field is its default, so a read-back should say it."""
    properties: dict[str, Any] = request.requested_schema.get("properties") or {}
    filled = {
        name: prop["default"]
        for name, prop in properties.items()
        if isinstance(prop, dict) and "default" in prop and name not in content
    }
    return {**filled, **content}


def answer_problems(
    request: InputRequest,
    content: dict[str, Any],
    validators: dict[str, Draft202012Validator] | None = None,
) -> list[str]:
    """What is wrong with ``content`` against the question's schema: JSON paths and keywords,
    never values. Empty: the answer may be sent. The lead's side can call this to ask again.
    ``validators`` keeps the compiled schema by question id (one call's questions)."""
    cache = validators if validators is not None else {}
    validator = cache.get(request.id)
    if validator is None:
        validator = Draft202012Validator(
            request.requested_schema, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        cache[request.id] = validator
    return sorted(
        f"{'/'.join(str(p) for p in error.absolute_path) or '$'}:{error.validator}"
        for error in validator.iter_errors(content)
    )


def _primitive(prop: dict[str, Any]) -> dict[str, Any]:
    kind = prop.get("type")
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, dict) or not (items.get("enum") or items.get("anyOf")):
            raise Refusal(INPUT_SCHEMA_UNSUPPORTED)
    elif kind not in _PRIMITIVES:
        raise Refusal(INPUT_SCHEMA_UNSUPPORTED)
    if kind == "string" and "format" in prop and prop["format"] not in _STRING_FORMATS:
        raise Refusal(INPUT_SCHEMA_UNSUPPORTED)
    kept = {key: value for key, value in prop.items() if key in _KEPT_KEYS}
    for key in _TEXT_KEYS:
        if isinstance(kept.get(key), str):
            kept[key] = scrub(kept[key][:MAX_MESSAGE_CHARS]).value
    return kept


def checked_url(url: str) -> str:
    """An https link (http only on loopback), no credentials in it, of sane length."""
    if len(url) > _MAX_URL_CHARS:
        raise Refusal(INPUT_URL_REJECTED)
    try:
        parts = urlsplit(url)
    except ValueError:
        raise Refusal(INPUT_URL_REJECTED) from None
    host = (parts.hostname or "").lower()
    if parts.username or parts.password or not host:
        raise Refusal(INPUT_URL_REJECTED)
    if parts.scheme != "https" and not (parts.scheme == "http" and host in _LOOPBACK):
        raise Refusal(INPUT_URL_REJECTED)
    return url
