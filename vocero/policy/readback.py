"""Spoken read-backs and results, built only from canonical fields.

The caller hears exactly what the proposal binds to, in a form that survives being spoken: a
date with its weekday and year, a time with AM/PM and the timezone it is in, an amount with its
currency in words. ``tool.confirmation_required.v1`` carries the same values as ``fields``.
After execution the wording follows the owning service's receipt, never the model's expectation:
"your appointment is rescheduled" only on ``committed``; "I have requested…" while unknown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

from vocero.contracts import english
from vocero.contracts.lexicon.synonyms import NOUN_SYNONYMS
from vocero.contracts.spoken import spoken_date, spoken_time
from vocero.observability.redaction import is_sensitive
from vocero.policy.canonical import VERSION_KEYS, kind_of

CURRENCY_WORDS = {"EUR": "euros", "USD": "US dollars", "GBP": "pounds sterling", "JPY": "yen"}
REFUSALS = {
    "stale_version": "It was changed in the meantime.",
    "already_cancelled": "It was already cancelled.",
    "not_found": "I couldn't find it under your account.",
    "forbidden": "Your account isn't allowed to do that.",
    "caller_limit": "You already have as many call-backs waiting as we can book, so no more "
    "can be booked until one of them is done.",
    "session_limit": "No more follow-ups can be booked in this call.",
}


def action_words(tool: str) -> tuple[str, str]:
    """What a tool does, in words: ``appointments.reschedule`` or ``reschedule_appointment`` ->
    ("reschedule", "appointment"); ``crm_update_v2`` -> ("update", ""). Never the raw name:
    system prefixes and versions are dropped, and a name with no verb reads as "change"
    (:func:`vocero.contracts.english.action_words`). Read-backs use the *resolved* server tool:
    what will actually happen."""
    verb, noun = english.action_words(tool)
    return verb, NOUNS.get(noun, noun)


def past_tense(verb: str) -> str:
    return english.past_participle(verb)


def fields_of(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical values a client may display: everything but sensitive keys."""
    return {k: v for k, v in arguments.items() if not is_sensitive(k)}


@dataclass(frozen=True, slots=True)
class Readback:
    """A read-back and the spoken form of every consequential value in it, in order: a "yes"
    binds once the caller has heard all of them (docs/protocol.md "Tools and confirmations"), even
    if it cuts off the question."""

    text: str
    parts: tuple[str, ...]


QUESTION = "Shall I go ahead?"
KEYPAD_HINT = "Say yes or press 1."
"""Said after the question where the caller can answer with keys (the phone, SPEC §10)."""
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w]*)\}")


def readback(
    tool: str,
    arguments: Mapping[str, Any],
    *,
    template: str = "",
    today: date | None = None,
    keypad: bool = False,
) -> Readback:
    """What the caller is asked (``keypad``: and how to answer with a key, on the phone): the
    profile's ``readback`` wording with its ``{field}``
    placeholders filled with spoken canonical values, or a generic one built from the resolved
    tool's verb and noun (never its raw name) and every consequential field."""
    speak = _Speaker(arguments, today)
    if template:
        phrase = _PLACEHOLDER.sub(lambda m: speak.field(m.group(1)), template).strip()
    else:
        verb, noun = action_words(tool)
        target = speak.object(noun) or "this"
        target = f"the {target}" if speak.owned_by_other else target
        phrase = f"{verb} {target}{speak.details(verb).asked()}"
    phrase = phrase.rstrip(" .")
    text = f"To confirm: {phrase}. {QUESTION}"
    if keypad:  # after the question: a "yes" cutting it off still binds once values were heard
        text = f"{text} {KEYPAD_HINT}"
    said = [p for p in speak.parts if p]
    # In the order they are said: a generic read-back's details are not in the order they were
    # spoken into words (the reason before an enum's setting), and delivery looks for them so.
    said.sort(key=lambda p: text.find(p) if p in text else len(text))
    return Readback(text=text, parts=tuple(said))


