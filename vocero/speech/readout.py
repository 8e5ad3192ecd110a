"""Read-outs: a tool result said the way a person would say it (issue 11, SPEC §5 ``readout``).

With the profile's ``readout`` template, ``{field}`` placeholders (dotted paths allowed) take
the result's fields; for a list result the template words one item and a count leads ("You have
two appointments: a boiler inspection on Thursday, December 3 at 10:00 AM, and ..."). Without a
template a generic read-out is built that never speaks internal fields (versions, raw timezone
names, operation ids, identifiers the caller did not use). Dates are relative where that helps
("tomorrow, December 2", in the caller's timezone at the ``now`` given); a time of a record kept
in another timezone names its city. A failure is said in words the caller can act on ("I
couldn't find order B52 on your account — could you check the number?").

Read-outs are application wording built from the result itself, so they are ``tool_fact``
units (``outcome`` for a write's receipt, ``promise`` for a recorded follow-up, ``fallback`` for
a failure) without a second grounding check.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vocero.contracts.builtins import FOLLOWUPS_TOOL as FOLLOWUPS
from vocero.contracts.domain import ToolSpec
from vocero.speech.forms import count_word, spoken_date, spoken_time
from vocero.speech.model import ToolEvidence, UnitKind

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_MOMENT = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)(?::[0-5]\d)?$")
_ZONE_NAME = re.compile(r"^[A-Z][A-Za-z]+/[A-Za-z_\-/]+$")
_ERROR_CODE = re.compile(r"^\s*([a-z][a-z0-9_]+)\b")
INTERNAL_KEYS = frozenset({
    "version", "expected_version", "timezone", "tz", "time_zone", "tenant", "tenant_id",
    "operation_id", "subject_ref", "principal", "etag", "hash", "id", "uuid", "duplicate",
    "receipt", "summary", "state",
})  # fmt: skip
NAME_KEYS = ("service", "name", "title", "product", "item", "description", "type")
LABELS = {"eta": "expected delivery", "due_at": "due", "new_date": "new date"}
NO_ANSWER = {
    "input_timeout": "I didn't get an answer to my question in time, so I stopped there.",
    "input_not_completed": "I didn't hear back that the page was finished, so I stopped there.",
}
"""A server's question that got no answer in time (the caller's, or the server's word that its
page was done): the call ended without doing anything."""
WRITE_FAILURES = {
    "stale_version": "That changed in the meantime, so I didn't make the change. "
    "Shall I check it again?",
    "already_cancelled": "That appointment was already cancelled.",
    "caller_limit": "You already have as many call-backs waiting as we can book, so no more "
    "can be booked until one of them is done. Nothing was booked.",
    "session_limit": "No more follow-ups can be booked in this call. Nothing was booked.",
}


class TemplateError(KeyError):
    """A placeholder of the template has no value in the result."""


@dataclass(frozen=True, slots=True)
class ReadoutContext:
    now: datetime
    """Aware; relative dates are said against it in the caller's timezone."""
    timezone: str = "UTC"
    locale: str = "en-US"
    caller_words: str = ""
    """What the caller said this session, to know which identifiers they used."""
    word_budget: int = 60

    @property
    def zone(self) -> ZoneInfo:
        return _zone(self.timezone)

    @property
    def today(self) -> date:
        return self.now.astimezone(self.zone).date()


@dataclass(frozen=True, slots=True)
class Readout:
    text: str
    kind: UnitKind


def read_out(spec: ToolSpec | None, call: ToolEvidence, ctx: ReadoutContext) -> Readout:
    """How ``call``'s result is said."""
    if not call.ok:
        return Readout(failure(call, spec, ctx), "fallback")
    result = dict(call.result or {})
    if call.went_to(FOLLOWUPS):
        return _followup(spec, call, ctx)
    writes = spec is not None and spec.action_class != "read"
    record = call.answer
    kind: UnitKind = "outcome" if writes else "tool_fact"
    template = spec.readout if spec is not None else ""
    if template:
        try:
            return Readout(_templated(template, record, call, ctx), kind)
        except TemplateError:
            pass
    if writes and isinstance(result.get("summary"), str) and result["summary"].strip():
        return Readout(result["summary"].strip(), kind)
    return Readout(_generic(call, record, ctx), kind)


# ------------------------------------------------------------------------------ templates


def _templated(
    template: str, record: Mapping[str, Any], call: ToolEvidence, ctx: ReadoutContext
) -> str:
    items = _list_of(record)
    if items is None:
        return _sentence(_fill(template, [record, call.arguments], ctx))
    key, rows = items
    if not rows:
        return f"You have no {_label(key)}."
    said = [_fill(template, [row, record, call.arguments], ctx) for row in rows]
    return _list_sentence(key, said, ctx)


