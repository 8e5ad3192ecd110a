"""What a result's keys say: the key words that make a field internal, a status, a message, an
identifier, a date or a count, and the English word forms a read-out is built with (a key said as
words, singular and plural, articles, joining)."""

from __future__ import annotations

import re

from vocero.contracts.english import join_list, singular
from vocero.observability.redaction import is_sensitive

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


def internal(key: str) -> bool:
    lowered = key.casefold()
    return (
        lowered in INTERNAL_KEYS
        or lowered.startswith("_")
        or lowered.endswith(INTERNAL_SUFFIXES)
        or is_sensitive(key)
    )


def message_key(key: str) -> bool:
    words = key_words(key)
    return bool(words) and words[-1] in MESSAGE_WORDS


def names_it(key: str) -> bool:
    words = key_words(key)
    return key in NAME_KEYS or (len(words) > 1 and words[-1] in THING_WORDS)


def names_person(key: str) -> bool:
    words = key_words(key)
    return len(words) > 1 and words[-1] == "name" and words[0] not in PERSONAL_NAME_WORDS


def is_identifier(key: str) -> bool:
    words = key_words(key)
    return bool(words) and words[-1] in ID_WORDS


_PERFECT = frozenset({
    "arrived", "come", "gone", "departed", "expired", "failed", "lapsed", "landed",
    "happened", "occurred", "begun", "started", "ended", "risen", "fallen",
})  # fmt: skip
"""Past participles of verbs that take no object: a status that opens with one is said with
"has" ("has arrived at the depot"), never "is arrived"."""


def copula(status: str) -> str:
    """The verb a record's status is said with: "has" for a status that opens with an
    intransitive past participle ("arrived at the depot"), else "is" ("packed", "on order")."""
    first = status.split()[:1]
    return "has" if first and first[0].lower() in _PERFECT else "is"


def noun_of(tool: str) -> str:
    """What a tool is about, from its name: ``parcels.track`` -> "parcel", ``lookup_pet_visit``
    -> "pet visit"; never a verb or a system prefix."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", tool)
    segments = [s for s in re.split(r"\.", spaced) if s]
    for segment in segments:
        words = [
            w for w in key_words(segment) if w not in TOOL_NOISE and not re.fullmatch(r"v?\d+", w)
        ]
        if words:
            return " ".join([*words[:-1], singular(words[-1])])
    return "record"


def plural(word: str) -> str:
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


def key_words(key: str) -> list[str]:
    """A key's words, lower case: ``starts_at`` -> ["starts", "at"], ``petName`` -> ["pet",
    "name"]."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key)
    return [w.lower() for w in re.split(r"[._\-\s]+", spaced) if w]


def label_of(key: str) -> str:
    """A key said as words: underscores made spaces, common abbreviations spelled out ("eta" ->
    "estimated delivery", "qty" -> "quantity"), a trailing "at"/"on" and a leading "is" dropped
    ("starts_at" -> "start")."""
    if key in LABELS:
        return LABELS[key]
    words = key_words(key)
    if len(words) > 1 and words[-1] in ("at", "on"):
        words = words[:-1]
    if len(words) > 1 and words[0] == "is":
        words = words[1:]
    if words and words[0].endswith("s") and words[0][:-1] in VERB_STEMS:
        words[0] = words[0][:-1]
    return " ".join(ABBREVIATIONS.get(w, w) for w in words)


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def article(name: str) -> str:
    return "an" if name[:1].casefold() in "aeiou" else "a"


def mid_sentence(value: str, *, common: bool = False) -> str:
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


def join(parts: list[str]) -> str:
    """"a", "a and b", "a, b, and c": the one English list rule (:mod:`vocero.contracts.english`),
    empty parts dropped."""
    return join_list(parts)


def sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."
