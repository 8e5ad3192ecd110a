"""Spoken read-backs and results, built only from canonical fields.

The caller hears exactly what the proposal binds to, in a form that survives being spoken: a
date with its weekday and year, a time with AM/PM and the timezone it is in, an amount with its
currency in words. ``tool.confirmation_required.v1`` carries the same values as ``fields``.
After execution the wording follows the owning service's receipt, never the model's expectation:
"your appointment is rescheduled" only on ``committed``; "I have requested…" while unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from vocero.observability.redaction import is_sensitive
from vocero.policy.canonical import VERSION_KEYS, kind_of

CURRENCY_WORDS = {"EUR": "euros", "USD": "US dollars", "GBP": "pounds sterling", "JPY": "yen"}
PAST = {"cancel": "cancelled", "record": "recorded", "close": "closed", "set": "set",
        "send": "sent", "pay": "paid"}
REFUSALS = {
    "stale_version": "It was changed in the meantime.",
    "already_cancelled": "It was already cancelled.",
    "not_found": "I couldn't find it under your account.",
    "forbidden": "Your account isn't allowed to do that.",
}


def action_words(tool: str) -> tuple[str, str]:
    """``appointments.reschedule`` or ``reschedule_appointment`` -> ("reschedule",
    "appointment"). Read-backs use the *resolved* server tool: what will actually happen."""
    if "." in tool:
        noun, _, verb = tool.rpartition(".")
    else:
        verb, _, noun = tool.partition("_")
    noun = noun.replace("_", " ").replace(".", " ").strip()
    if noun.endswith("s") and not noun.endswith("ss"):
        noun = noun[:-1]
    noun = NOUNS.get(noun, noun)
    return (verb or tool).replace("_", " "), noun


def past_tense(verb: str) -> str:
    head, _, rest = verb.partition(" ")
    past = PAST.get(head) or (head + "d" if head.endswith("e") else head + "ed")
    return f"{past} {rest}".strip()


def fields_of(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical values a client may display: everything but sensitive keys."""
    return {k: v for k, v in arguments.items() if not is_sensitive(k)}


def readback(tool: str, arguments: Mapping[str, Any]) -> str:
    verb, noun = action_words(tool)
    return f"Please confirm: {verb} {_object(noun, arguments)}{_details(arguments)}. " \
           "Shall I go ahead? Please say yes or no."


def outcome(tool: str, arguments: Mapping[str, Any], status: str, reason: str = "") -> str:
    verb, noun = action_words(tool)
    target = _object(noun, arguments)
    details = _details(arguments)
    if status == "committed":
        return f"Done: your {target} is {past_tense(verb)}{details}."
    if status == "rejected":
        why = REFUSALS.get(reason, "")
        return f"The request to {verb} your {target} was not accepted, so nothing changed. " \
               f"{why}".strip()
    if status == "unknown":
        return f"I have requested to {verb} your {target}, but I could not confirm that it went " \
               "through yet. I won't send it again; I'll check its status."
    return f"I have requested to {verb} your {target}; it is still being processed."


# ------------------------------------------------------------------------------ rendering


def _object(noun: str, arguments: Mapping[str, Any]) -> str:
    ids = [str(v) for k, v in arguments.items() if kind_of(k, {}) == "id"]
    return " ".join([noun, *ids[:1]]).strip()


LABELS = {"reason": "about", "channel": "by"}
NOUNS = {"followup": "call-back"}


def _details(arguments: Mapping[str, Any]) -> str:
    parts: list[str] = []
    when = _when(arguments) or _instant(arguments)
    if when:
        parts.append(when)
    skip = {k for k in arguments if kind_of(k, {}) in ("date", "time", "timezone", "id")}
    skip |= set(VERSION_KEYS) | {"currency"} | {k for k in arguments if k.endswith("_at")}
    if _instant(arguments):
        skip.add("when")
    for key, value in arguments.items():
        if key in skip or is_sensitive(key):
            continue
        if kind_of(key, {}) == "amount":
            parts.append(f"for {speak_amount(value, arguments.get('currency'))}")
        elif isinstance(value, str | int | float) and not isinstance(value, bool):
            parts.append(f"{LABELS.get(key, key.replace('_', ' '))} {value}")
    return (" " + ", ".join(parts)) if parts else ""


def _instant(arguments: Mapping[str, Any]) -> str:
    """An ISO date-time (``due_at``) spoken as "for Friday, December 4, 2026 at 10 AM"."""
    for key, value in arguments.items():
        if not key.endswith("_at"):
            continue
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            continue
        zone = next((str(v) for k, v in arguments.items() if kind_of(k, {}) == "timezone"), "")
        text = f"for {speak_date(moment.date().isoformat())} at {speak_time(f'{moment:%H:%M}')}"
        return text + (f", {speak_zone(zone)} time" if zone else "")
    return ""


def _when(arguments: Mapping[str, Any]) -> str:
    day_key = next((k for k in arguments if kind_of(k, {}) == "date"), None)
    time_key = next((k for k in arguments if kind_of(k, {}) == "time"), None)
    if day_key is None and time_key is None:
        return ""
    zone = next((str(v) for k, v in arguments.items() if kind_of(k, {}) == "timezone"), "")
    preposition = "to" if (day_key or time_key or "").startswith("new_") else "on"
    text = preposition
    if day_key is not None:
        text += " " + speak_date(str(arguments[day_key]))
    if time_key is not None:
        text += " at " + speak_time(str(arguments[time_key]))
    if zone:
        text += f", {speak_zone(zone)} time"
    return text


def speak_date(iso: str) -> str:
    try:
        day = date.fromisoformat(iso)
    except ValueError:
        return iso
    return f"{day:%A}, {day:%B} {day.day}, {day.year}"


def speak_time(hhmm: str) -> str:
    try:
        hour, minute = (int(p) for p in hhmm.split(":"))
    except ValueError:
        return hhmm
    suffix = "AM" if hour < 12 else "PM"
    shown = hour % 12 or 12
    return f"{shown} {suffix}" if minute == 0 else f"{shown}:{minute:02d} {suffix}"


def speak_zone(zone: str) -> str:
    city = zone.rsplit("/", 1)[-1].replace("_", " ")
    return city if "/" in zone else zone


def speak_amount(value: Any, currency: Any = None) -> str:
    if isinstance(value, Mapping):
        currency, value = value.get("currency"), value.get("amount")
    code = str(currency or "")
    return f"{value} {CURRENCY_WORDS.get(code, code)}".strip()
