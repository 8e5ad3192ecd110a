"""Read-outs: a tool result said the way a person would say it (issue 11, SPEC §5 ``readout``).

With the profile's ``readout`` template, ``{field}`` placeholders (dotted paths allowed) take
the result's fields; for a list result the template words one item and a count leads ("You have
two appointments: a boiler inspection on Thursday, December 3 at 10 AM, and ..."). Without a
template a generic read-out is built in sentences from the result's own fields, whatever they
are named: the status leads ("Parcel B52 is packed."), then dates and times in words ("It is
expected on Friday, December 4.", "It starts tomorrow, December 2 at 4 PM."), then the other
fields as short clauses ("It is paid.", "It has three items.", "Its quantity is two."), within
the profile's word budget. Keys are never spoken as they are written, and internal fields never
(versions, raw timezone names, operation ids, tokens, links, tenants, identifiers the caller did
not use). A server's free text is data: a message is read only when it is all the result says,
quoted, short and nothing like an instruction; any text field over ``FREE_TEXT_WORDS`` words is
not read. List items follow the same rules. Dates are relative where that helps
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
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vocero.contracts.builtins import FOLLOWUPS_TOOL as FOLLOWUPS
from vocero.contracts.domain import ToolSpec
from vocero.observability.redaction import is_sensitive
from vocero.speech.forms import (
    count_word,
    neutralise,
    relative_day,
    spoken_amount,
    spoken_date,
    spoken_time,
)
from vocero.speech.model import ToolEvidence, UnitKind

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_MOMENT = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)(?::[0-5]\d)?$")
_ZONE_NAME = re.compile(r"^[A-Z][A-Za-z]+/[A-Za-z_\-/]+$")
_ERROR_CODE = re.compile(r"^\s*([a-z][a-z0-9_]+)\b")
_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|instructions?|prompt|system|assistant|pretend|jailbreak"
    r"|you are now|you must|tell the caller|say that)\b",
    re.IGNORECASE,
)
_LINK = re.compile(r"^(?:https?|ftp|mailto|data):", re.IGNORECASE)
ID_WORDS = frozenset({"id", "ref", "reference", "code", "number", "no", "num", "uuid"})
"""The last word of an identifier's key (``order_id``, ``visitRef``, ``rx_code``)."""
INTERNAL_KEYS = frozenset({
    "version", "expected_version", "timezone", "tz", "time_zone", "tenant", "tenant_id",
    "operation_id", "subject", "subject_ref", "principal", "scopes", "caller", "etag", "hash",
    "id", "uuid", "duplicate", "receipt", "token", "url", "uri", "href", "link", "links",
    "self", "cursor", "next_cursor", "page", "page_size", "request_id", "trace_id",
    "idempotency_key", "currency", "meta",
})  # fmt: skip
"""Never said: bookkeeping of the service and of Vocero (``currency`` is said with its
amount, ``timezone`` as the city of a time kept elsewhere)."""
INTERNAL_SUFFIXES = (
    "_version", "_hash", "_token", "_url", "_uri", "_href", "_link", "_etag", "_secret", "_key",
    "_cursor", "_tenant",
)  # fmt: skip
STATUS_WORDS = frozenset({"status", "state", "progress", "stage", "phase", "outcome"})
MESSAGE_WORDS = frozenset({
    "message", "messages", "msg", "detail", "details", "summary", "note", "notes", "notice",
    "remark", "remarks", "comment", "comments", "text", "info", "explanation", "instructions",
})  # fmt: skip
FREE_TEXT_WORDS = 20
"""A string field longer than this is free text from the server: not read out."""
NAME_KEYS = ("service", "name", "title", "product", "item", "description", "type")
THING_WORDS = frozenset({"kind", "type", "service", "title", "product", "item"})
PERSONAL_NAME_WORDS = frozenset({
    "first", "last", "full", "display", "given", "family", "middle", "user", "file", "host",
    "domain",
})  # fmt: skip
LABELS = {"due_at": "due"}
ABBREVIATIONS = {
    "eta": "estimated delivery", "etd": "estimated departure", "qty": "quantity",
    "amt": "amount", "num": "number", "no": "number", "addr": "address", "desc": "description",
    "ref": "reference", "appt": "appointment", "dept": "department", "msg": "message",
    "info": "information", "tel": "phone", "pct": "percent", "est": "estimated",
    "dob": "date of birth", "rx": "prescription", "avail": "availability", "loc": "location",
}  # fmt: skip
WHEN_WORDS = frozenset({"date", "day", "time", "at", "on", "moment", "datetime", "when", "ts"})
PREPOSITIONS = ("until", "by", "from", "before", "after")
EXPECTED_WORDS = frozenset({"eta", "expected", "estimated"})
VERB_STEMS = frozenset({
    "start", "end", "open", "close", "arrive", "expire", "renew", "begin", "finish", "depart",
    "leave", "return", "ship",
})  # fmt: skip
IRREGULAR_PAST = {"begin": "began", "leave": "left", "ship": "shipped"}
ADJECTIVES = frozenset({
    "due", "ready", "available", "valid", "open", "late", "active", "free", "new", "urgent",
    "online", "live", "closed", "fragile", "final",
})  # fmt: skip
ADJECTIVE_ENDINGS = ("ed", "able", "ible", "ive", "ful", "ous", "ent", "ant", "al", "ic", "id")
PARTICIPLES = frozenset({"sent", "paid", "made", "done", "built", "held", "set", "seen"})
META_WORDS = frozenset({"created", "updated", "modified", "last", "synced", "generated"})
COUNT_WORDS = frozenset({"quantity", "qty", "count", "total"})
COUNTED_NOUNS = frozenset({
    "pieces", "units", "seats", "guests", "people", "nights", "items", "days", "rooms",
    "tickets", "bags", "boxes", "parcels", "adults", "children",
})  # fmt: skip
MONEY_WORDS = frozenset({
    "amount", "price", "total", "cost", "balance", "fee", "fees", "charge", "subtotal", "tax",
    "refund", "deposit", "due", "paid",
})  # fmt: skip
TOOL_NOISE = frozenset({
    "api", "svc", "crm", "erp", "tool", "do", "the", "rpc", "mcp", "v", "get", "find", "lookup",
    "look", "up", "list", "search", "fetch", "query", "track", "check", "show", "read", "status",
    "info", "details", "detail", "upcoming", "my", "by", "for", "of",
})  # fmt: skip
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
    return Readout(_generic(call, record, ctx, writes), kind)


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