class _Speaker:
    """Spoken forms of canonical values, remembering each one used (the read-back's parts)."""

    def __init__(self, arguments: Mapping[str, Any], today: date | None) -> None:
        self.arguments = arguments
        self.today = today
        self.parts: list[str] = []
        self.owned_by_other = False
        """The object is the tool's noun of another record ("the return of reservation
        SW-5523"): said with "the", not "your"."""
        self._coded: str | None = None

    def _said(self, text: str) -> str:
        self.parts.append(text)
        return text

    def field(self, name: str) -> str:
        args = self.arguments
        when = _when(args, self.today) if name == "when" else ""
        if when:  # the date and time fields together, when the arguments have them
            return self._said(when.removeprefix("to ").removeprefix("on "))
        if name not in args or is_sensitive(name):
            return "{" + name + "}" if name not in args else ""
        value = args[name]
        kind = kind_of(name, {})
        if kind == "date" or _ISO_DAY.fullmatch(str(value)):  # a bare ``first_payment`` day too
            return self._said(speak_date(str(value), self.today))
        if kind == "time":
            return self._said(speak_time(str(value)))
        if kind == "timezone":
            return self._said(f"{speak_zone(str(value))} time")
        if kind == "amount":
            return self._said(speak_amount(value, args.get("currency")))
        moment = _moment(value)
        if moment is not None:
            day = speak_date(moment.date().isoformat(), self.today)
            return self._said(f"{day} at {speak_time(f'{moment:%H:%M}')}")
        return self._said(str(value))

    def object(self, noun: str) -> str:
        """What the action is done to: the tool's noun and the first identifier's value ("booking
        BK-101"); the identifier's name in words when the tool names no noun; "" for none."""
        ids = [(k, str(v)) for k, v in self.arguments.items() if _identifier(k)]
        if ids:
            self._said(ids[0][1])
            noun = noun or english.name_words(ids[0][0])
            return " ".join([noun, *(v for _, v in ids[:1])]).strip()
        coded = next(
            (
                (k, v)
                for k, v in self.arguments.items()
                if isinstance(v, str)
                and _CODED.fullmatch(v)
                and english.name_words(k) in _RECORD_NOUNS
                and not is_sensitive(k)
            ),
            None,
        )
        if coded is None:
            return noun
        # A field named for a record, whose value is a code ("reservation": "SW-5523"), names it.
        self._coded = coded[0]
        named = f"{english.name_words(coded[0])} {self._said(coded[1])}"
        if noun and noun not in english.name_words(coded[0]):
            self.owned_by_other = True
            return f"{noun} of {named}"  # "return of reservation SW-5523"
        return named

    def details(self, verb: str) -> _Details:
        """The consequential values besides the identifier, as English: a moment, an amount
        and the labelled prepositions (:data:`LABELS`) as phrases ("to Friday at 11 AM", "for
        12 euros", "about the invoice"), every other field as a setting ("the slot" to "9B")."""
        args = self.arguments
        out = _Details()
        when = _when(args, self.today) or _instant(args, self.today)
        if verb in english.MOVING_VERBS:  # what is extended or moved goes *to* the moment
            when = re.sub(r"^(?:on|at|for) ", "to ", when)
        if when:
            out.phrases.append(self._said(when))
        skip = {k for k in args if kind_of(k, {}) in ("date", "time", "timezone") or _identifier(k)}
        skip |= {self._coded} if self._coded else set()
        skip |= set(VERSION_KEYS) | {"currency", "due_exact"}
        skip |= {k for k in args if k.endswith("_at") or _moment(args[k]) is not None}
        if _instant(args, self.today):
            skip.add("when")
        for key, value in args.items():
            if key in skip or is_sensitive(key):
                continue
            if kind_of(key, {}) == "amount":
                out.phrases.append("for " + self._said(speak_amount(value, args.get("currency"))))
            elif isinstance(value, str) and _ISO_DAY.fullmatch(value):  # a bare ``return_on`` day
                day = self._said(speak_date(value, self.today))
                out.phrases.append(f"{'to' if verb in english.MOVING_VERBS else 'on'} {day}")
            elif isinstance(value, str | int | float) and not isinstance(value, bool):
                said = self._said(english.clean_item(str(value)) or str(value))
                label = english.name_words(key)
                if key in LABELS:
                    out.phrases.append(f"{LABELS[key]} {said}")
                elif label == "when":  # a free-text moment ("Friday at 11")
                    out.phrases.append(f"{'to' if verb in english.MOVING_VERBS else 'for'} {said}")
                else:
                    out.settings.append((label, said))
        return out


