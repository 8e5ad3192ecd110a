"""The one question the agent asks for one missing field, in words a caller expects.

The same wording whoever asks (the open task, a schema violation): a field's kind decides the
question (:func:`vocero.inference.dialogue.router.field_kind`), and an identifier is asked for
by the thing it names, never by its raw field name: ``rx_code`` of ``prescriptions.track`` is "Which
prescription is it? Please tell me the prescription code.", ``visit_ref`` "Which visit is it?
Please tell me the visit reference."
"""

from __future__ import annotations

import re
from typing import Any

from vocero.contracts.builtins import FOLLOWUPS_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.english import ask_for, join_list, name_words
from vocero.inference.dialogue import router, schema

_BY_KIND = {
    "date": "What day would you like?",
    "time": "What time would suit you?",
    "datetime": "What day and time would suit you?",
    "when": "When should we call you back?",
    "reason": "What is it about?",
    "channel": "Should we call you, or is it something for our team to do?",
}
_PLACES = {"pickup": "Where should we pick you up?", "pick_up": "Where should we pick you up?",
           "collection": "Where should we collect you?",
           "dropoff": "Where should we drop you off?", "drop_off": "Where should we drop you off?"}
"""A free-text field named for where someone is met (a time field of such a name is asked as
a time: its kind decides first)."""
_BY_NAME = {"why": "What is the reason?", "purpose": "What is it for?",
            "note": "What should the note say?", "notes": "What should the note say?"}
_ID_SUFFIXES = {"_id": "number", "_ref": "reference", "_reference": "reference",
                "_code": "code", "_number": "number", "_no": "number"}  # fmt: skip


def ask(tool: ToolDefinition, name: str, *, day: str = "") -> str:
    """The question for ``name``, a field of ``tool`` the caller has not given; ``day``, the
    day the caller already said for a date-time ("on Thursday", "tomorrow"), is not asked
    again."""
    prop = _property(tool, name)
    kind = router.field_kind(name, prop)
    if kind == "datetime" and day:
        return f"What time {day} would suit you?"
    if kind == "quantity" and router.length_unit(name, prop):
        return "How long would you like it for?"
    counted = _how_many(tool, name, prop) if kind == "quantity" else None
    if counted:
        return counted
    if kind == "id":
        noun, what = id_words(tool, name)
        return f"Which {noun} is it? Please tell me the {noun} {what}."
    if kind == "enum" and isinstance(prop.get("enum"), list) and 2 <= len(prop["enum"]) <= 3:
        choice = join_list((str(v).replace("_", " ") for v in prop["enum"]), "or")
        if choice:
            return f"Would you like {choice}?"
    if kind == "enum" and isinstance(prop.get("enum"), list) and 4 <= len(prop["enum"]) <= 6:
        choice = join_list((str(v).replace("_", " ") for v in prop["enum"]), "or")
        if choice:
            return f"Which {_label(name)}: {choice}?"
    if kind == "option" and isinstance(prop.get(schema.OPTIONS_KEY), list):
        options = [str(v) for v in prop[schema.OPTIONS_KEY]]
        return f"Which {_label(name)}: {', '.join(options[:-1])} or {options[-1]}?"
    if kind == "when" and tool.builtin != FOLLOWUPS_TOOL:
        return ask_for(name)  # "When would you like it?": a call-back's question is its own
    if kind == "text" and name.lower() in _PLACES:
        return _PLACES[name.lower()]
    if name.lower() in _BY_NAME:
        return _BY_NAME[name.lower()]  # "why" reads as a reason, and is asked as one
    if kind in _BY_KIND:
        return _BY_KIND[kind]
    return ask_for(name)


_COUNTED_IN = re.compile(r"\bhow many ([a-z]+)", re.IGNORECASE)
_COUNTS = frozenset(("count", "quantity", "qty"))
_PLURALS = frozenset(("people", "children", "men", "women"))


def _how_many(tool: ToolDefinition, name: str, prop: dict[str, Any]) -> str | None:
    """A count is asked "how many": of what the profile says it counts ("count how many
    pieces" -> "How many pieces?"), else of what the field's name counts (``passengers``,
    ``number_of_bags``); a bare ``count`` is "How many would you like?". ``None`` for a number
    that counts nothing (a meter ``reading``, an ``amount``): it is asked by its name."""
    for text in (str(prop.get("description") or ""), tool.description):
        counted = _COUNTED_IN.search(text)
        noun = counted.group(1).lower() if counted else ""
        if noun.endswith("s") or noun in _PLURALS:
            return f"How many {noun}?"
    words = [w for w in name_words(name).lower().split() if w not in ("of", "the", "number")]
    if words and set(words) <= _COUNTS:
        return "How many would you like?"
    counted_words = [w for w in words if w not in _COUNTS]
    last = counted_words[-1] if counted_words else ""
    if (last.endswith("s") and not last.endswith("ss")) or last in _PLURALS:
        return f"How many {' '.join(counted_words)}?"
    return None


def id_words(tool: ToolDefinition, name: str) -> tuple[str, str]:
    """What an identifier names and what it is called: ``("prescription", "code")``."""
    lowered = name.lower()
    what = "number"
    for suffix, word in _ID_SUFFIXES.items():
        if lowered.endswith(suffix):
            lowered, what = lowered.removesuffix(suffix), word
            break
    noun = lowered.replace("_", " ").strip()
    if len(noun) <= 3 or noun == "id":
        # "mem": the word its own description spells it with ("The potter's membership code");
        # "rx", "": the tool's own domain says it
        own = str(_property(tool, name).get("description") or "")
        spelled = re.search(rf"\b{re.escape(noun)}[a-z]*\b", own.lower()) if noun else None
        domain = router.tool_concepts(tool)[:-1]
        noun = spelled.group(0) if spelled else " ".join(domain) or noun or "reference"
    return noun, what


def _property(tool: ToolDefinition, name: str) -> dict[str, Any]:
    found = schema.model_facing(tool).get("properties", {}).get(name, {})
    return found if isinstance(found, dict) else {}


def _label(name: str) -> str:
    return name_words(name)