def _generic(
    call: ToolEvidence, record: Mapping[str, Any], ctx: ReadoutContext, writes: bool = False
) -> str:
    """A read-out in sentences from the result's own fields, when the profile has no template:
    "Parcel B52 is packed. It is expected on Friday, December 4." The status leads, then dates
    and times, then the other fields, each in words; it stops before the word budget."""
    items = _list_of(record)
    if items is not None and not _status(_fields(record)):
        key, rows = items
        if not rows:
            return f"You have no {_label(key)}."
        return _list_sentence(key, _items(key, rows, ctx), ctx)
    noun = _noun(call.tool)
    named = _used_identifier(call, ctx, record)
    subject = f"{noun} {named}" if named else f"your {noun}"
    fields = _fields(record)
    merged = dict(fields)
    status = _status(fields)
    spoken = [(k, v) for k, v in fields if _speakable(k, v, ctx, named)]
    whens = _whens(spoken, merged, ctx)
    clauses = [_when_clause(w, ctx) for w in whens if not w.meta]
    clauses += [c for k, v in sorted(spoken, key=_rank) if (c := _clause(k, v, merged, ctx))]
    clauses += [_when_clause(w, ctx) for w in whens if w.meta]
    if status:
        head = f"{_upper_first(subject)} is {status}."
    elif clauses:
        first = next((c for c in clauses if c.startswith(("It ", "Its "))), clauses[0])
        head = _with_subject(first, subject)
        clauses = [c for c in clauses if c is not first]
    else:
        note = _only_message(fields)
        if note:
            return f'{_upper_first(subject)}\'s note reads: "{_sentence(note)}"'
        if writes:
            return "That is done."
        return f"I found {subject}, but there is nothing in it I can read out."
    said, words = [head], len(head.split())
    for clause in clauses:
        words += len(clause.split())
        if words > ctx.word_budget:
            break
        said.append(clause)
    return " ".join(said)