@dataclass(slots=True)
class _Details:
    """A write's values besides its identifier, as parts of an English sentence."""

    phrases: list[str] = field(default_factory=list)
    """Prepositional phrases said right after the action: "to Friday, December 4 at 3 PM"."""
    settings: list[tuple[str, str]] = field(default_factory=list)
    """Other fields, (name in words, spoken value): "the slot" is set to "9B"."""

    def asked(self) -> str:
        """In a read-back: "… to Friday at 11, setting the slot to 9B and the store to Leeds"."""
        return self._said(english.join_list(f"the {k} to {v}" for k, v in self.settings),
                          "setting")

    def done(self) -> str:
        """In an outcome: "… to Friday at 11, with the slot set to 9B and the store set to
        Leeds"."""
        return self._said(english.join_list(f"the {k} set to {v}" for k, v in self.settings),
                          "with")

    def _said(self, settings: str, lead: str) -> str:
        phrases = ", ".join(p for p in (english.clean_item(p) for p in self.phrases) if p)
        tail = f", {lead} {settings}" if settings else ""
        return (" " + phrases if phrases else "") + tail


def outcome(
    tool: str,
    arguments: Mapping[str, Any],
    status: str,
    reason: str = "",
    *,
    today: date | None = None,
    receipt: Mapping[str, Any] | None = None,
) -> str:
    """What the caller hears once the owning service answered a write: "Done: your booking
    BK-101 is shifted to Friday at 11." on ``committed``, never before; with the reference the
    service's ``receipt`` gave it, when the caller has not said it (:func:`_new_reference`)."""
    verb, noun = action_words(tool)
    speak = _Speaker(arguments, today)
    target = speak.object(noun)
    details = speak.details(verb).done()
    whose = "the" if speak.owned_by_other else "your"
    yours = f"{whose} {target}" if target else "it"
    if status == "committed":
        subject = f"{whose} {target} is" if target else "that's"
        return f"Done: {subject} {past_tense(verb)}{details}.{_new_reference(receipt, arguments)}"
    if status == "rejected":
        why = REFUSALS.get(reason, "")
        return f"The request to {verb} {yours} was not accepted, so nothing changed. " \
               f"{why}".strip()
    if status == "unknown":
        return f"I have requested to {verb} {yours}, but I could not confirm that it went " \
               "through yet. I won't send it again; I'll check its status."
    return f"I have requested to {verb} {yours}; it is still being processed."


# ------------------------------------------------------------------------------ rendering


LABELS = {"reason": "about", "channel": "by"}
_CODED = re.compile(r"(?=[A-Z0-9-]*[A-Z])(?=[A-Z0-9-]*[0-9])[A-Z0-9][A-Z0-9-]{3,15}")
"""A value that is a record's code ("SW-5523", "LK30417"): upper-case letters and digits."""
_RECORD_NOUNS = frozenset(NOUN_SYNONYMS) | {
    "confirmation", "reference", "consignment", "job", "loan", "rental", "stay", "tracking",
}  # fmt: skip
"""Field names that name a record (a field so named, valued with a code, is the record)."""
NOUNS = {"followup": "call-back"}
_REFERENCE_WORDS = frozenset({"ref", "reference"})


