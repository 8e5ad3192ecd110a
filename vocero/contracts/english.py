"""English sentences built from parts: the one place the agent joins words into a list, turns an
internal name into words, and says what a tool does (issue 42).

Every plane that speaks builds its sentences from these (the floor of the layers in
``.importlinter``): the policy's read-backs and outcomes, the CPU dialogue's capability line,
the read-out of results. Nothing the caller hears is a raw internal name: a tool or field name
(``crm_update_v2``, ``bookings.shift``, ``new_slot_id``) is said through :func:`name_words` or
:func:`action_words`, never as written.

Lists are joined with the serial ("Oxford") comma, "a, b, and c": it keeps items that contain
"and" themselves apart ("check, reschedule and cancel" is one item or three). Empty, blank and
punctuation-only items are dropped, never joined.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

CONJUNCTIONS: Final = frozenset({"and", "or", "but", "nor"})
"""Words a list item never ends on (an item that does lost its last word)."""

SYSTEM_WORDS: Final = frozenset({
    "api", "svc", "srv", "crm", "erp", "tool", "tools", "do", "the", "rpc", "mcp", "v", "op",
    "cmd", "fn", "func", "impl", "internal", "sys",
})  # fmt: skip
"""Words of an internal name that say nothing to a caller: system prefixes, "do"."""

ABBREVIATIONS: Final = {
    "ref": "reference", "num": "number", "no": "number", "qty": "quantity", "amt": "amount",
    "addr": "address", "desc": "description", "appt": "appointment", "dept": "department",
    "msg": "message", "info": "information", "tel": "phone", "dob": "date of birth",
    "loc": "location", "acct": "account", "cust": "customer", "prod": "product",
}  # fmt: skip
"""Short forms internal names use, as a caller says them."""

ID_WORDS: Final = frozenset({"id", "ids", "uuid", "guid", "key"})
"""The last word of an identifier's name: dropped when the name has others ("new slot")."""

VERBS: Final = frozenset({
    "add", "amend", "apply", "approve", "arrange", "assign", "block", "book", "cancel", "change",
    "check", "claim", "close", "confirm", "create", "defer", "delay", "delete", "edit", "extend",
    "file", "find", "get", "hold", "issue", "list", "lock", "log", "lookup", "modify", "move",
    "open", "order", "pause", "pay", "place", "postpone", "rebook", "record", "redeem", "refund",
    "register", "reject", "release", "remove", "renew", "reopen", "report", "request",
    "reschedule", "reserve", "reset", "resume", "return", "schedule", "search", "send", "set",
    "shift", "ship", "start", "stop", "submit", "suspend", "swap", "switch", "transfer",
    "unlock", "update", "upgrade", "verify", "view",
})  # fmt: skip
"""Verbs a tool's name is made with (``reschedule_appointment``, ``bookings.shift``)."""

MOVING_VERBS: Final = frozenset({
    "change", "defer", "delay", "extend", "modify", "move", "postpone", "rebook", "reschedule",
    "shift", "swap", "switch", "transfer", "update", "amend", "edit",
})  # fmt: skip
"""Verbs after which a new moment or place is what something goes *to*."""

PARTICIPLES: Final = {
    "cancel": "cancelled", "record": "recorded", "close": "closed", "set": "set", "send": "sent",
    "pay": "paid", "get": "got", "find": "found", "hold": "held", "make": "made", "ship": "shipped",
    "log": "logged", "stop": "stopped", "file": "filed", "swap": "swapped", "lookup": "looked up",
    "place": "placed", "put": "put", "reset": "reset", "issue": "issued",
}  # fmt: skip
"""Past participles that are not the verb plus "ed"."""

_THIRD_PERSON: Final = {
    "returns": "tell you",
    "gives": "give you",
    "provides": "give you",
    "shows": "show you",
    "tells": "tell you",
}
_NOUN_STARTS: Final = frozenset({
    "the", "a", "an", "your", "our", "their", "its", "this", "that", "these", "those", "all",
    "any", "each", "every", "one", "next", "current", "available", "free", "upcoming", "latest",
    "last", "first",
})  # fmt: skip
"""First words of a description that is a noun phrase ("The next free slot."), not a verb."""

