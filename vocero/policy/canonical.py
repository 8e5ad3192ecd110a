"""Canonical arguments: what a proposal binds to, resolved before the caller is asked.

The model's arguments are a draft. Before a proposal exists, every consequential value is made
explicit in application terms (docs/adr/0009-policy-outside-the-llm.md: arguments are canonicalised
before they are hashed; an ambiguous spoken date or amount is resolved before it can become a
proposal): dates become ISO dates in the caller's IANA timezone, times ``HH:MM`` (24 h), amounts a
decimal string with an ISO 4217 currency, ids are trimmed, upper-cased and matched against the
tool's pinned schema, strings have their whitespace collapsed. Dates and times are read by the
one reader of spoken dates and times (:mod:`vocero.contracts.values`, ADR-0039), the one the
dialogue manager reads them with. A value that cannot be resolved without guessing raises
:class:`CanonicalError` with a question the conversation can ask; nothing is proposed.

The principal never comes from here: keys naming a subject, scopes or ``_meta`` are dropped (the
model can never set them), and a tenant key naming another tenant is reported as a claim the gate
turns into ``cross_tenant_target``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vocero.contracts import english, values
from vocero.contracts.builtins import Canonical, CanonicalError, Context, zone_of

__all__ = [
    "Canonical", "CanonicalError", "Context", "canonicalize", "observed_versions",
    "zone_of",
]

TENANT_KEYS = frozenset({"tenant", "tenant_id"})
PRINCIPAL_KEYS = frozenset({"subject", "subject_ref", "principal", "scopes", "_meta", "caller"})
VERSION_KEYS = ("expected_version", "version")
CURRENCY_SIGNS = {"€": "EUR", "$": "USD", "£": "GBP", "¥": "JPY"}
ZERO_DECIMAL_CURRENCIES = frozenset({"JPY", "KRW", "CLP", "ISK"})

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_HHMM = re.compile(r"^([01]?\d|2[0-3])[:h.]([0-5]\d)$")
_AMOUNT = re.compile(r"^([€$£¥])?\s*(-?\d+(?:[.,]\d{1,2})?)\s*([A-Za-z]{3})?$")


def canonicalize(
    arguments: Mapping[str, Any], schema: Mapping[str, Any] | None, ctx: Context
) -> Canonical:
    """The canonical form of ``arguments`` for a tool whose pinned input schema is ``schema``."""
    properties: Mapping[str, Any] = (schema or {}).get("properties") or {}
    out: dict[str, Any] = {}
    dropped: list[str] = []
    claimed = ""
    for key, value in sorted(arguments.items()):
        if key in PRINCIPAL_KEYS or key.startswith("io.vocero"):
            dropped.append(key)
            continue
        if key in TENANT_KEYS:
            if str(value).strip() != ctx.tenant:
                claimed = str(value).strip()
            out[key] = ctx.tenant
            continue
        out[key] = _value(key, value, properties.get(key) or {}, ctx)
    _fill_timezone(out, properties, ctx)
    _fill_version(out, properties, ctx)
    _pair_amounts(out)
    _require(out, schema or {})
    target = _target(out, ctx.server)
    version = next((str(out[k]) for k in VERSION_KEYS if k in out), "")
    return Canonical(arguments=out, target_resource=target, object_version=version,
                     claimed_tenant=claimed, dropped=tuple(dropped))


# ------------------------------------------------------------------------------ field kinds


_DATETIME_SAID = re.compile(r"\brfc\s*3339\b|\bdate[\s-]?time\b", re.IGNORECASE)
_DATETIME_SAMPLE = "2026-01-31T09:30:00+01:00"


def kind_of(key: str, prop: Mapping[str, Any]) -> str:
    """How a field's value is made canonical: the schema decides before the name (a
    ``start_time`` whose format, pattern or description says RFC 3339 date-time is a moment,
    never a bare clock time that would lose its day)."""
    name = key.lower()
    if prop.get("format") == "date-time" or _says_datetime(prop):
        return "datetime"
    if prop.get("format") == "date" or name == "date" or name.endswith("_date"):
        return "date"
    if name in ("timezone", "time_zone", "tz"):
        return "timezone"
    if name == "time" or name.endswith("_time"):
        return "time"
    if name in VERSION_KEYS:
        return "integer"
    if name == "id" or name.endswith("_id"):
        return "id"
    if name in ("amount", "price", "total") or name.endswith("_amount"):
        return "amount"
    if name == "currency":
        return "currency"
    if prop.get("type") in ("integer", "number", "boolean"):
        return str(prop["type"])
    return "text"


def _says_datetime(prop: Mapping[str, Any]) -> bool:
    """A string field whose pattern takes an RFC 3339 moment, or whose description calls it
    one, when no other format is given."""
    if prop.get("format") or prop.get("type", "string") != "string" or "enum" in prop:
        return False
    pattern = prop.get("pattern")
    if isinstance(pattern, str):
        try:
            return re.search(pattern, _DATETIME_SAMPLE) is not None and not re.search(
                pattern, "09:30"
            )
        except re.error:
            return False
    return bool(_DATETIME_SAID.search(str(prop.get("description") or "")))


def _value(key: str, value: Any, prop: Mapping[str, Any], ctx: Context) -> Any:
    kind = kind_of(key, prop)
    if kind == "date":
        return resolve_date(key, value, ctx).isoformat()
    if kind == "datetime":
        return resolve_datetime(key, value, ctx)
    if kind == "time" and _ISO_DATE.match(str(value).strip()):
        return resolve_datetime(key, value, ctx)  # a moment keeps its day, never the clock alone
    if kind == "time":
        return resolve_time(key, value)
    if kind == "timezone":
        return resolve_timezone(key, value)
    if kind == "id":
        return normalise_id(key, value, prop.get("pattern"))
    if kind == "amount":
        return value if isinstance(value, dict) else resolve_amount(key, value)
    if kind == "currency":
        return resolve_currency(key, value)
    if kind == "integer":
        return _integer(key, value)
    if kind == "number":
        return _number(key, value)
    if kind == "boolean":
        return _boolean(key, value)
    if isinstance(value, str):
        return " ".join(value.split())
    return value


def _fill_timezone(out: dict[str, Any], properties: Mapping[str, Any], ctx: Context) -> None:
    """A tool that takes a timezone gets the caller's when the model named none."""
    for key in ("timezone", "time_zone", "tz"):
        if key in properties and key not in out:
            out[key] = resolve_timezone(key, ctx.timezone)


