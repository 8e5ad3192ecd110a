"""Identifiers the caller's own records hold, and a heard identifier snapped to one of them.

A recogniser prints a spoken identifier in many ways: Piper's "A P T one thousand two" comes back
from Whisper as "APT-10002", "APT 1000 2", "APT-102" or "AT-T-10002". When the conversation has
already shown the caller's records (a list, a lookup), an identifier that none of them has but
exactly one of them is near is that one: the read-back then says the record that exists, and
the caller confirms or corrects it. Near means what recognisers get wrong: the letters one edit
apart ("ATT" for "APT"), the digits the same but for one zero too many or too few ("10002",
"102" for "1002"). Other digits are never changed: "A125" is not the shown "A124", and
"APT-1012" is neither "APT-1002" nor "APT-1001". An identifier near none of them, or near two,
is left as heard.

Besides the arguments of a call (:func:`snapped`), the caller's line itself is respelled
(:func:`respelled`) so that a garbled identifier the rules cannot read at all ("AT-T-10002") is
read as the record it is near.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
from rapidfuzz.distance import Levenshtein

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import LlmRequest, Message, ToolIntent
from vocero.inference.dialogue import router, schema


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
        found = nearest(value, known)
        if found is not None:
            arguments[name] = found
    return ToolIntent(name=intent.name, arguments=arguments)


_TOKEN = re.compile(r"(?<![\w-])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w-])")


def respelled(request: LlmRequest) -> LlmRequest:
    """``request`` with each identifier-like word of the caller's last line that no shown
    record has, but exactly one is near, written as that record."""
    messages = request.messages
    if not messages or messages[-1].role != "user":
        return request
    known: set[str] = set()
    for tool in request.tools:
        properties = schema.model_facing(tool).get("properties", {})
        for name, prop in properties.items():
            if router.field_kind(name, prop) == "id":
                known |= record_ids(messages, name)
    if not known:
        return request
    line = messages[-1].content
    text = _TOKEN.sub(lambda m: _respelt(m.group(0), known), line)
    if text == line:
        return request
    last = msgspec.structs.replace(messages[-1], content=text)
    return msgspec.structs.replace(request, messages=[*messages[:-1], last])


def _respelt(word: str, known: set[str]) -> str:
    """A word with letters and digits, as the record it is near; any other word as said (a
    number alone, "10" in "10 items", is never taken for an identifier here)."""
    letters, digits = _parts(word)
    if not letters or not digits:
        return word
    return nearest(word, known) or word


def nearest(value: str, known: set[str]) -> str | None:
    """The one known identifier ``value`` is near (see the module's rule), or None."""
    letters, digits = _parts(value)
    if not digits or value in known or value.upper() in known:
        return None
    near = [k for k in known if _near((letters, digits), _parts(k))]
    return near[0] if len(near) == 1 else None


def _near(heard: tuple[str, str], record: tuple[str, str]) -> bool:
    (letters, digits), (their_letters, their_digits) = heard, record
    if Levenshtein.distance(letters, their_letters) > 1:
        return False
    if digits == their_digits:
        return True
    longer, shorter = sorted((digits, their_digits), key=len, reverse=True)
    return len(longer) == len(shorter) + 1 and any(
        longer[i] == "0" and longer[:i] + longer[i + 1:] == shorter for i in range(len(longer)))


def _parts(value: str) -> tuple[str, str]:
    plain = _plain(value)
    return "".join(c for c in plain if c.isalpha()), "".join(c for c in plain if c.isdigit())


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