def _rank(field: tuple[str, Any]) -> int:
    """What a record is before who it is for, before the rest (a stable sort keeps the
    record's order within each)."""
    key, value = field
    if _names_it(key) and isinstance(value, str):
        return 0
    return 1 if _who(key) else 2


def _fields(record: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The record's fields, and those of a record nested in it (a receipt's ``visit``) after
    them, one level deep: a key the outer record has is not taken twice."""
    top = [(k, v) for k, v in record.items() if not isinstance(v, Mapping) or _is_amount(v)]
    seen = {k for k, _ in top}
    for key, value in record.items():
        if not isinstance(value, Mapping) or _is_amount(value) or _internal(key):
            continue
        for inner, item in value.items():
            if inner not in seen and (not isinstance(item, Mapping) or _is_amount(item)):
                top.append((inner, item))
                seen.add(inner)
    return top


def _status(fields: list[tuple[str, Any]]) -> str:
    """The record's status ("packed", "ready for pickup"), said as words, or ""."""
    for key, value in fields:
        words = _words(key)
        if not words or words[-1] not in STATUS_WORDS or not isinstance(value, str):
            continue
        text = neutralise(value.replace("_", " ").replace("-", " "))
        if 0 < len(text.split()) <= 4 and not _ISO_MOMENT.match(value):
            return text.lower() if text.isupper() or len(text.split()) == 1 else _mid_sentence(text)
    return ""


def _speakable(key: str, value: Any, ctx: ReadoutContext, named: str = "") -> bool:
    """Whether a field is said at all: never internal keys (versions, tenants, hashes, tokens,
    links, raw timezone names), never an identifier the caller did not use, never the status
    (it leads) nor a message (see :func:`_only_message`), never free text over
    ``FREE_TEXT_WORDS`` words: a server's prose is data, not wording to read to the caller."""
    if value is None or value == "" or _internal(key) or _message_key(key):
        return False
    words = _words(key)
    if words and words[-1] in STATUS_WORDS:
        return False
    if isinstance(value, Mapping):
        return _is_amount(value)
    if isinstance(value, list):
        return True
    if not isinstance(value, str | int | float):
        return False
    text = str(value)
    if _is_identifier(key):
        return text != named and _said_by_caller(text, ctx)
    if isinstance(value, str) and len(value.split()) > FREE_TEXT_WORDS:
        return False
    return not (_ZONE_NAME.match(text) or _LINK.match(text))


def _internal(key: str) -> bool:
    lowered = key.casefold()
    return (
        lowered in INTERNAL_KEYS
        or lowered.startswith("_")
        or lowered.endswith(INTERNAL_SUFFIXES)
        or is_sensitive(key)
    )


def _message_key(key: str) -> bool:
    words = _words(key)
    return bool(words) and words[-1] in MESSAGE_WORDS


def _only_message(fields: list[tuple[str, Any]]) -> str:
    """A server's message ("message", "detail", "summary", "note") is read only when it is all
    the result says, quoted as its note (data, never an instruction to follow), and only when it
    is short and reads nothing like an instruction to an assistant (a backstop: the quoting and
    the cap are the rule); otherwise it is not read."""
    for key, value in fields:
        if _message_key(key) and not _internal(key) and isinstance(value, str):
            text = neutralise(value)
            if 0 < len(text.split()) <= FREE_TEXT_WORDS and not _INSTRUCTION.search(text):
                return text
    return ""


# ------------------------------------------------------------------------------ clauses


@dataclass(frozen=True, slots=True)
class _When:
    """A date, a time, or both (a date field and its time field, or one moment)."""

    key: str
    stem: tuple[str, ...]
    day: date | None
    clock: time | None
    elsewhere: str = ""
    past: bool = False

    @property
    def meta(self) -> bool:
        """Bookkeeping ("created", "updated"): said last, if the budget allows."""
        return bool(self.stem) and self.stem[0] in META_WORDS