_SPACE = re.compile(r"\s+")
_EDGE = " \t\n,;:.!?-\u2013\u2014/&+"
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_VERSION = re.compile(r"v?\d+")
_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_SPACE_BEFORE_MARK = re.compile(r"\s+(?=[,;:.!?])")
_CONJ_BEFORE_MARK = re.compile(r"(?:^|\s+)(?:and|or|but|nor)(?=[,;:.!?])", re.IGNORECASE)
_MARK_RUN = re.compile(r"([,;:.!?])[,;:.!?\s]*[,;:.!?]")


def clean_item(text: str) -> str:
    """One list item as it can stand in a sentence: spaces collapsed, no space before a
    punctuation mark, no conjunction dangling before one or at either edge, no run of
    separators, nothing at the edges but words; "" when nothing with a letter or digit is
    left."""
    item = text
    while True:
        before = item
        item = _SPACE.sub(" ", item)
        item = _SPACE_BEFORE_MARK.sub("", item)
        item = _CONJ_BEFORE_MARK.sub("", item)
        item = _MARK_RUN.sub(r"\1", item)
        item = item.strip(_EDGE)
        words = item.split(" ")
        if words[-1].lower() in CONJUNCTIONS:
            item = " ".join(words[:-1])
        elif words[0].lower() in CONJUNCTIONS:
            item = " ".join(words[1:])
        if item == before:
            break
    return item if any(c.isalnum() for c in item) else ""


def list_items(items: Iterable[str]) -> list[str]:
    """The items :func:`join_list` says, in order: each cleaned (:func:`clean_item`), the empty
    ones dropped. A caller that must find each item in the sentence uses these. Repeats are
    kept (two records may read alike); a caller that wants each once drops them first."""
    return [item for item in (clean_item(raw) for raw in items) if item]


def join_list(items: Iterable[str], conj: str = "and") -> str:
    """``["a"]`` -> "a", ``["a", "b"]`` -> "a and b", ``["a", "b", "c"]`` -> "a, b, and c";
    empty and blank items are dropped; "" for none."""
    kept = list_items(items)
    if len(kept) <= 2:
        return f" {conj} ".join(kept)
    return ", ".join(kept[:-1]) + f", {conj} " + kept[-1]


def identifier_words(name: str) -> list[str]:
    """An internal name's words, lower case: snake, camel, kebab and dotted names split,
    system words (:data:`SYSTEM_WORDS`) and versions ("v2", "3") dropped."""
    spaced = _CAMEL.sub(" ", name)
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]
    return [w for w in words if w not in SYSTEM_WORDS and not _VERSION.fullmatch(w)]


def name_words(name: str) -> str:
    """A field's name said as words: ``new_slot_id`` -> "new slot", ``booking_ref`` -> "booking
    reference", ``customerEmail`` -> "customer email", ``id`` -> "reference"; short forms spelled
    out (:data:`ABBREVIATIONS`). Never an underscore or a dot."""
    words = identifier_words(name)
    if len(words) > 1 and words[-1] in ID_WORDS:
        words = words[:-1]
    if words == [] or all(w in ID_WORDS for w in words):
        return "reference"
    return " ".join(ABBREVIATIONS.get(w, w) for w in words)


_ASKED_BY_ITSELF: Final = {
    "when": "When would you like it?",
    "where": "Where would you like it?",
    "who": "Who is it for?",
}
"""Fields named by a question word: asked as that question, never "What when should I use?"."""


def ask_for(name: str) -> str:
    """The question for a field nobody gave, from its name alone: "What store code should I
    use?" (``storeCode``), "When would you like it?" (``when``)."""
    words = name_words(name)
    return _ASKED_BY_ITSELF.get(words, f"What {words} should I use?")


def singular(noun: str) -> str:
    """The noun phrase with its last word singular ("bookings" -> "booking")."""
    head, _, last = noun.rpartition(" ")
    if last.endswith("ies") and len(last) > 4:
        last = last[:-3] + "y"
    elif last.endswith(("sses", "xes", "ches", "shes")):
        last = last[:-2]
    elif last.endswith("s") and not last.endswith(("ss", "us", "is")):
        last = last[:-1]
    return f"{head} {last}".strip()


