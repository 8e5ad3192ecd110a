"""A profile's ``readout`` template filled from the result: ``{field}`` placeholders (dotted paths
allowed); for a list result the template words one item and a count leads."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vocero.speech.model import ToolEvidence
from vocero.speech.readout.context import ReadoutContext, TemplateError
from vocero.speech.readout.records import list_of, list_sentence
from vocero.speech.readout.spoken import spoken_value
from vocero.speech.readout.words import label_of, sentence

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")


def templated(
    template: str, record: Mapping[str, Any], call: ToolEvidence, ctx: ReadoutContext
) -> str:
    items = list_of(record)
    if items is None:
        return sentence(fill(template, [record, call.arguments], ctx))
    key, rows = items
    if not rows:
        return f"You have no {label_of(key)}."
    said = [fill(template, [row, record, call.arguments], ctx) for row in rows]
    return list_sentence(key, said, ctx)


def fill(template: str, scopes: list[Mapping[str, Any]], ctx: ReadoutContext) -> str:
    def value(match: re.Match[str]) -> str:
        path = match.group(1)
        for scope in scopes:
            found = _lookup(scope, path)
            if found is not None:
                record = scope if isinstance(scope, Mapping) else {}
                return spoken_value(path.rsplit(".", 1)[-1], found, record, ctx, match.start() == 0)
        raise TemplateError(path)

    filled = _PLACEHOLDER.sub(value, template)
    # "on {date}" with a relative day: "tomorrow, December 3", never "on tomorrow".
    return _ON_RELATIVE.sub(r"\1", filled)


_ON_RELATIVE = re.compile(r"\bon ((?:today|tomorrow|yesterday)\b)", re.IGNORECASE)


def _lookup(scope: Mapping[str, Any], path: str) -> Any:
    current: Any = scope
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current