def _whens(
    fields: list[tuple[str, Any]], record: Mapping[str, Any], ctx: ReadoutContext
) -> list[_When]:
    days: list[tuple[str, date]] = []
    clocks: list[tuple[str, time]] = []
    found: list[_When] = []
    for key, value in fields:
        if not isinstance(value, str):
            continue
        if _ISO_DATE.match(value):
            try:
                days.append((key, date.fromisoformat(value)))
            except ValueError:
                continue
        elif _ISO_MOMENT.match(value):
            moment = _instant(value, ctx)
            if moment is not None:
                aware = moment.tzinfo is not None
                found.append(
                    _when(
                        key,
                        moment.date(),
                        moment.time(),
                        "" if aware else _elsewhere(record, ctx),
                        ctx,
                    )
                )
        elif clock := _HHMM.match(value):
            clocks.append((key, time(int(clock[1]), int(clock[2]))))
    free = list(clocks)
    for key, day in days:
        stem = _stem(key)
        pair = next((c for c in free if _stem(c[0]) == stem), None)
        if pair is None and free and (not stem or not _stem(free[0][0]) or len(days) == 1):
            pair = free[0]
        if pair is not None:
            free.remove(pair)
            if not stem:
                key = pair[0]
        found.append(
            _when(key, day, pair[1] if pair else None, _elsewhere(record, ctx) if pair else "", ctx)
        )
    found += [_when(key, None, clock, _elsewhere(record, ctx), ctx) for key, clock in free]
    return found


def _when(
    key: str, day: date | None, clock: time | None, elsewhere: str, ctx: ReadoutContext
) -> _When:
    local = ctx.now.astimezone(ctx.zone)
    if day is None:
        past = False
    elif day != local.date() or clock is None:
        past = day < local.date()
    else:
        past = clock < local.time().replace(tzinfo=None)
    return _When(key, _stem(key), day, clock, elsewhere, past)


def _instant(value: str, ctx: ReadoutContext) -> datetime | None:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.astimezone(ctx.zone) if moment.tzinfo is not None else moment


def _stem(key: str) -> tuple[str, ...]:
    """``start_time`` -> ("start",); ``day`` -> (); ``valid_until`` -> ("valid", "until")."""
    words = _words(key)
    while words and words[-1] in WHEN_WORDS:
        words = words[:-1]
    return tuple(words)


def _when_words(when: _When, ctx: ReadoutContext, *, on: bool = True) -> str:
    """ "on Friday, December 4 at 10 AM"; "tomorrow, December 2" (no "on" before a relative
    day); without ``on``, the bare value: "Friday, December 4 at 10 AM", "10 AM"."""
    parts: list[str] = []
    if when.day is not None:
        said = spoken_date(when.day, locale=ctx.locale, today=ctx.today)
        relative = relative_day(when.day, ctx.today, ctx.locale)
        parts.append(f"on {said}" if on and not relative else said)
    if when.clock is not None:
        clock = spoken_time(when.clock, locale=ctx.locale) + when.elsewhere
        parts.append(f"at {clock}" if on or parts else clock)
    return " ".join(parts)


def _when_clause(when: _When, ctx: ReadoutContext) -> str:
    """One sentence for a date or time, worded by what its key says it is: "It starts on ...",
    "It is expected on ...", "It was shipped on ...", "It is due tomorrow, ...", "It is on ...",
    else "Its pickup date is ..."."""
    stem = [w for w in when.stem if w not in ("is", "was")]
    words = _when_words(when, ctx)
    bare = _when_words(when, ctx, on=False)
    preposition = next((w for w in stem if w in PREPOSITIONS), "")
    if preposition:
        stem = stem[: stem.index(preposition)]
        words = f"{preposition} {bare}"
    head = stem[0] if stem else ""
    was = "was" if when.past else "is"
    if not stem:
        return f"It {was} {words}."
    if head in EXPECTED_WORDS:
        return f"It {was} expected {words}."
    verb = head[:-1] if head.endswith("s") and head[:-1] in VERB_STEMS else head
    if verb in VERB_STEMS and len(stem) == 1:
        return f"It {_past(verb) if when.past else verb + 's'} {words}."
    if head in ADJECTIVES and len(stem) == 1:
        return f"It {was} {head} {words}."
    if len(stem) == 1 and (head.endswith("ed") or head in PARTICIPLES):
        return f"It was {head} {words}." if when.past else f"It is {head} for {bare}."
    label = _label(when.key)
    if label.rsplit(" ", 1)[-1] in ("date", "day", "time", "moment"):
        return f"Its {label} {was} {bare}."
    return f"Its {label} {was} {words}."