def _fill(template: str, scopes: list[Mapping[str, Any]], ctx: ReadoutContext) -> str:
    def value(match: re.Match[str]) -> str:
        path = match.group(1)
        for scope in scopes:
            found = _lookup(scope, path)
            if found is not None:
                record = scope if isinstance(scope, Mapping) else {}
                return _spoken(path.rsplit(".", 1)[-1], found, record, ctx, match.start() == 0)
        raise TemplateError(path)

    return _PLACEHOLDER.sub(value, template)


def _lookup(scope: Mapping[str, Any], path: str) -> Any:
    current: Any = scope
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _list_of(record: Mapping[str, Any]) -> tuple[str, list[Mapping[str, Any]]] | None:
    for key, value in record.items():
        if isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
            return key, value
    return None


def _list_sentence(key: str, said: list[str], ctx: ReadoutContext) -> str:
    label = _label(key) if len(said) != 1 else _singular(_label(key))
    head = f"You have {count_word(len(said), locale=ctx.locale)} {label}"
    budget = max(ctx.word_budget - len(head.split()) - 4, 8)
    kept: list[str] = []
    for item in said:
        if kept and sum(len(x.split()) for x in [*kept, item]) > budget:
            break
        kept.append(item)
    rest = len(said) - len(kept)
    if rest:
        kept.append(f"{count_word(rest, locale=ctx.locale)} more")
    return f"{head}: {_join(kept)}."


# ------------------------------------------------------------------------------ generic


def _generic(call: ToolEvidence, record: Mapping[str, Any], ctx: ReadoutContext) -> str:
    items = _list_of(record)
    if items is not None:
        key, rows = items
        if not rows:
            return f"You have no {_label(key)}."
        return _list_sentence(key, [_describe(row, ctx) for row in rows], ctx)
    noun = _noun(call.tool)
    named = _used_identifier(call, ctx)
    head = f"{noun.capitalize()} {named}" if named else "Here is what I found"
    fields = [
        f"{_label(k)} {_spoken(k, v, record, ctx, False)}"
        for k, v in record.items()
        if _speakable(k, v, ctx) and str(v) != named
    ]
    if not fields:
        return f"{head}." if named else "That is done."
    return f"{head}: {', '.join(fields)}."


def _describe(row: Mapping[str, Any], ctx: ReadoutContext) -> str:
    name = next((str(row[k]) for k in NAME_KEYS if isinstance(row.get(k), str)), "")
    parts = [f"{_article(name)} {_mid_sentence(name)}"] if name else []
    day = next((v for k, v in row.items() if isinstance(v, str) and _ISO_DATE.match(v)), None)
    hour = next((v for k, v in row.items() if isinstance(v, str) and _HHMM.match(v)), None)
    if day:
        parts.append(f"on {_spoken('date', day, row, ctx, False)}")
    if hour:
        parts.append(f"at {_spoken('time', hour, row, ctx, False)}")
    if not parts:
        parts = [
            f"{_label(k)} {_spoken(k, v, row, ctx, False)}"
            for k, v in row.items()
            if _speakable(k, v, ctx)
        ]
    return " ".join(parts) if name or day or hour else ", ".join(parts)


def _speakable(key: str, value: Any, ctx: ReadoutContext) -> bool:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return False
    lowered = key.casefold()
    if lowered in INTERNAL_KEYS or lowered.endswith(("_version", "_hash", "_token", "_ref")):
        return False
    if lowered.endswith("_id") and str(value).casefold() not in ctx.caller_words.casefold():
        return False
    text = str(value)
    return not (_ZONE_NAME.match(text) or text.startswith(("http://", "https://")))


def _used_identifier(call: ToolEvidence, ctx: ReadoutContext) -> str:
    """The identifier the caller named for this call (e.g. the order number), if any."""
    words = ctx.caller_words.casefold()
    for key, value in call.arguments.items():
        if not isinstance(value, str) or not value or not (key.endswith("_id") or key == "id"):
            continue
        if value.casefold() in words or not words:
            return value
    return ""


# ------------------------------------------------------------------------------ values


