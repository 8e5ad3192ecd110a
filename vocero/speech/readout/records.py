"""The generic read-out, when the profile has no template: a record in sentences (the status
leads, then dates and times, then the other fields, within the word budget) or a list, each item
in a few words; which fields are said at all."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vocero.contracts.english import singular
from vocero.speech.forms import (
    count_word,
    neutralise,
)
from vocero.speech.model import ToolEvidence
from vocero.speech.readout.clauses import clause_of, is_amount, with_subject
from vocero.speech.readout.context import ReadoutContext
from vocero.speech.readout.spoken import ISO_MOMENT, LINK, ZONE_NAME, spoken_value
from vocero.speech.readout.whens import item_when, when_clause, whens_of
from vocero.speech.readout.words import (
    FREE_TEXT_WORDS,
    STATUS_WORDS,
    article,
    copula,
    internal,
    is_identifier,
    join,
    key_words,
    label_of,
    message_key,
    mid_sentence,
    names_it,
    names_person,
    noun_of,
    sentence,
    upper_first,
)

_TITLED = re.compile(r"^(?:Dr|Mr|Mrs|Ms|Mx|Prof)\.?\s+[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?$")
"""A person named with a title ("Dr. Okafor", "Ms Ada Byrne"), whatever the field is called: an
item of a list says whom it is with."""
_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|instructions?|prompt|system|assistant|pretend|jailbreak"
    r"|you are now|you must|tell the caller|say that)\b",
    re.IGNORECASE,
)


def list_of(record: Mapping[str, Any]) -> tuple[str, list[Mapping[str, Any]]] | None:
    """The record's list of items, when it is a list result (``{"appointments": [...]}``): a
    list of records, or an empty list in a result that holds little else (a count, a page). An
    empty list among a record's own fields (a stay's ``extras: []``) is one field of it."""
    for key, value in record.items():
        if isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
            scalars = [v for k, v in record.items() if k != key and not isinstance(v, list | dict)]
            if value or len(scalars) <= 2:
                return key, value
    return None


def list_sentence(key: str, said: list[str], ctx: ReadoutContext) -> str:
    label = label_of(key) if len(said) != 1 else singular(label_of(key))
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
    return f"{head}: {join(kept)}."


def generic(
    call: ToolEvidence, record: Mapping[str, Any], ctx: ReadoutContext, writes: bool = False
) -> str:
    """A read-out in sentences from the result's own fields, when the profile has no template:
    "Parcel B52 is packed. It is expected on Friday, December 4." The status leads, then dates
    and times, then the other fields, each in words; it stops before the word budget."""
    items = list_of(record)
    if items is not None and not _status(_fields(record)):
        key, rows = items
        if not rows:
            return f"You have no {label_of(key)}."
        return list_sentence(key, _items(key, rows, ctx), ctx)
    noun = noun_of(call.tool)
    named = _as_recorded(used_identifier(call, ctx, record), record)
    subject = f"{noun} {named}" if named else f"your {noun}"
    fields = _fields(record)
    merged = dict(fields)
    status = _status(fields)
    spoken = [(k, v) for k, v in fields if _speakable(k, v, ctx, named)]
    whens = whens_of(spoken, merged, ctx)
    clauses = [when_clause(w, ctx) for w in whens if not w.meta]
    clauses += [
        c
        for k, v in sorted(spoken, key=_rank)
        if (c := _what_it_is(k, v, noun) or clause_of(k, v, merged, ctx))
    ]
    clauses += [when_clause(w, ctx) for w in whens if w.meta]
    if status:
        head = f"{upper_first(subject)} {copula(status)} {status}."
    elif clauses:
        first = next((c for c in clauses if c.startswith(("It ", "Its "))), clauses[0])
        head = with_subject(first, subject)
        clauses = [c for c in clauses if c is not first]
    else:
        note = _only_message(fields)
        if note:
            return f'{upper_first(subject)}\'s note reads: "{sentence(note)}"'
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


def _as_recorded(named: str, record: Mapping[str, Any]) -> str:
    """The caller's identifier as the record spells it ("5521Q" said, "5521-Q" on record)."""
    for key, value in record.items():
        if isinstance(value, str) and is_identifier(key) and _compact(value) == _compact(named):
            return value
    return named