def _clause(key: str, value: Any, record: Mapping[str, Any], ctx: ReadoutContext) -> str:
    """One sentence for a field that is not a date or a time ("" for those, and for fields
    with nothing to say): booleans, counts and lists, amounts, names, the rest as "Its
    quantity is three."."""
    if isinstance(value, str) and (
        _ISO_DATE.match(value) or _ISO_MOMENT.match(value) or _HHMM.match(value)
    ):
        return ""
    words = [w for w in _words(key) if w != "is"] or ["value"]
    if isinstance(value, bool):
        return _yes_no(words, value)
    if isinstance(value, list):
        return f"It has {_counted(len(value), _label(key), ctx)}."
    amount = _amount(key, value, record, ctx)
    if amount:
        return f"Its {_label(key)} is {amount}."
    if isinstance(value, int) and words[-1] == "count" and len(words) > 1:
        return f"It has {_counted(value, _label('_'.join(words[:-1])), ctx)}."
    if isinstance(value, int) and words[0] in ("num", "number") and len(words) > 1:
        counted = words[2:] if words[1] == "of" else words[1:]
        if counted:
            return f"It has {_counted(value, _label('_'.join(counted)), ctx)}."
    if isinstance(value, int) and words[-1] in COUNTED_NOUNS:
        return f"It has {_counted(value, _label(key), ctx)}."
    if isinstance(value, int) and words[-1] in COUNT_WORDS:
        return f"Its {_label(key)} is {_number(value, ctx)}."
    text = neutralise(str(value))
    if not isinstance(value, str):
        return f"Its {_label(key)} is {text}."
    if words[-1] == "name" and len(words) > 1 and words[0] not in PERSONAL_NAME_WORDS:
        return f"The {_label('_'.join(words[:-1]))} is {text}."
    if words[-1] in ("kind", "type", "category"):
        return f"It is {_article(text)} {_mid_sentence(text, common=True)}."
    return f"Its {_label(key)} is {_mid_sentence(text)}."


def _yes_no(words: list[str], value: bool) -> str:
    """ "It is paid." / "It is not paid."; "It has insurance." / "It has no insurance.";
    "It requires a signature." / "It does not require ..."; "You can cancel it."; a setting
    that is none of these: "Auto renew is on."; a noun: "It includes breakfast."."""
    head, rest = words[0], " ".join(_label(w) for w in words[1:])
    if head == "has" and rest:
        return f"It has {rest}." if value else f"It has no {rest}."
    if head == "can" and rest:
        if words[1] == "be":
            return f"It can{'' if value else 'not'} be {' '.join(words[2:])}."
        return f"You can{'' if value else 'not'} {rest} it."
    if rest and head.endswith("s") and not head.endswith("ss") and head not in ("is", "was"):
        return f"It {head} {rest}." if value else f"It does not {head[:-1]} {rest}."
    if not rest and (head in ADJECTIVES or head.endswith(ADJECTIVE_ENDINGS)):
        return f"It is {'' if value else 'not '}{_label(head)}."
    if not rest:
        return f"It includes {_label(head)}." if value else f"It does not include {_label(head)}."
    if words[-1].endswith("ed"):
        subject = _upper_first(" ".join(_label(w) for w in words[:-1]))
        return f"{subject} is {'' if value else 'not '}{words[-1]}."
    return f"{_upper_first(_label('_'.join(words)))} is {'on' if value else 'off'}."


