r"""JSON schemas that constrain model output, built from the profile's tool definitions.

A grammar-constrained small model fills a string until the grammar stops it; without an upper
bound it runs away. Every string therefore gets a ``maxLength``, every array a ``maxItems``, and
objects admit no undeclared property. Regular expressions (``pattern``) and ``format`` are left out
of the grammar: llama-cpp-python's converter mistranslates common ones (``\d{4}``) into a grammar
llama.cpp rejects, and a rejected grammar crashes the process. The tool's own schema, patterns
included, still validates the arguments afterwards (:func:`violations`).
"""

from __future__ import annotations

import copy
import re
from typing import Any

import msgspec

from vocero.contracts.domain import ToolDefinition
from vocero.inference.dialogue.things import WHEN_KEY, when_defined

MAX_STRING = 80
MAX_ITEMS = 8
PLATFORM_FIELDS = frozenset(
    {
        "timezone", "time_zone", "tz", "expected_version", "version", "tenant", "tenant_id",
        "subject", "subject_ref", "principal", "scopes", "caller",
    }
)  # fmt: skip
"""Filled by the platform from the session (caller's timezone, observed object version, the
principal), never by the model: they are left out of what the model sees and must produce."""


OPTIONS_KEY = "x-vocero-options"
"""Where :func:`model_facing` puts the values a bare string field's description names ("a store
(the Maple Street or Riverside counter)"): the caller picks one by saying it; never sent."""
IDENTIFIER_KEY = "x-vocero-identifier"
"""Set by :func:`model_facing` on a bare string field its tool's line calls a number, code or
reference ("card is the patron's library card number"): an identifier; never sent."""
_ID_SAID = re.compile(
    r"^\s*(?:is|are|means|:)\s+(?:the|a|an|their|your|its)\s+(?:[\w'-]+\s+){0,4}?"
    r"(?:number|code|reference|id|identifier)\b",
    re.IGNORECASE,
)
_DATETIME_SAID = re.compile(
    r"\brfc\s*3339\b|\bdate[\s-]?time\b|\biso\s*8601\s+(?:date[\s-]?time|timestamp|moment)",
    re.IGNORECASE,
)
_DATE_SAID = re.compile(
    r"\byyyy-mm-dd\b|\biso\s*8601\s+date\b|\b(?:is|as)\s+(?:the|a)\s+(?:calendar\s+)?date\b",
    re.IGNORECASE,
)
"""A bare field its line calls a date ("visit_day is the date as YYYY-MM-DD")."""
_CLAUSES = re.compile(r"[.;,:](?:\s+|$)")
_SENTENCES = re.compile(r"[.;](?:\s+|$)")
_NAMED = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")


def model_facing(tool: ToolDefinition) -> dict[str, Any]:
    """The tool's input schema without the fields the platform fills, and with what the tool's
    description says of a bare string field made explicit: one a clause of it calls an RFC 3339
    date-time gets ``format: date-time``, one it calls a date (YYYY-MM-DD) ``format: date``;
    one a clause names values for (proper names) gets them under :data:`OPTIONS_KEY`. The
    schema's own ``format``, ``pattern`` or ``enum`` wins."""
    schema = copy.deepcopy(tool.input_schema or {"type": "object", "properties": {}})
    properties: dict[str, Any] = schema.get("properties", {})
    for name in PLATFORM_FIELDS & properties.keys():
        del properties[name]
    if "required" in schema:
        schema["required"] = [r for r in schema["required"] if r not in PLATFORM_FIELDS]
    free = [n for n, p in properties.items() if isinstance(p, dict) and _free_text(n, p)]
    for name, prop in properties.items():
        if isinstance(prop, dict):
            others = [n for n in properties if n != name]
            _described(name, prop, tool.description, others, sole=free == [name])
    return schema


def _described(
    name: str, prop: dict[str, Any], description: str, others: list[str], *, sole: bool = False
) -> None:
    """``prop`` with the kind its own or its tool's description gives it (see
    :func:`model_facing`)."""
    if prop.get("type", "string") != "string" or {"format", "pattern", "enum"} & prop.keys():
        return
    own = str(prop.get("description") or "")
    word = _named(name)
    clauses = [c for c in _CLAUSES.split(description or "") if word.search(c)]
    if _DATETIME_SAID.search(own) or _DATETIME_SAID.search(_said_of(name, description, others)):
        prop["format"] = "date-time"
        return
    if _DATE_SAID.search(own) or _DATE_SAID.search(_said_of(name, description, others)):
        prop["format"] = "date"
        return
    if _ID_SAID.search(_said_of(name, description, others)):
        prop[IDENTIFIER_KEY] = True
        return
    options = listed(name, own, description, sole=sole)
    for clause in [own, *clauses]:
        for match in _NAMED.finditer(clause.strip()):
            if not any(match.group(1).lower() in o.lower() for o in options):
                options.append(match.group(1))
    if len(options) >= 2:
        prop[OPTIONS_KEY] = options