def action_words(tool: str) -> tuple[str, str]:
    """What a tool does, as a verb and a noun: ``appointments.reschedule`` or
    ``reschedule_appointment`` -> ("reschedule", "appointment"); ``bookings.shift`` -> ("shift",
    "booking"); ``crm_update_v2`` -> ("update", ""); ``svc.do_thing`` -> ("change", "thing").
    A name with no known verb reads as "change" (or "make" when nothing is left of it)."""
    words = identifier_words(tool)
    verb = next((w for w in words if w in VERBS), "")
    if not verb:
        verb = "change" if words else "make"
    rest = [ABBREVIATIONS.get(w, w) for w in words if w != verb and w not in ID_WORDS]
    noun = " ".join(singular(w) for w in rest)  # "orders status" -> "order status"
    return ("look up" if verb == "lookup" else verb), noun


def past_participle(verb: str) -> str:
    """ "cancel" -> "cancelled", "move" -> "moved", "look up" -> "looked up"."""
    head, _, rest = verb.partition(" ")
    past = PARTICIPLES.get(head)
    if past is None:
        if head.endswith("e"):
            past = head + "d"
        elif head.endswith("y") and head[-2:-1] not in ("a", "e", "o", "u", ""):
            past = head[:-1] + "ied"
        else:
            past = head + "ed"
    return f"{past} {rest}".strip()


_MAIN_CLAUSE = re.compile(r"\s*[;:]|,\s+and\s+|,\s+(?=(?:\S+\s+){0,2}\S+[.!?]?$)")
"""Where a description's first sentence leaves what the tool does: "; when is the new start as
...", ": item is what will be collected, ...", ", and say where ...", ", soonest first"."""
_ANSWERS_ABOUT = re.compile(r"\banswers\s+(?:to\s+questions\s+)?(?:about|on)\s+(.+)$", re.I)
"""A catalog's description ("Beacon Driving School's approved answers about prices, ...")."""
_ASIDE = re.compile(r"\s*\([^()]*\)")
"""A parenthesis ("(child seat, GPS or snow chains)"): detail, not what the tool does."""


def capability(description: str, tool: str = "") -> str:
    """What a tool lets the agent do, as words after "I can": the first sentence of its
    description in the base form ("Looks up an order." -> "look up an order", "Returns the
    status." -> "tell you the status"), a noun phrase as what the agent can tell ("The next
    free slot." -> "tell you about the next free slot"), or, with no description, what its
    name says when it names a verb ("bookings.shift" -> "shift your booking"); "" when nothing
    is left ("svc.do_thing" says no verb: what it does is not guessed)."""
    found = _SENTENCE.match(_SPACE.sub(" ", description).strip())
    said = _ASIDE.sub("", found.group(0) if found else "")
    answers = _ANSWERS_ABOUT.search(said.strip().rstrip("."))
    if answers:  # "Acme's approved answers about prices, hours and parking"
        return clean_item(f"answer questions about {answers.group(1)}")
    first = clean_item(_MAIN_CLAUSE.split(said, maxsplit=1)[0])
    if not first:
        if not tool:
            return ""
        verb, noun = action_words(tool)
        named = any(w in VERBS for w in identifier_words(tool))  # not a guessed "change"
        return f"{verb} your {noun}" if noun and named else ""
    head, _, rest = first.partition(" ")
    lowered = head.lower()
    if lowered in _THIRD_PERSON:
        return clean_item(f"{_THIRD_PERSON[lowered]} {rest}")
    if lowered in _NOUN_STARTS:
        return f"tell you about {first[:1].lower()}{first[1:]}"
    if lowered.endswith("s") and lowered[:-1] in VERBS | {"look"}:
        lowered = lowered[:-1]
    elif lowered.endswith("es") and lowered[:-2] in VERBS:
        lowered = lowered[:-2]
    return clean_item(f"{lowered} {rest}")


__all__ = [
    "CONJUNCTIONS",
    "MOVING_VERBS",
    "SYSTEM_WORDS",
    "VERBS",
    "action_words",
    "ask_for",
    "capability",
    "clean_item",
    "identifier_words",
    "join_list",
    "list_items",
    "name_words",
    "past_participle",
    "singular",
]
