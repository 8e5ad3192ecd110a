"""A caller's correction of the proposal being confirmed, read from their words.

While a proposal is being confirmed (``LlmRequest.pending``), a turn that changes one of its
values is a correction: the same tool with the new value, which the gate makes a new revision.
A changed hour keeps the day ("no wait, make it 11"), a changed day keeps the hour ("the 14th
instead?"), for every shape a profile gives a moment (a date-time, a date and a time, free text).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any

from vocero.contracts import values
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.lexicon import consent
from vocero.contracts.ports import ToolIntent
from vocero.inference.dialogue import router, schema


def correction(
    utterance: str,
    pending: ToolIntent | None,
    tools: Sequence[ToolDefinition],
    today: dt.date,
    *,
    now: dt.datetime | None = None,
) -> ToolIntent | None:
    """The pending proposal with the values this turn changes, or ``None`` when it changes none
    ("no wait, Friday" -> the same reschedule on Friday)."""
    if pending is None:
        return None
    tool = next((t for t in tools if t.name == pending.name), None)
    if tool is None:
        return None
    found, _, _ = router.fill_arguments(tool, utterance, today, now=now)
    for part in _NEW_VALUE.finditer(utterance):  # "make that the glass crate, the rubbish ..."
        found.update(router.fill_arguments(tool, part.group("part"), today, now=now)[0])
    found.update(_moments_retimed(tool, pending.arguments, utterance, found, today))
    found.update(_when_changed(tool, pending.arguments, utterance, found))
    changed = {k: v for k, v in found.items() if pending.arguments.get(k) != v}
    properties = schema.model_facing(tool).get("properties", {})
    if consent.classify(utterance) == "confirm":  # "Yes, go ahead" confirms a "decline"
        changed = {
            k: v
            for k, v in changed.items()
            if router.field_kind(k, properties.get(k, {})) != "enum"
            or router.enum_said_plainly(tool, k, v, utterance)
        }
    kinds = {router.field_kind(k, properties.get(k, {})) for k in changed}
    typed = {"id", "date", "time", "datetime", "when", "enum", "channel", "option", "quantity"}
    if not changed or not kinds & typed:
        return None
    return ToolIntent(name=pending.name, arguments={**pending.arguments, **changed})


_NEW_VALUE = re.compile(
    r"\b(?:make (?:it|that)|change (?:it|that) to|move (?:it|that) to|switch (?:it|that) to"
    r"|i mean|i meant)\b\s*(?P<part>[^,;.!?]+)",
    re.I,
)
"""The words a correction gives its new value in ("actually make that the glass crate, the
rubbish did get emptied"): a value said there wins over another the line also names."""


_SAID_INSTEAD = re.compile(
    r"[,;.!?-]\s*(?:no|oh|oops|um|uh|er)?[\s,]*(?:sorry|wait|hang on)?[\s,]*"
    r"(?=(?:make (?:it|that)|i mean|change (?:it|that) to|rather|actually)\b)"
    r"|[,;.!?-]\s*no[\s,]+(?:sorry|wait|hang on)\b[\s,]*"
    r"|[,;.!?-]\s*sorry[\s,]+i mean\b[\s,]*",
    re.I,
)
"""Where a caller takes back a value they just said, in the same line: "at 2 pm, no sorry,
make it 3 pm", "on Friday - I mean Saturday", "the 9th, no wait, the 10th"."""


def said_instead(utterance: str) -> str | None:
    """What a line says after the caller took back a value they had just said in it (``None``
    when the line takes nothing back); read as a correction of what came before."""
    marks = list(_SAID_INSTEAD.finditer(utterance))
    if not marks or marks[-1].start() == 0:
        return None
    return utterance[marks[-1].start() :].lstrip(",;.!?- ")


def self_corrected(
    tool: ToolDefinition,
    arguments: dict[str, Any],
    utterance: str,
    today: dt.date,
    *,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """The values of a line that takes one back ("tomorrow at 2 pm, no sorry, make it 3 pm"):
    the whole line's values, with what the words after the taking-back change in them."""
    instead = said_instead(utterance)
    if instead is None:
        return arguments
    before = ToolIntent(name=tool.name, arguments=arguments)
    changed = correction(instead, before, [tool], today, now=now)
    return dict(changed.arguments) if changed is not None else arguments


_MAKE_IT = re.compile(
    r"(?:\b(?:make (?:it|that)|change (?:it|that) to|move (?:it|that) to|instead|rather|actually"
    r"|how about)[\s,]+"
    r"|\bnot\s+(?:at\s+)?\d{1,2}(?::\d{2})?(?:\s*[ap]\.?\s?m\.?)?\s*[,;]?\s*(?:but\s+)?)"
    r"(?:at\s+)?(\d{1,2})(?::(\d{2}))?(?:\s*([ap])\.?\s?m\.?)?\b(?!\s*(?:st|nd|rd|th)\b)",
    re.I,
)
"""A changed hour said with a correction's words: "make that 11", "actually, 11", "change it
to 11 am", "not 9, 11" (the hour after "not ..." is the new one)."""


def _moments_retimed(
    tool: ToolDefinition,
    pending: dict[str, Any],
    utterance: str,
    found: dict[str, Any],
    today: dt.date,
) -> dict[str, Any]:
    """A proposal's date-time with only its clock changed ("no wait, make it 11"): the same
    day, offset and zone, at the new time. A bare hour from 1 to 7 is an afternoon hour, as
    everywhere in office talk."""
    properties = schema.model_facing(tool).get("properties", {})
    clock = values.time_in(utterance)
    said = _MAKE_IT.search(utterance)
    if said is not None:  # "not 9, 11": the hour the caller changed to, not the first one said
        hour, minute = int(said.group(1)), int(said.group(2) or 0)
        if said.group(3):
            hour = hour % 12 + (12 if said.group(3).lower() == "p" else 0)
        elif 1 <= hour <= 7:
            hour += 12
        clock = f"{hour:02d}:{minute:02d}" if hour < 24 and minute < 60 else None
    day = values.date_in(utterance, today)
    if clock is None and day is not None:
        return _moments_redated(properties, pending, found, day)
    if clock is None or day is not None:
        return {}
    out: dict[str, Any] = {}
    for name, value in pending.items():
        kind = router.field_kind(name, properties.get(name, {}))
        if kind == "time" and name not in found:
            out[name] = clock
        if kind != "datetime" or name in found or not isinstance(value, str):
            continue
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError:
            continue
        hour, minute = (int(part) for part in clock.split(":"))
        out[name] = moment.replace(hour=hour, minute=minute, second=0).isoformat()
    return out


def _moments_redated(
    properties: dict[str, Any], pending: dict[str, Any], found: dict[str, Any], day: str
) -> dict[str, Any]:
    """A proposal's date-time with only its day changed ("the 14th instead?"): the new day at
    the same clock, offset and zone."""
    out: dict[str, Any] = {}
    for name, value in pending.items():
        kind = router.field_kind(name, properties.get(name, {}))
        if kind != "datetime" or name in found or not isinstance(value, str):
            continue
        try:
            moment, new_day = dt.datetime.fromisoformat(value), dt.date.fromisoformat(day)
        except ValueError:
            continue
        moved = moment.replace(year=new_day.year, month=new_day.month, day=new_day.day)
        out[name] = moved.isoformat()
    return out


_HOUR = r"\d{1,2}(?:[:.]\d{2})?(?:\s*[ap]\.?\s?m\b\.?)?(?!\s*(?:st|nd|rd|th)\b)"
_CLOCK_IN = re.compile(
    rf"(?:\b(?:at|around|by)\s+)?\b{_HOUR}(?=\W|$)|\b(?:at\s+)?(?:noon|midday|midnight)\b", re.I
)
"""The clock part of a when-phrase ("at 9", "9:30 am", "noon")."""


def _when_changed(
    tool: ToolDefinition, pending: dict[str, Any], utterance: str, found: dict[str, Any]
) -> dict[str, Any]:
    """A free-text when-field with what this turn changes in it: a new hour keeps the day
    ("Thursday at 9", "make that 11" -> "Thursday at 11"), a new day keeps the hour ("the 14th
    instead?" -> "the 14th at 9"), a new day and hour replace both."""
    properties = schema.model_facing(tool).get("properties", {})
    hour = _MAKE_IT.search(utterance)
    out: dict[str, Any] = {}
    for name, value in pending.items():
        kind = router.field_kind(name, properties.get(name, {}))
        if kind != "when" or not isinstance(value, str):
            continue
        said = found.get(name)
        if hour is not None:  # the hour after the correction's words, on the day said if any
            day_said = _CLOCK_IN.sub("", said).strip(" ,") if isinstance(said, str) else ""
            said = f"{day_said} {_spoken_hour(hour)}".strip()
        if not isinstance(said, str):
            continue
        new_clock, old_clock = _CLOCK_IN.search(said), _CLOCK_IN.search(value)
        day = _CLOCK_IN.sub("", said).strip(" ,")
        if not day and old_clock is not None:  # only the hour changed
            merged = value[: old_clock.start()] + said.strip() + value[old_clock.end():]
        elif not day:
            merged = f"{value} {said.strip()}"
        elif new_clock is None and old_clock is not None:  # only the day changed
            merged = f"{said.strip()} {old_clock.group(0).strip()}"
        else:
            merged = said
        out[name] = re.sub(r"\s+", " ", merged).strip(" ,")
    return out


def _spoken_hour(said: re.Match[str]) -> str:
    minute = f":{said.group(2)}" if said.group(2) else ""
    meridiem = f" {said.group(3).lower()}m" if said.group(3) else ""
    return f"at {said.group(1)}{minute}{meridiem}"