_LISTED = re.compile(r"\(([^()]{3,160})\)")
_ITEMS = re.compile(r"\s*,\s*(?:or\s+|and\s+)?|\s+(?:or|and)\s+", re.IGNORECASE)
_STATE_QUESTION = re.compile(r"\s*(?:whether|if|returns|tells|says)\b", re.I)
_OPEN_LIST = re.compile(r"\s*(?:e\.?g\.?|for example|for instance|such as|like|including)\b", re.I)
_VALUE_KINDS = frozenset(
    ("date", "weekday", "day", "time", "number", "date and time", "day of the week", "week",
     "month", "year", "hour", "clock time", "weekday name")
)  # fmt: skip
"""What a parenthesised list may name instead of values: the shapes a value takes."""
_ARTICLE = re.compile(r"^(?:an?|the|one)\s+", re.IGNORECASE)
_NOT_FREE = re.compile(
    r"(?:^|_)(?:id|ref|reference|number|no|code|when|reason|topic|subject|channel)$|(?:date|time|_at)$"
)


def listed(name: str, own: str, description: str, *, sole: bool = False) -> list[str]:
    """The values a parenthesised list names for field ``name`` ("Add an extra (child seat, GPS,
    snow chains or an additional driver)", "store is a desk (Airport, Central Station or
    Harbour)"): the list in the field's own description, or in a sentence of the tool's that
    names the field before it; or any list of the tool's line when the field is the tool's only
    free-text one (``sole``: the other fields are identifiers, dates, times or typed values,
    which a list of words cannot be). Each value as written, without its article; ``[]`` when no
    list of two or more short values is there."""
    for text, needs_name in ((own, False), *((s, True) for s in _SENTENCES.split(description))):
        for found in _LISTED.finditer(text or ""):
            before = text[: found.start()]
            if needs_name and not sole and not _named(name).search(before):
                continue
            if _OPEN_LIST.match(found.group(1)):
                continue  # "(for example a child seat)": the caller may name anything
            items = _split_list(found.group(1))
            if items:  # "(the North Gate or Lakeside shed)": the field's noun closes the list
                items[-1] = re.sub(rf"\s+{re.escape(name)}s?$", "", items[-1], flags=re.I)
            if items and all(i[:1].isupper() for i in items):
                # "(the Maple Street or Riverside pharmacy counter)": names, then their noun
                items[-1] = re.sub(r"(?:\s+[a-z][\w-]*)+$", "", items[-1])
            if items and all(i.lower() in _VALUE_KINDS for i in items):
                continue  # "when is the day it was due (a date or a weekday)": shapes, not values
            if len(items) >= 2 and all(0 < len(i.split()) <= 4 for i in items):
                return items
    for text in (own, *(s for s in _SENTENCES.split(description) if _named(name).search(s))):
        if _STATE_QUESTION.match(text or ""):
            continue  # "Whether today's sailing is running or disrupted": the answer's values
        label = r"[\s_]+".join(re.escape(w) for w in name.split("_"))
        said = re.search(
            rf"\b{label}\s*(?:is|can be|must be|:)\s+"
            r"(?:one of\s+|either\s+)?(?:the\s+\w+\s*:\s*)?(?P<list>[^.;:()]+?\s+or\s+[^.;:,()]+)",
            text or "",
            re.IGNORECASE,
        )
        if said is None:
            continue
        items = _split_list(said.group("list"))
        if len(items) >= 2 and all(0 < len(i.split()) <= 3 for i in items):
            return items
    return []


def _split_list(text: str) -> list[str]:
    """ "child seat, GPS or an additional driver" -> its values, each without its article."""
    items = (_ARTICLE.sub("", i.strip(" .")) for i in _ITEMS.split(text))
    return [i for i in items if i]


def _free_text(name: str, prop: dict[str, Any]) -> bool:
    """Whether a field reads as free text: a bare string whose name is none of an identifier's,
    a date's, a time's or a reason's."""
    bare = (
        prop.get("type", "string") == "string" and not {"format", "pattern", "enum"} & prop.keys()
    )
    return bare and not _NOT_FREE.search(name.lower())


def _named(name: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(name.replace('_', ' '))}\b|\b{re.escape(name)}\b", re.I)


def _said_of(name: str, description: str, others: list[str]) -> str:
    """What a description's sentence says of field ``name``: from where it names the field to
    the sentence's end or another field's name ("starts is when the potter arrives, as an RFC
    3339 date-time with its UTC offset")."""
    said: list[str] = []
    for sentence in _SENTENCES.split(description or ""):
        found = _named(name).search(sentence)
        if found is None:
            continue
        rest = sentence[found.end() :]
        ends = [m.start() for other in others if (m := _named(other).search(rest))]
        said.append(rest[: min(ends, default=len(rest))])
    return " ".join(said)