def _with_subject(clause: str, subject: str) -> str:
    """The first clause names the record when no status leads: "It starts on ..." -> "Visit
    VX-2041 starts on ...", "Its total is ..." -> "Your order's total is ..."."""
    if clause.startswith("It "):
        return _upper_first(subject) + clause[2:]
    if clause.startswith("Its "):
        return f"{_upper_first(subject)}'s{clause[3:]}"
    return f"I found {subject}. {clause}"


def _is_amount(value: Mapping[str, Any]) -> bool:
    return isinstance(value.get("amount"), int | float | str) and isinstance(
        value.get("currency"), str
    )


def _amount(key: str, value: Any, record: Mapping[str, Any], ctx: ReadoutContext) -> str:
    """ "25 US dollars" for ``{"amount": 25, "currency": "USD"}`` or a money field beside the
    record's ``currency``; "" when it is not money."""
    if isinstance(value, Mapping) and _is_amount(value):
        number, currency = value["amount"], value["currency"]
    elif (
        _words(key)[-1:]
        and _words(key)[-1] in MONEY_WORDS
        and isinstance(record.get("currency"), str)
    ):
        number, currency = value, record["currency"]
    else:
        return ""
    try:
        return spoken_amount(Decimal(str(number)), str(currency), locale=ctx.locale)
    except (ArithmeticError, ValueError):
        return ""


def _counted(count: int, label: str, ctx: ReadoutContext) -> str:
    """ "three items", "one item", "no items"."""
    noun = _singular(label) if count == 1 else _plural(label)
    return f"{count_word(count, locale=ctx.locale)} {noun}"


def _number(value: int, ctx: ReadoutContext) -> str:
    return (
        "zero"
        if value == 0 and ctx.locale.startswith("en")
        else count_word(value, locale=ctx.locale)
    )


def _past(verb: str) -> str:
    return IRREGULAR_PAST.get(verb) or (verb + "d" if verb.endswith("e") else verb + "ed")


# ------------------------------------------------------------------------------ list items


def _items(key: str, rows: list[Mapping[str, Any]], ctx: ReadoutContext) -> list[str]:
    """Each item of a list in a few words, by the same rules as one record: "a dental check for
    Biscuit on Thursday, December 3 at 10 AM". A status every item shares is not repeated."""
    noun = _singular(_label(key))
    statuses = [_status(_fields(row)) for row in rows]
    shared = len(set(statuses)) == 1
    return [
        _describe(row, noun, "" if shared else status, ctx)
        for row, status in zip(rows, statuses, strict=True)
    ]


def _describe(row: Mapping[str, Any], noun: str, status: str, ctx: ReadoutContext) -> str:
    fields = [(k, v) for k, v in _fields(row) if _speakable(k, v, ctx)]
    what = next((neutralise(v) for k, v in fields if isinstance(v, str) and _names_it(k)), "")
    who = next((neutralise(v) for k, v in fields if isinstance(v, str) and _who(k)), "")
    whens = _whens(fields, dict(_fields(row)), ctx)
    thing = _mid_sentence(what, common=True) if what else noun
    if status and len(status.split()) == 1:
        thing, status = f"{status} {thing}", ""
    parts = [f"{_article(thing)} {thing}"]
    if who:
        parts.append(f"for {who}")
    if whens:
        parts.append(_item_when(whens[0], ctx))
    if status:
        parts.append(f"that is {status}")
    if not (what or who or whens or status):
        extras = [
            f"{_label(k)} {_spoken(k, v, row, ctx, False)}"
            for k, v in fields
            if isinstance(v, str | int | float) and not isinstance(v, bool)
        ][:2]
        if extras:
            parts.append("with " + " and ".join(extras))
    return " ".join(parts)


def _item_when(when: _When, ctx: ReadoutContext) -> str:
    words = _when_words(when, ctx)
    head = when.stem[0] if when.stem else ""
    if head in EXPECTED_WORDS:
        return f"expected {words}"
    if head in ADJECTIVES or (
        len(when.stem) == 1 and when.past and (head.endswith("ed") or head in PARTICIPLES)
    ):
        return f"{head} {words}"
    return words


def _names_it(key: str) -> bool:
    words = _words(key)
    return key in NAME_KEYS or (len(words) > 1 and words[-1] in THING_WORDS)


