"""One sentence for a field that is not a date or a time: booleans ("It is paid."), counts and
lists ("It has three items."), amounts, names, the rest ("Its quantity is two.")."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from vocero.contracts.english import join_list, singular
from vocero.speech.forms import (
    count_word,
    neutralise,
    spoken_amount,
)
from vocero.speech.readout.context import ReadoutContext
from vocero.speech.readout.spoken import HHMM, ISO_DATE, ISO_MOMENT, spoken_value
from vocero.speech.readout.words import (
    ADJECTIVE_ENDINGS,
    ADJECTIVES,
    COUNT_WORDS,
    COUNTED_NOUNS,
    MONEY_WORDS,
    PERSONAL_NAME_WORDS,
    article,
    key_words,
    label_of,
    mid_sentence,
    plural,
    upper_first,
)


def clause_of(key: str, value: Any, record: Mapping[str, Any], ctx: ReadoutContext) -> str:
    """One sentence for a field that is not a date or a time ("" for those, and for fields
    with nothing to say): booleans, counts and lists, amounts, names, the rest as "Its
    quantity is three."."""
    if isinstance(value, str) and (
        ISO_DATE.match(value) or ISO_MOMENT.match(value) or HHMM.match(value)
    ):
        return ""
    words = [w for w in key_words(key) if w != "is"] or ["value"]
    if isinstance(value, bool):
        return _yes_no(words, value)
    if isinstance(value, list):
        values = _plain_values(key, value, record, ctx)
        if values:  # "Its open times are 9:30 AM, 10 AM, and 2 PM."
            if len(value) == 1:
                return f"Its {singular(label_of(key))} is {values}."
            return f"Its {label_of(key)} are {values}."
        return f"It has {_counted(len(value), label_of(key), ctx)}."
    amount = _amount(key, value, record, ctx)
    if amount:
        return f"Its {label_of(key)} is {amount}."
    if isinstance(value, int) and words[-1] == "count" and len(words) > 1:
        return f"It has {_counted(value, label_of('_'.join(words[:-1])), ctx)}."
    if isinstance(value, int) and words[0] in ("num", "number") and len(words) > 1:
        counted = words[2:] if words[1] == "of" else words[1:]
        if counted:
            return f"It has {_counted(value, label_of('_'.join(counted)), ctx)}."
    if isinstance(value, int) and words[-1] in COUNTED_NOUNS:
        return f"It has {_counted(value, label_of(key), ctx)}."
    if isinstance(value, int) and words[-1] in COUNT_WORDS:
        return f"Its {label_of(key)} is {_number(value, ctx)}."
    text = neutralise(str(value))
    if not isinstance(value, str):
        return f"Its {label_of(key)} is {text}."
    if words[-1] == "name" and len(words) > 1 and words[0] not in PERSONAL_NAME_WORDS:
        return f"The {label_of('_'.join(words[:-1]))} is {text}."
    if words[-1] in ("kind", "type", "category"):
        return f"It is {article(text)} {mid_sentence(text, common=True)}."
    return f"Its {label_of(key)} is {mid_sentence(text)}."


def _yes_no(words: list[str], value: bool) -> str:
    """ "It is paid." / "It is not paid."; "It has insurance." / "It has no insurance.";
    "It requires a signature." / "It does not require ..."; "You can cancel it."; a setting
    that is none of these: "Auto renew is on."; a noun: "It includes breakfast."."""
    head, rest = words[0], " ".join(label_of(w) for w in words[1:])
    if head == "has" and rest:
        return f"It has {rest}." if value else f"It has no {rest}."
    if head == "can" and rest:
        if words[1] == "be":
            return f"It can{'' if value else 'not'} be {' '.join(words[2:])}."
        return f"You can{'' if value else 'not'} {rest} it."
    if rest and head.endswith("s") and not head.endswith("ss") and head not in ("is", "was"):
        return f"It {head} {rest}." if value else f"It does not {head[:-1]} {rest}."
    if not rest and (head in ADJECTIVES or head.endswith(ADJECTIVE_ENDINGS)):
        return f"It is {'' if value else 'not '}{label_of(head)}."
    if not rest:
        return (
            f"It includes {label_of(head)}." if value else f"It does not include {label_of(head)}."
        )
    if words[-1].endswith("ed"):
        subject = upper_first(" ".join(label_of(w) for w in words[:-1]))
        return f"{subject} is {'' if value else 'not '}{words[-1]}."
    return f"{upper_first(label_of('_'.join(words)))} is {'on' if value else 'off'}."


def with_subject(clause: str, subject: str) -> str:
    """The first clause names the record when no status leads: "It starts on ..." -> "Visit
    VX-2041 starts on ...", "Its total is ..." -> "Your order's total is ..."."""
    if clause.startswith("It "):
        return upper_first(subject) + clause[2:]
    if clause.startswith("Its "):
        return f"{upper_first(subject)}'s{clause[3:]}"
    return f"I found {subject}. {clause}"


def is_amount(value: Mapping[str, Any]) -> bool:
    return isinstance(value.get("amount"), int | float | str) and isinstance(
        value.get("currency"), str
    )


def _amount(key: str, value: Any, record: Mapping[str, Any], ctx: ReadoutContext) -> str:
    """ "25 US dollars" for ``{"amount": 25, "currency": "USD"}`` or a money field beside the
    record's ``currency``; "" when it is not money."""
    if isinstance(value, Mapping) and is_amount(value):
        number, currency = value["amount"], value["currency"]
    elif (
        key_words(key)[-1:]
        and key_words(key)[-1] in MONEY_WORDS
        and isinstance(record.get("currency"), str)
    ):
        number, currency = value, record["currency"]
    else:
        return ""
    try:
        return spoken_amount(Decimal(str(number)), str(currency), locale=ctx.locale)
    except (ArithmeticError, ValueError):
        return ""


PLAIN_LIST_SAID = 6
"""A list of plain values (times, dates, short words) is said value by value up to this many;
a longer one says its first ones and how many more."""


def _plain_values(
    key: str, values: list[Any], record: Mapping[str, Any], ctx: ReadoutContext
) -> str:
    """The values of a list of plain values, each as it is spoken ("9:30 AM", "Tuesday,
    December 15", "gas"), joined as an English list; "" for a list of records, an empty list
    or values too long to say one by one."""
    if not values or not all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in values
    ):
        return ""
    if any(len(str(v).split()) > 3 for v in values):
        return ""
    said = [spoken_value(key, v, record, ctx, at_start=False) for v in values[:PLAIN_LIST_SAID]]
    rest = len(values) - len(said)
    if rest:
        said.append(f"{count_word(rest, locale=ctx.locale)} more")
    return join_list(said)


def _counted(count: int, label: str, ctx: ReadoutContext) -> str:
    """ "three items", "one item", "no items"."""
    noun = singular(label) if count == 1 else plural(label)
    return f"{count_word(count, locale=ctx.locale)} {noun}"


def _number(value: int, ctx: ReadoutContext) -> str:
    return (
        "zero"
        if value == 0 and ctx.locale.startswith("en")
        else count_word(value, locale=ctx.locale)
    )