def _spoken(
    key: str, value: Any, record: Mapping[str, Any], ctx: ReadoutContext, at_start: bool
) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return count_word(len(value), locale=ctx.locale)
    if not isinstance(value, str):
        return str(value)
    if _ISO_DATE.match(value):
        try:
            return spoken_date(date.fromisoformat(value), locale=ctx.locale, today=ctx.today)
        except ValueError:
            return value
    if _ISO_MOMENT.match(value):
        return _moment(value, ctx)
    clock = _HHMM.match(value)
    if clock:
        said = spoken_time(time(int(clock[1]), int(clock[2])), locale=ctx.locale)
        return said + _elsewhere(record, ctx)
    return value if at_start else _mid_sentence(value)


def _moment(value: str, ctx: ReadoutContext) -> str:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone(ctx.zone)
    day = spoken_date(moment.date(), locale=ctx.locale, today=ctx.today)
    return f"{day} at {spoken_time(moment.time(), locale=ctx.locale)}"


def _elsewhere(record: Mapping[str, Any], ctx: ReadoutContext) -> str:
    """" Madrid time" when the record's timezone is not the caller's; never the raw name."""
    zone = record.get("timezone") or record.get("tz")
    if not isinstance(zone, str) or not zone or zone == ctx.timezone:
        return ""
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return ""
    city = zone.rsplit("/", 1)[-1].replace("_", " ")
    return f" {city} time"


# ------------------------------------------------------------------------------ failures


def failure(call: ToolEvidence, spec: ToolSpec | None, ctx: ReadoutContext) -> str:
    """Why a call did not give an answer, in words the caller can act on."""
    reason = _error_code(call)
    writes = spec is not None and spec.action_class != "read"
    if call.status == "unknown":
        if writes:
            return "Sorry, I could not confirm whether that went through. Please check again later."
        return "I couldn't get an answer just now. Please try again in a moment."
    if reason in NO_ANSWER:
        return NO_ANSWER[reason] + (" Nothing was changed." if writes else "")
    if writes and reason in WRITE_FAILURES:
        return WRITE_FAILURES[reason]
    named = _used_identifier(call, ctx)
    if named and (reason == "not_found" or (not writes and reason in ("refused", ""))):
        noun = _noun(call.tool)
        return (
            f"I couldn't find {noun} {named} on your account — could you check the "
            f"{'number' if any(c.isdigit() for c in named) else 'name'}?"
        )
    if reason == "not_found":
        return f"I couldn't find that {_noun(call.tool)} on your account."
    return "Sorry, I could not complete that."


def _error_code(call: ToolEvidence) -> str:
    error = (call.result or {}).get("error")
    if isinstance(error, str):
        found = _ERROR_CODE.match(error)
        if found and found[1] not in ("refused", "error"):
            return found[1]
    return call.reason_code or (error if isinstance(error, str) else "")


# ------------------------------------------------------------------------------ follow-ups


def _followup(spec: ToolSpec | None, call: ToolEvidence, ctx: ReadoutContext) -> Readout:
    """A recorded follow-up is a promise backed by its record (what the store answered: the
    write's receipt); an unrecorded one never is."""
    result = dict(call.answer)
    if not result.get("followup_id") or result.get("recorded") is False:
        return Readout("I haven't booked a call back yet.", "fallback")
    due = result.get("due_at")
    when = _moment(due, ctx) if isinstance(due, str) else "later"
    if result.get("channel") == "task":
        return Readout(f"I've passed that on to the team, due {when}.", "promise")
    if result.get("duplicate"):
        return Readout(f"You already have a call back booked for {when}.", "promise")
    if spec is not None and spec.readout:
        try:
            return Readout(_sentence(_fill(spec.readout, [result, call.arguments], ctx)), "promise")
        except TemplateError:
            pass
    return Readout(f"I've booked a call back for {when}.", "promise")


# ------------------------------------------------------------------------------ words


def _noun(tool: str) -> str:
    domain = tool.split(".", 1)[0].replace("_", " ")
    return _singular(domain)


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _label(key: str) -> str:
    return LABELS.get(key, key.replace("_", " ").replace(".", " ").strip())


def _article(name: str) -> str:
    return "an" if name[:1].casefold() in "aeiou" else "a"


def _mid_sentence(value: str) -> str:
    """"Boiler inspection" reads "boiler inspection" inside a sentence; names stay as they are
    ("Acme Store", "A123")."""
    words = value.split()
    if (
        words
        and words[0][:1].isupper()
        and words[0][1:].islower()
        and all(w.islower() for w in words[1:])
        and not any(c.isdigit() for c in value)
    ):
        return value[:1].lower() + value[1:]
    return value


def _join(parts: list[str]) -> str:
    if len(parts) <= 2:
        return " and ".join(parts) if len(parts) == 2 else "".join(parts)
    return ", ".join(parts[:-1]) + ", and " + parts[-1]


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")