def _what_it_is(key: str, value: Any, noun: str) -> str:
    """A field named as the record itself (``part`` of a tool about parts) says what the record
    is: "It is a camping stove.", not "Its kit is camping stove."."""
    if not isinstance(value, str) or " ".join(key_words(key)) != noun:
        return ""
    text = neutralise(value)
    if not text or len(text.split()) > FREE_TEXT_WORDS:
        return ""
    thing = mid_sentence(text, common=True)
    return f"It is {article(thing)} {thing}."


def _rank(field: tuple[str, Any]) -> int:
    """What a record is before who it is for, before the rest (a stable sort keeps the
    record's order within each)."""
    key, value = field
    if names_it(key) and isinstance(value, str):
        return 0
    return 1 if names_person(key) else 2


def _fields(record: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The record's fields, and those of a record nested in it (a receipt's ``visit``) after
    them, one level deep: a key the outer record has is not taken twice."""
    top = [(k, v) for k, v in record.items() if not isinstance(v, Mapping) or is_amount(v)]
    seen = {k for k, _ in top}
    for key, value in record.items():
        if not isinstance(value, Mapping) or is_amount(value) or internal(key):
            continue
        for inner, item in value.items():
            if inner not in seen and (not isinstance(item, Mapping) or is_amount(item)):
                top.append((inner, item))
                seen.add(inner)
    return top


def _status(fields: list[tuple[str, Any]]) -> str:
    """The record's status ("packed", "ready for pickup"), said as words, or ""."""
    for key, value in fields:
        words = key_words(key)
        if not words or words[-1] not in STATUS_WORDS or not isinstance(value, str):
            continue
        text = neutralise(value.replace("_", " ").replace("-", " "))
        if 0 < len(text.split()) <= 4 and not ISO_MOMENT.match(value):
            return text.lower() if text.isupper() or len(text.split()) == 1 else mid_sentence(text)
    return ""


def _speakable(key: str, value: Any, ctx: ReadoutContext, named: str = "") -> bool:
    """Whether a field is said at all: never internal keys (versions, tenants, hashes, tokens,
    links, raw timezone names), never an identifier the caller did not use, never the status
    (it leads) nor a message (see :func:`_only_message`), never free text over
    ``FREE_TEXT_WORDS`` words: a server's prose is data, not wording to read to the caller."""
    if value is None or value == "" or internal(key) or message_key(key):
        return False
    words = key_words(key)
    if words and words[-1] in STATUS_WORDS:
        return False
    if isinstance(value, Mapping):
        return is_amount(value)
    if isinstance(value, list):
        return True
    if not isinstance(value, str | int | float):
        return False
    text = str(value)
    if is_identifier(key):  # the one the subject names is not said again ("5521Q" is "5521-Q")
        return _compact(text) != _compact(named) and _said_by_caller(text, ctx)
    if isinstance(value, str) and len(value.split()) > FREE_TEXT_WORDS:
        return False
    return not (ZONE_NAME.match(text) or LINK.match(text))


def _only_message(fields: list[tuple[str, Any]]) -> str:
    """A server's message ("message", "detail", "summary", "note") is read only when it is all
    the result says, quoted as its note (data, never an instruction to follow), and only when it
    is short and reads nothing like an instruction to an assistant (a backstop: the quoting and
    the cap are the rule); otherwise it is not read."""
    for key, value in fields:
        if message_key(key) and not internal(key) and isinstance(value, str):
            text = neutralise(value)
            if 0 < len(text.split()) <= FREE_TEXT_WORDS and not _INSTRUCTION.search(text):
                return text
    return ""


def _items(key: str, rows: list[Mapping[str, Any]], ctx: ReadoutContext) -> list[str]:
    """Each item of a list in a few words, by the same rules as one record: "a dental check for
    Biscuit on Thursday, December 3 at 10 AM". A status every item shares is not repeated."""
    noun = singular(label_of(key))
    statuses = [_status(_fields(row)) for row in rows]
    shared = len(set(statuses)) == 1
    what_key = _distinguishing(rows)
    return [
        _describe(row, noun, "" if shared else status, ctx, what_key)
        for row, status in zip(rows, statuses, strict=True)
    ]