def bounded(schema: dict[str, Any], max_string: int = MAX_STRING) -> dict[str, Any]:
    """A copy of ``schema`` with a length bound on every string and array."""
    out = copy.deepcopy(schema)
    _bound(out, max_string)
    return out


def _bound(node: Any, max_string: int) -> None:
    if isinstance(node, list):
        for item in node:
            _bound(item, max_string)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    node.pop("pattern", None)
    node.pop("format", None)
    node.pop(OPTIONS_KEY, None)
    node.pop(IDENTIFIER_KEY, None)
    node.pop(WHEN_KEY, None)
    if kind == "string" and not {"enum", "const", "maxLength"} & node.keys():
        node["maxLength"] = max_string
    if kind == "array":
        node.setdefault("maxItems", MAX_ITEMS)
    if kind == "object" or "properties" in node:
        node.setdefault("additionalProperties", False)
    for key in ("properties", "$defs", "definitions"):
        for child in node.get(key, {}).values():
            _bound(child, max_string)
    for key in ("items", "anyOf", "oneOf", "allOf"):
        if key in node:
            _bound(node[key], max_string)


def arguments_schema(tool: ToolDefinition, fixed: dict[str, Any]) -> dict[str, Any]:
    """The tool's input schema with the values already known pinned as constants."""
    schema = bounded(model_facing(tool))
    properties: dict[str, Any] = schema.setdefault("properties", {})
    for name, value in fixed.items():
        if name in properties:
            properties[name] = {"const": value}
    schema["required"] = sorted(
        set(schema.get("required", [])) | (fixed.keys() & properties.keys())
    )
    return schema


def violations(tool: ToolDefinition, arguments: dict[str, Any]) -> list[str]:
    """Where ``arguments`` break the tool's own input schema (patterns and formats included)."""
    import jsonschema

    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    validator = jsonschema.Draft202012Validator(
        _without_options(model_facing(tool)), format_checker=checker
    )
    return [
        ".".join(str(p) for p in e.absolute_path) or e.message
        for e in validator.iter_errors(arguments)
    ]


def _without_options(schema: dict[str, Any]) -> dict[str, Any]:
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop(OPTIONS_KEY, None)
            prop.pop(IDENTIFIER_KEY, None)
            prop.pop(WHEN_KEY, None)
    return schema


def choice_schema(field: str, values: list[str]) -> dict[str, Any]:
    """``{"<field>": one of values}``: the shape of a classification."""
    return {
        "type": "object",
        "properties": {field: {"type": "string", "enum": values}},
        "required": [field],
        "additionalProperties": False,
    }


def tool_call_schema(tools: list[ToolDefinition]) -> dict[str, Any]:
    """``{"name": ..., "parameters": {...}}`` for any one of ``tools`` (Llama 3.1 tool format)."""
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "name": {"const": tool.name},
                    "parameters": bounded(model_facing(tool)),
                },
                "required": ["name", "parameters"],
                "additionalProperties": False,
            }
            for tool in tools
        ]
    }


def shared_values(tools: list[ToolDefinition]) -> list[ToolDefinition]:
    """The tools with a bare string field given the values another tool's field of the same
    name lists (``show`` of a "what's on" lookup takes the shows the booking tool's ``show``
    enum names: "Is Blithe Spirit on next Wednesday?"), under :data:`OPTIONS_KEY`; tools
    without such a field are returned as they are."""
    listed: dict[str, list[str]] = {}
    timed: set[str] = set()
    for tool in tools:
        for name, prop in (tool.input_schema or {}).get("properties", {}).items():
            values = prop.get("enum") if isinstance(prop, dict) else None
            if values and all(isinstance(v, str) for v in values):
                listed.setdefault(name, list(values))
            if when_defined(tool.description, name):
                timed.add(name)  # "performance is which one (like 'Saturday matinee' ...)"
    if not listed and not timed:
        return tools
    out: list[ToolDefinition] = []
    for tool in tools:
        properties = (tool.input_schema or {}).get("properties", {})
        bare = [
            n for n, p in properties.items()
            if (n in listed or n in timed) and isinstance(p, dict)
            and p.get("type", "string") == "string"
            and not {"enum", "format", "pattern", OPTIONS_KEY, WHEN_KEY} & p.keys()
        ]  # fmt: skip
        if not bare:
            out.append(tool)
            continue
        schema = copy.deepcopy(tool.input_schema)
        for name in bare:
            if name in listed:
                schema["properties"][name][OPTIONS_KEY] = listed[name]
            else:
                schema["properties"][name][WHEN_KEY] = True
        out.append(msgspec.structs.replace(tool, input_schema=schema))
    return out