def _fill_version(out: dict[str, Any], properties: Mapping[str, Any], ctx: Context) -> None:
    """The object version the application observed wins over one the model typed."""
    key = next((k for k in VERSION_KEYS if k in properties or k in out), None)
    if key is None:
        return
    for name, value in out.items():
        if kind_of(name, {}) == "id" and str(value) in ctx.observed_versions:
            out[key] = int(ctx.observed_versions[str(value)])
            return


QUESTIONS = {
    "date": "Which date would you like?",
    "time": "What time would suit you?",
    "amount": "What amount exactly?",
    "currency": "In which currency?",
}


def _require(out: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """A required argument nobody resolved is asked for, never guessed."""
    for key in schema.get("required") or ():
        if key in out:
            continue
        kind = kind_of(key, (schema.get("properties") or {}).get(key) or {})
        if kind == "id":
            noun = english.name_words(key)  # "new_slot_id" -> "new slot", never the raw name
            question = f"Which {noun} is it? Please tell me the {noun} number."
        elif key in VERSION_KEYS:
            question = "Let me look that up first."
        else:
            question = QUESTIONS.get(kind, english.ask_for(key))
        raise CanonicalError(key, "missing", question)


def _pair_amounts(out: dict[str, Any]) -> None:
    for key, value in list(out.items()):
        if kind_of(key, {}) != "amount" or not isinstance(value, dict):
            continue
        currency = value.get("currency") or out.get("currency")
        if not currency:
            raise CanonicalError(key, "amount without a currency", "In which currency?")
        out[key] = value["amount"] if "currency" in out else value
        if "currency" in out and out["currency"] != currency:
            raise CanonicalError(key, "two currencies", "In which currency exactly?")


def _target(out: Mapping[str, Any], server: str) -> str:
    for key, value in out.items():
        if kind_of(key, {}) == "id":
            return f"{server}/{key}={value}"
    return ""


# ------------------------------------------------------------------------------------ dates


def resolve_date(key: str, value: Any, ctx: Context) -> date:
    """A date as the caller said it, read by the one reader of spoken dates
    (:func:`vocero.contracts.values.date_in`, ADR-0039): the agent that read it back and the
    policy that sends it read the same day."""
    found = values.date_in(" ".join(str(value).split()), ctx.today)
    try:
        return date.fromisoformat(found or "")
    except ValueError:
        raise CanonicalError(
            key, "unrecognised date", "Which date would you like, exactly?"
        ) from None


def resolve_datetime(key: str, value: Any, ctx: Context) -> str:
    """A ``format: date-time`` value as RFC 3339 with the offset of its zone: an ISO value with
    an offset is kept, one without is the caller's local time, and words ("next Tuesday at
    2 pm") are a day and a clock time in the caller's timezone. Anything else is asked again."""
    text = " ".join(str(value).strip().split())
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None:
        said = values.moment_in(text, ctx.now.astimezone(ctx.zone))
        if said is None:
            question = "When would you like it, exactly? Please tell me the day and the time."
            raise CanonicalError(key, "unrecognised date-time", question)
        moment = datetime.fromisoformat(said)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ctx.zone)
    return moment.isoformat()


