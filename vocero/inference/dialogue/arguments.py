"""Arguments from what the caller said: each field of a tool filled from the utterance by the
kind its JSON Schema (and, for a bare string, its name and description) gives it.

Split from :mod:`.router` (which ranks the tools and re-exports these functions): dates and
times through the one reader (:mod:`vocero.contracts.values`), identifiers by their pattern or
the shape their description shows, enums by their values or the everyday words for yes and no,
counts in a unit, options, channels, the thing a free-text field says, and the reason told with
a call-back request. Pure: the same tool and line always give the same arguments.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from vocero.contracts import values
from vocero.contracts.builtins import FOLLOWUPS_TOOL
from vocero.contracts.domain import ToolDefinition
from vocero.inference.dialogue import schema
from vocero.inference.dialogue.quantities import length_unit as length_unit
from vocero.inference.dialogue.quantities import quantity
from vocero.inference.dialogue.things import (
    called_by_name,
    handled_thing,
    only_named,
    option_said,
    person_named,
    pickup_said,
    thing_named,
    when_said,
)
from vocero.inference.dialogue.things import normalise as normalise
from vocero.inference.dialogue.things import said_thing as said_thing
from vocero.inference.dialogue.things import state_thing as state_thing
from vocero.inference.dialogue.things import stem as stem

CALL_BACK_PHRASES: tuple[str, ...] = (
    "follow up", "follow-up", "followup", "call me", "call back", "callback", "call-back",
    "remind me", "get back to me", "text me", "email me", "reach out", "contact me",
    "ring me", "phone me", "give me a call", "call me back",
)  # fmt: skip
"""What callers say to ask for a call-back (the router's ``followup`` action)."""


def fill_arguments_one(tool: ToolDefinition, name: str, utterance: str) -> Any:
    """The value of ``tool``'s enum field ``name`` the caller said, by its words (or ``None``)."""
    prop = schema.model_facing(tool).get("properties", {}).get(name, {})
    choices = [v for v in prop.get("enum") or [] if isinstance(v, str) and len(v) >= 4]
    return _channel_or_enum(utterance, choices) if choices else None


def fill_arguments(
    tool: ToolDefinition, utterance: str, today: dt.date, *, now: dt.datetime | None = None
) -> tuple[dict[str, Any], list[str], list[str]]:
    """Values for the tool's properties found by rules; required fields not found split into
    those that must be asked for and those the model may fill.

    ``now`` is the caller's clock, aware, in the caller's zone: a ``date-time`` field's value
    carries that zone's offset. Without it, midnight of ``today`` in UTC stands in, so a moment
    is still resolved against ``today`` but written with ``+00:00``."""
    shown = schema.model_facing(tool)
    properties: dict[str, Any] = shown.get("properties", {})
    required = shown.get("required", [])
    arguments: dict[str, Any] = {}
    missing: list[str] = []
    model_fill: list[str] = []
    kinds = {name: field_kind(name, prop) for name, prop in properties.items()}
    # Identifiers first: a quantity is a number the line says that no identifier took.
    for name in sorted(properties, key=lambda n: kinds[n] == "quantity"):
        kind, prop = kinds[name], properties[name]
        value: Any
        if kind == "quantity":
            value = quantity(utterance, prop, list(arguments.values()), name)
        else:
            value = _extract(kind, name, prop, utterance, today, now=now)
        if value is None and kind == "reason" and not tool.builtin:
            value = values.requested_thing(utterance)  # "book a blood pressure check with ..."
        if value is None and kind == "reason" and not tool.builtin:
            value = reason_given(utterance)  # "call off VX-2042, Miso is feeling much better"
        if value is None and kind == "reason" and tool.builtin == FOLLOWUPS_TOOL:
            value = told_reason(utterance)  # "ring me back at four? My glaze keeps crawling."
        if value is None and kind == "text":
            value = state_thing(tool.description, name, utterance)  # "my power has been out"
        if value is None and kind == "text":
            value = said_thing(tool.description, name, utterance)  # "I left my blue scarf"
        if value is None and kind == "text":
            value = handled_thing(tool.description, name, utterance)  # "for an old fridge"
        if value is None and kind == "text":
            value = when_said(tool.description, name, utterance, prop)  # "Saturday matinee"
        if value is None and kind == "text":
            value = person_named(name, utterance)  # "They're under Rosie Whitworth"
        if value is None and kind == "text" and only_named(name, tool.description):
            value = thing_named(utterance)  # "replace my gas meter on Thursday"
        if value is None and kind == "text":
            value = pickup_said(name, utterance)  # "pick me up from Finglas Village Library"
        if value is None and kind == "text":
            value = called_by_name(name, utterance)  # "the quarter to three sailing from X"
        if isinstance(value, str) and kind == "id" and not prop.get("pattern"):
            value = shaped_as_shown(value, prop.get("description", ""), tool.description)
        if value is not None:
            arguments[name] = value
    for name in properties:
        if name not in arguments and name in required:
            (model_fill if kinds[name] == "text" else missing).append(name)
    return {n: arguments[n] for n in properties if n in arguments}, missing, model_fill


_SHOWN_ID = re.compile(r"(?<![\w-])(?=[\w./-]*\d)[A-Za-z0-9]+(?:[-/.][A-Za-z0-9]+)+(?![\w-])")
"""An identifier a description shows with separators ("like 4410-K", "e.g. AB/1234")."""


def shaped_as_shown(value: str, *descriptions: str) -> str:
    """An identifier without a pattern written as the field's or tool's description shows one:
    the same characters grouped by its separators ("5521K" or "5521 K" -> "5521-K" where the
    description says "like 4410-K"); as found where no example has its shape."""
    bare = re.sub(r"[\s\-/.]", "", value)
    for example in _SHOWN_ID.findall(" ".join(descriptions)):
        groups = re.split(r"([-/.])", example)
        if _id_shape(bare) != _id_shape("".join(groups[::2])):
            continue
        out, at = "", 0
        for i, part in enumerate(groups):
            out += bare[at : at + len(part)] if i % 2 == 0 else part
            at += len(part) if i % 2 == 0 else 0
        return out
    return value


def _id_shape(text: str) -> str:
    return re.sub(r"[A-Za-z]", "A", re.sub(r"[0-9]", "9", text))


_DATETIME_SAMPLE, _DATE_SAMPLE, _TIME_SAMPLE = "2026-01-31T09:30:00+01:00", "2026-01-31", "09:30"
_ID_SUFFIXES = ("_id", "_ref", "_reference", "_number", "_no", "_code")
_PLAIN_WORDS = ("word", "Word", "WORD", "two words")


def field_kind(name: str, schema: dict[str, Any]) -> str:
    """How a property is filled: id, datetime, date, time, when, reason, enum, channel, option,
    quantity or text.

    The schema decides first: ``enum``; ``format`` (``date-time``, ``date``, ``time``); a
    ``pattern`` by what it accepts (an ISO moment, date or clock time, and not a plain word), any
    other pattern on a string is an identifier's ("^BK-[0-9]{4}$"). Without them, the name's
    conventions: ``*_at`` / ``*datetime``, ``*date``, ``*time``, ``id`` / ``*_id`` / ``*_ref`` /
    ``*_number`` / ``*_code``, and the free-text names. A pattern that no plain word satisfies
    ("^BK-[0-9]{4}$", not "^[A-Za-z ]+$") is a code's, so its field is an identifier."""
    fmt, pattern = schema.get("format", ""), schema.get("pattern", "")
    lowered = name.lower()
    if "enum" in schema:
        return "enum"
    shape = _pattern_shape(pattern)
    for kind, format_name in (("datetime", "date-time"), ("date", "date"), ("time", "time")):
        if fmt == format_name or shape == kind:
            return kind
    if schema.get("type") in ("integer", "number") and not _id_name(lowered):
        return "quantity"
    if schema.get(_OPTIONS):
        return "option"
    if lowered.endswith(("_at", "datetime")):
        return "datetime"
    if lowered.endswith("date"):
        return "date"
    if lowered.endswith("time"):
        return "time"
    if _id_name(lowered) or schema.get(_IDENTIFIER) or (
        schema.get("type", "string") == "string" and _code_pattern(pattern)
    ):
        return "id"
    if lowered in ("when", "when_text"):
        return "when"
    if lowered in ("reason", "topic", "subject", "why") or _REASON_SAID.search(
        str(schema.get("description") or "")
    ):
        return "reason"
    if lowered == "channel":
        return "channel"
    return "text"


def _id_name(lowered: str) -> bool:
    return (
        lowered == "id"
        or lowered.endswith(_ID_SUFFIXES)
        or (lowered.endswith("id") and "_" in lowered)
    )


def id_noun(lowered: str) -> str:
    """What callers call the identified thing: ``booking_ref`` -> "booking", ``id`` -> "number"."""
    noun = re.sub(r"(?:^|_)(?:id|ref|reference|number|no|code)$", "", lowered)
    if noun == lowered:
        noun = lowered.removesuffix("id")
    return noun.strip("_").split("_")[-1] or "number"


def _code_pattern(pattern: str) -> bool:
    return bool(pattern) and not any(values.pattern_accepts(pattern, w) for w in _PLAIN_WORDS)


def _pattern_shape(pattern: str) -> str | None:
    """The kind of value a pattern is for ("datetime", "date", "time"), by the samples it
    accepts; ``None`` for other patterns."""
    if not _code_pattern(pattern):
        return None
    for kind, sample in (
        ("datetime", _DATETIME_SAMPLE), ("date", _DATE_SAMPLE), ("time", _TIME_SAMPLE)
    ):  # fmt: skip
        if values.pattern_accepts(pattern, sample):
            return kind
    return None


_CHANNELS = {
    "sms": ("text me", "text message", "sms", "message me"),
    "email": ("email", "e-mail", "mail me"),
    "phone": ("call", "phone", "ring me"),
}
_CHANNEL_ALIASES = {"sms": ("sms", "text"), "email": ("email", "mail"), "phone": ("phone", "call")}
_ENUM_SYNONYMS: dict[str, tuple[str, ...]] = {
    "morning": ("before noon", "before lunch"),
    "afternoon": ("after lunch", "after noon"),
    "evening": ("tonight", "after work"),
    "in person": ("face to face", "in the office", "come in"),
    "video": ("video call", "zoom", "online"),
}
"""Common other ways to say an enum value's words; the value's own words always count."""
_ASSENT = frozenset(
    ("approve", "approved", "accept", "accepted", "agree", "agreed", "allow", "allowed",
     "authorise", "authorised", "authorize", "authorized", "proceed", "yes")
)  # fmt: skip
_DISSENT = frozenset(
    ("decline", "declined", "reject", "rejected", "refuse", "refused", "deny", "denied", "no")
)  # fmt: skip
_ASSENT_SAID = (
    "go ahead", "going ahead", "goes ahead", "proceed", "approve", "accept", "agree to",
    "happy with", "fine with", "okay with", "ok with", "sign off", "authorise", "authorize",
    "yes to",
)  # fmt: skip
_DISSENT_SAID = (
    "don't want", "do not want", "don't need", "do not need", "turn down", "turn it down",
    "turn them down", "say no", "no to", "decline", "reject", "refuse", "won't go ahead",
    "not go ahead", "not going ahead", "don't go ahead", "do not go ahead",
)  # fmt: skip
"""A yes-or-no enum value ("approve", "decline") said in everyday words: "go ahead with it",
"I don't want the new ones". An assent said after "not" says the dissent ("I don't approve")."""
_NEGATED = re.compile(r"\b(?:not|don't|never|rather than|instead of)\b")
"""Said just before an enum value, these take it back ("the afternoon, not the morning")."""


def _extract(
    kind: str,
    name: str,
    schema: dict[str, Any],
    utterance: str,
    today: dt.date,
    *,
    now: dt.datetime | None = None,
) -> Any:
    pattern = schema.get("pattern")
    if kind == "id":
        noun = id_noun(name.lower())
        found = values.identifier_in(utterance, noun, pattern)
        if found is None and pattern:
            # A pattern-checked identifier with letters ("BK-1234") is one without its noun too,
            # as said: bare digits never take the pattern's prefix (that is a question's answer).
            bare = values.bare_identifier(utterance, pattern, borrow=False)
            found = bare if bare and (not bare.isdigit() or _long_code(pattern)) else None
        return found
    if kind == "datetime":
        return values.moment_in(utterance, now or dt.datetime.combine(today, dt.time(), dt.UTC))
    if kind == "date":
        return values.date_in(utterance, today)
    if kind == "time":
        return values.time_in(utterance)
    if kind == "when":
        return values.when_phrase(utterance)
    if kind == "reason":
        return values.reason_phrase(utterance)
    if kind in ("channel", "enum"):
        return _channel_or_enum(utterance, schema.get("enum"))
    if kind == "option":
        return option_said(utterance, schema.get(_OPTIONS) or [])
    return None


_OPTIONS = schema.OPTIONS_KEY
_IDENTIFIER = schema.IDENTIFIER_KEY


def _long_code(pattern: str) -> bool:
    """A pattern that takes only long numbers ("^[0-9]{5}$"): digits said alone are its code,
    never a count or an hour."""
    return not any(values.pattern_accepts(pattern, n) for n in ("1", "12", "123"))


def _channel_or_enum(utterance: str, enum: list[Any] | None) -> Any:
    """The enum value the caller said, by its words ("in_person" from "in person", "afternoon"
    from "in the afternoon") or a common synonym; a value said after "not" does not count, and
    two different values said is no value (it is asked). Failing that, a contact channel said
    ("text me" is ``sms``) when the enum has it, or the channel itself without an enum."""
    text = f" {normalise(utterance)} "
    said = [v for v in enum or [] if _enum_value_said(text, str(v))]
    if said:
        return said[0] if len(said) == 1 else None
    for channel, phrases in _CHANNELS.items():
        if any(p in text for p in phrases):
            if enum is None:
                return channel
            aliases = _CHANNEL_ALIASES[channel]
            return next((v for v in enum if str(v).lower() in aliases), None)
    return None


def _enum_value_said(text: str, value: str, *, everyday: bool = True) -> bool:
    """Whether the line says ``value`` by its words, or (``everyday``) by a common other way
    to say it: a synonym, an assent's or a dissent's everyday words (:data:`_ASSENT_SAID`)."""
    words = " ".join(w for w in re.split(r"[\s_\-]+", value.lower()) if w)
    if not words:
        return False
    phrases: tuple[str, ...] = (words,)
    bare = re.sub(r"^(?:a|an|the)\s+", "", words)
    if bare != words and len(bare.split()) >= 2:
        phrases += (bare,)  # "the Christmas Carol" says "A Christmas Carol"
    if everyday:
        phrases += _ENUM_SYNONYMS.get(words, ())
        phrases += _ASSENT_SAID if words in _ASSENT else ()
        phrases += _DISSENT_SAID if words in _DISSENT else ()
    for phrase in phrases:
        if _phrase_in(text, phrase, negated=False):
            return True
    # "I don't approve": an assent taken back is the dissent
    return everyday and words in _DISSENT and any(_phrase_in(text, p) for p in _ASSENT_SAID)


def _phrase_in(text: str, phrase: str, *, negated: bool = True) -> bool:
    """Whether ``phrase`` is said in ``text`` (a plural or past tense too), taken back by a
    negation just before it (``negated``) or not (``negated=False``)."""
    spelled = r"[\s-]+".join(rf"{re.escape(w)}(?:s|es|d|ed)?" for w in phrase.split())
    for match in re.finditer(rf"(?<=\s){spelled}(?=\s)", text):
        before = " ".join(text[: match.start()].split()[-3:])
        if bool(_NEGATED.search(before)) == negated:
            return True
    return False


def enum_said_plainly(tool: ToolDefinition, name: str, value: object, utterance: str) -> bool:
    """Whether the caller said ``tool``'s enum value of field ``name`` by its own words (not a
    synonym, not an everyday assent such as "go ahead", which is also a plain yes)."""
    text = f" {normalise(utterance)} "
    return _enum_value_said(text, str(value), everyday=False)


_OPENER = re.compile(
    r"^\W*(?:hi|hello|hey|good (?:morning|afternoon|evening)|thanks|thank you|cheers|please|"
    r"sorry|this is|it'?s|my name)\b",
    re.IGNORECASE,
)
_ASKED_BACK = re.compile("|".join(rf"\b{re.escape(p)}\b" for p in CALL_BACK_PHRASES), re.IGNORECASE)


_REASON_SAID = re.compile(r"\b(?:reason|why)\b", re.IGNORECASE)
_GIVEN = re.compile(r"(?:,|;|\s-\s|\b(?:because|as|since)\b)\s*(?P<why>[^,;.?!]+)")


def reason_given(utterance: str) -> str | None:
    """The reason a request gives after it ("Please call off VX-2042, Miso is feeling much
    better", "... because we are moving house"): a clause of three words or more after a
    comma or "because", that is not a time, an identifier or politeness."""
    for found in _GIVEN.finditer(utterance):
        why = found.group("why").strip()
        when = values.when_phrase(why)
        # a time alone is no reason ("on Friday at 10"); a reason may name one ("I've a college
        # exam that morning")
        if len(why.split()) < 3 or _OPENER.match(why) or (when and len(when) * 2 > len(why)):
            continue
        if re.search(r"\d", why):
            continue
        return why
    return None


def told_reason(utterance: str) -> str | None:
    """What a call-back is about when the line says it in a sentence of its own, not after
    "about" ("Could someone ring me back at four? The glaze keeps crawling off my bowls."): the
    first statement of three words or more that neither asks for the call-back, nor says when,
    nor greets."""
    for said in re.finditer(r"([^.?!]+)([.?!]|$)", utterance):
        sentence, end = said.group(1), said.group(2)
        if end == "?" or len(sentence.split()) < 3 or _OPENER.match(sentence):
            continue
        if _ASKED_BACK.search(sentence) or values.when_phrase(sentence) is not None:
            continue
        return sentence.strip(" ,")
    return None