_WORD_VALUE = re.compile(r"^[A-Za-z][A-Za-z '_-]*$")
"""A value in words ("wheel_truing", "Tune-up"), not a time, a date, a number or a code."""


def _distinguishing(rows: list[Mapping[str, Any]]) -> str:
    """The field that tells a list's items apart when none names them (``repair`` of workshop
    slots that differ only in it and their times): the first short field in words, not an
    identifier, a status or a message, whose values are not all the same; "" when there is
    none, or when a field names the items (:func:`names_it`)."""
    if not rows or any(names_it(k) for row in rows for k in row):
        return ""
    for key in rows[0]:
        if is_identifier(key) or internal(key) or message_key(key) or names_person(key):
            continue
        if key_words(key)[-1:] and key_words(key)[-1] in STATUS_WORDS:
            continue
        said = [row.get(key) for row in rows]
        if not all(isinstance(v, str) and _WORD_VALUE.match(v) for v in said):
            continue
        if all(len(str(v).split()) <= 3 for v in said) and (len(rows) == 1 or len(set(said)) > 1):
            return key
    return ""


def _describe(
    row: Mapping[str, Any], noun: str, status: str, ctx: ReadoutContext, what_key: str = ""
) -> str:
    fields = [(k, v) for k, v in _fields(row) if _speakable(k, v, ctx)]
    what = next((neutralise(v) for k, v in fields if isinstance(v, str) and names_it(k)), "")
    who = next((neutralise(v) for k, v in fields if isinstance(v, str) and names_person(k)), "")
    titled = next((neutralise(v) for _, v in fields if isinstance(v, str) and _TITLED.match(v)), "")
    if not (what or who or titled) and isinstance(row.get(what_key), str):
        what = f"{neutralise(str(row[what_key]).replace('_', ' '))} {noun}"  # "a wheel truing slot"
    whens = whens_of(fields, dict(_fields(row)), ctx)
    thing = mid_sentence(what, common=True) if what else noun
    if status and len(status.split()) == 1:
        thing, status = f"{status} {thing}", ""
    parts = [f"{article(thing)} {thing}"]
    if who:
        parts.append(f"for {who}")
    if titled and titled != who:
        parts.append(f"with {titled}")  # "a visit with Dr. Okafor on ...": whom it is with
    if whens:
        parts.append(item_when(whens[0], ctx))
    if status:
        parts.append(f"that {copula(status)} {status}")
    if not (what or who or whens or status):
        extras = [
            f"{label_of(k)} {spoken_value(k, v, row, ctx, False)}"
            for k, v in fields
            if isinstance(v, str | int | float) and not isinstance(v, bool)
        ][:2]
        if extras:
            parts.append("with " + join(extras))
    return " ".join(parts)


def used_identifier(
    call: ToolEvidence, ctx: ReadoutContext, record: Mapping[str, Any] | None = None
) -> str:
    """The identifier the caller named for this call (the order number, a visit reference), if
    any: an identifier argument they said (or any, when their words are not known), else one
    of the record's identifiers that they said."""
    for key, value in call.arguments.items():
        if not isinstance(value, str) or not value or not is_identifier(key):
            continue
        if _said_by_caller(value, ctx) or not ctx.caller_words:
            return value
    for key, value in (record or {}).items():
        if (
            isinstance(value, str)
            and is_identifier(key)
            and not internal(key)
            and _said_by_caller(value, ctx)
        ):
            return value
    return ""


def _compact(value: str) -> str:
    return re.sub(r"[^a-z0-9]", "", value.casefold())


def _said_by_caller(value: str, ctx: ReadoutContext) -> bool:
    words = ctx.caller_words
    if not words or not value:
        return False
    if re.search(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", words, re.IGNORECASE):
        return True
    compact = re.sub(r"[^a-z0-9]", "", value.casefold())
    return len(compact) >= 3 and compact in re.sub(r"[^a-z0-9]", "", words.casefold())