def _identifier(key: str) -> bool:
    """An identifier's field (``order_id``, ``booking_ref``): its value names the object."""
    words = english.identifier_words(key)
    return kind_of(key, {}) == "id" or (len(words) > 1 and words[-1] in _REFERENCE_WORDS)


def _new_reference(receipt: Mapping[str, Any] | None, arguments: Mapping[str, Any]) -> str:
    """" Your firing reference is FR-301.": the first reference field (``*_ref``,
    ``*_reference``) of a write's receipt whose value the arguments did not carry, the one thing
    of the receipt the caller needs and has not heard; "" without one."""
    said = {str(v) for v in arguments.values()}
    for key, value in (receipt or {}).items():
        words = english.identifier_words(key)
        if not words or words[-1] not in _REFERENCE_WORDS or not _identifier(key):
            continue
        if isinstance(value, str) and value and value not in said and not is_sensitive(key):
            return f" Your {english.name_words(key)} is {value}."
    return ""


def _instant(arguments: Mapping[str, Any], today: date | None = None) -> str:
    """An ISO date-time (``due_at``) spoken as "for Friday, December 4, 2026 at 10 AM"."""
    for key, value in arguments.items():
        if not key.endswith("_at") and _moment(value) is None:  # a bare ``slot`` moment too
            continue
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            continue
        zone = next((str(v) for k, v in arguments.items() if kind_of(k, {}) == "timezone"), "")
        day = speak_date(moment.date().isoformat(), today)
        text = f"for {day} at {speak_time(f'{moment:%H:%M}')}"
        return text + (f", {speak_zone(zone)} time" if zone else "")
    return ""


def _moment(value: Any) -> datetime | None:
    """An ISO 8601 date-time value ("2026-12-08T14:00:00-06:00"), as its own clock says it (a
    date-time argument is made in the caller's zone)."""
    if not isinstance(value, str) or "T" not in value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _when(arguments: Mapping[str, Any], today: date | None = None) -> str:
    day_key = next((k for k in arguments if kind_of(k, {}) == "date"), None)
    time_key = next((k for k in arguments if kind_of(k, {}) == "time"), None)
    if day_key is None and time_key is None:
        return ""
    zone = next((str(v) for k, v in arguments.items() if kind_of(k, {}) == "timezone"), "")
    moved = (day_key or time_key or "").startswith("new_")
    text = ("to" if moved else "on") if day_key is not None else ("to" if moved else "at")
    if day_key is not None:
        text += " " + speak_date(str(arguments[day_key]), today)
    if time_key is not None:  # "on Friday at 1 PM"; a time alone: "at 1 PM", never "on at"
        text += (" at " if day_key is not None else " ") + speak_time(str(arguments[time_key]))
    if zone:
        text += f", {speak_zone(zone)} time"
    return text


def speak_date(iso: str, today: date | None = None) -> str:
    """ "Friday, December 4" by the one rule of :mod:`vocero.contracts.spoken` (weekday, month
    and day: never ambiguous between month and day; the year unless it is the caller's current
    year), as the read-out says it; always with the weekday, never "tomorrow": the caller who
    said "Thursday" confirms "Thursday"."""
    try:
        day = date.fromisoformat(iso)
    except ValueError:
        return iso
    return spoken_date(day, today=today, relative=False)


def speak_time(hhmm: str) -> str:
    """ "4 PM", "4:30 PM": the one rule of :mod:`vocero.contracts.spoken`."""
    try:
        hour, minute = (int(p) for p in hhmm.split(":"))
        return spoken_time(time(hour, minute))
    except ValueError:
        return hhmm


def speak_zone(zone: str) -> str:
    city = zone.rsplit("/", 1)[-1].replace("_", " ")
    return city if "/" in zone else zone


def speak_amount(value: Any, currency: Any = None) -> str:
    if isinstance(value, Mapping):
        currency, value = value.get("currency"), value.get("amount")
    code = str(currency or "")
    return f"{value} {CURRENCY_WORDS.get(code, code)}".strip()