def resolve_time(key: str, value: Any) -> str:
    """A clock time as the caller said it, read by the one reader of spoken times
    (:func:`vocero.contracts.values.time_in`, ADR-0039); a bare number ("3": morning or
    afternoon?) is asked for."""
    text = " ".join(str(value).split())
    found = values.time_in(text) or _written_clock(text)
    if found is None:
        raise CanonicalError(key, "unrecognised time", "What time would suit you, exactly?")
    return found


def _written_clock(text: str) -> str | None:
    """A value written on a 24-hour clock with a dot or an "h" ("10.30", "10h30"), the way a
    model or a server writes it; spoken words never take this path."""
    match = _HHMM.match(text.lower())
    return f"{int(match.group(1)):02d}:{match.group(2)}" if match else None


def resolve_timezone(key: str, value: Any) -> str:
    name = str(value).strip()
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CanonicalError(key, "unknown timezone", "Which time zone is that in?") from None
    return name


# ----------------------------------------------------------------------------- ids, numbers


def normalise_id(key: str, value: Any, pattern: str | None) -> str:
    raw = " ".join(str(value).strip().upper().split())
    candidates = [raw, raw.replace(" ", "-"), raw.replace(" ", ""),
                  re.sub(r"^([A-Z]+)-?\s*(\d+)$", r"\1-\2", raw)]
    if not pattern:
        return candidates[1]
    for candidate in candidates:
        if re.search(pattern, candidate):
            return candidate
    noun = english.name_words(key)
    raise CanonicalError(key, "id does not match the tool's format",
                         f"Which {noun} is it? Please tell me the {noun} number.")


def resolve_amount(key: str, value: Any) -> dict[str, str]:
    text = str(value).strip().replace(" ", "")
    match = _AMOUNT.match(text)
    if not match:
        raise CanonicalError(key, "unrecognised amount", "What amount exactly?")
    sign, number, code = match.groups()
    currency = CURRENCY_SIGNS.get(sign or "", "") or (code or "").upper()
    try:
        amount = Decimal(number.replace(",", "."))
    except InvalidOperation:
        raise CanonicalError(key, "unrecognised amount", "What amount exactly?") from None
    places = Decimal(1) if currency in ZERO_DECIMAL_CURRENCIES else Decimal("0.01")
    result = {"amount": str(amount.quantize(places, rounding=ROUND_HALF_UP))}
    if currency:
        result["currency"] = resolve_currency("currency", currency)
    return result


def resolve_currency(key: str, value: Any) -> str:
    text = str(value).strip()
    code = CURRENCY_SIGNS.get(text, text.upper())
    if not re.fullmatch(r"[A-Z]{3}", code):
        raise CanonicalError(key, "unknown currency", "In which currency?")
    return code


def _integer(key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise CanonicalError(key, "not a whole number", f"What {key.replace('_', ' ')}?")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise CanonicalError(key, "not a whole number", f"What {key.replace('_', ' ')}?") from None
    if number != number.to_integral_value():
        raise CanonicalError(key, "not a whole number", f"What {key.replace('_', ' ')}?")
    return int(number)


def _number(key: str, value: Any) -> int | float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    try:
        return float(str(value).strip())
    except ValueError:
        raise CanonicalError(key, "not a number", f"What {key.replace('_', ' ')}?") from None


def _boolean(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0"):
        return False
    raise CanonicalError(key, "not yes or no", f"Yes or no for {key.replace('_', ' ')}?")


def observed_versions(content: Any) -> dict[str, int]:
    """``{id: version}`` of every record in a result that carries an id and an integer
    ``version`` (what the owning service says the current version is)."""
    found: dict[str, int] = {}
    stack: list[Any] = [content]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            version = item.get("version")
            ids = [v for k, v in item.items() if k.endswith("_id") and isinstance(v, str)]
            if isinstance(version, int) and not isinstance(version, bool) and ids:
                found[ids[0]] = version
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