def _who(key: str) -> bool:
    words = _words(key)
    return len(words) > 1 and words[-1] == "name" and words[0] not in PERSONAL_NAME_WORDS


def _used_identifier(
    call: ToolEvidence, ctx: ReadoutContext, record: Mapping[str, Any] | None = None
) -> str:
    """The identifier the caller named for this call (the order number, a visit reference), if
    any: an identifier argument they said (or any, when their words are not known), else one
    of the record's identifiers that they said."""
    for key, value in call.arguments.items():
        if not isinstance(value, str) or not value or not _is_identifier(key):
            continue
        if _said_by_caller(value, ctx) or not ctx.caller_words:
            return value
    for key, value in (record or {}).items():
        if (
            isinstance(value, str)
            and _is_identifier(key)
            and not _internal(key)
            and _said_by_caller(value, ctx)
        ):
            return value
    return ""


def _is_identifier(key: str) -> bool:
    words = _words(key)
    return bool(words) and words[-1] in ID_WORDS


def _said_by_caller(value: str, ctx: ReadoutContext) -> bool:
    words = ctx.caller_words
    if not words or not value:
        return False
    if re.search(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", words, re.IGNORECASE):
        return True
    compact = re.sub(r"[^a-z0-9]", "", value.casefold())
    return len(compact) >= 3 and compact in re.sub(r"[^a-z0-9]", "", words.casefold())


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
    """ " Madrid time" when the record's timezone is not the caller's; never the raw name."""
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
    """What a tool is about, from its name: ``parcels.track`` -> "parcel", ``lookup_pet_visit``
    -> "pet visit"; never a verb or a system prefix."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", tool)
    segments = [s for s in re.split(r"\.", spaced) if s]
    for segment in segments:
        words = [
            w for w in _words(segment) if w not in TOOL_NOISE and not re.fullmatch(r"v?\d+", w)
        ]
        if words:
            return " ".join([*words[:-1], _singular(words[-1])])
    return "record"


def _singular(word: str) -> str:
    head, _, last = word.rpartition(" ")
    if last.endswith("ies") and len(last) > 4:
        last = last[:-3] + "y"
    elif last.endswith(("sses", "xes", "ches", "shes")):
        last = last[:-2]
    elif last.endswith("s") and not last.endswith(("ss", "us", "is")):
        last = last[:-1]
    return f"{head} {last}".strip()


def _plural(word: str) -> str:
    head, _, last = word.rpartition(" ")
    if last.endswith("s"):
        pass
    elif last.endswith("y") and last[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        last = last[:-1] + "ies"
    elif last.endswith(("x", "ch", "sh")):
        last += "es"
    else:
        last += "s"
    return f"{head} {last}".strip()


def _words(key: str) -> list[str]:
    """A key's words, lower case: ``starts_at`` -> ["starts", "at"], ``petName`` -> ["pet",
    "name"]."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key)
    return [w.lower() for w in re.split(r"[._\-\s]+", spaced) if w]


def _label(key: str) -> str:
    """A key said as words: underscores made spaces, common abbreviations spelled out ("eta" ->
    "estimated delivery", "qty" -> "quantity"), a trailing "at"/"on" and a leading "is" dropped
    ("starts_at" -> "start")."""
    if key in LABELS:
        return LABELS[key]
    words = _words(key)
    if len(words) > 1 and words[-1] in ("at", "on"):
        words = words[:-1]
    if len(words) > 1 and words[0] == "is":
        words = words[1:]
    if words and words[0].endswith("s") and words[0][:-1] in VERB_STEMS:
        words[0] = words[0][:-1]
    return " ".join(ABBREVIATIONS.get(w, w) for w in words)


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _article(name: str) -> str:
    return "an" if name[:1].casefold() in "aeiou" else "a"


def _mid_sentence(value: str, *, common: bool = False) -> str:
    """ "Boiler inspection" reads "boiler inspection" inside a sentence; names stay as they are
    ("Acme Store", "A123", and one capitalised word, "Biscuit", which is more likely a name,
    unless ``common``: the value of a kind or a service, "Vaccination")."""
    words = value.split()
    if (
        (len(words) > 1 or common)
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
