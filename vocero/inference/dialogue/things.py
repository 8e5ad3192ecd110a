"""The things and choices a caller names in a line: a free-text field's thing (by the state
or the description its tool gives it, or, for a field named only ``item``, by what the request
names), and one of the values a tool's line lists for a bare field (:data:`schema.OPTIONS_KEY`:
said whole, as its places in order, or by the word only it has; never one said after "not").

Split from :mod:`.arguments`, which fills each field by its kind and calls these. Pure.
"""

from __future__ import annotations

import re

from vocero.contracts import values
from vocero.contracts.lexicon.base import alternation
from vocero.contracts.lexicon.en import LEXICON
from vocero.contracts.lexicon.synonyms import STATE_SYNONYMS

_STATE_VERB = r"(?:is|are|was|were|has been|have been|had been|went|keeps? going)"


def state_thing(description: str, name: str, utterance: str) -> str | None:
    """A free-text field the tool's description defines by a state ("item is what is out",
    "part: what is broken") is the thing the caller says is in that state: "My power has been
    out since seven" -> "power", "the kitchen tap is broken" -> "kitchen tap"; ``None`` when the
    description defines no such state or the caller names nothing in it."""
    label = r"[\s_-]+".join(re.escape(w) for w in re.split(r"[_\-\s]+", name) if w)
    defined = re.search(
        rf"\b{label}\s*(?:is|means|:|=)\s*what(?:ever)?\s+{_STATE_VERB}\s+([a-z]+)\b",
        description,
        re.IGNORECASE,
    )
    if defined is None:
        return None
    state = re.escape(defined.group(1))
    said = re.search(
        rf"\b(?:my|the|our|a|an)\s+((?:[a-z]+\s+)?[a-z]+?)\s+{_STATE_VERB}\s+(?:(?!not\b|never\b)\w+\s+)?{state}\b",
        utterance,
        re.IGNORECASE,
    )
    return said.group(1).lower() if said else None


_THING_SAID = re.compile(
    r"\b(?:my|our|his|her|their|a|an)\s+((?:[a-z][\w'-]*\s+){0,4}?[a-z][\w'-]*)"
    r"(?=\s+(?:in|on|at|by|near|from|inside|under|behind|somewhere|that|which|when|yesterday"
    r"|today|last|this)\b|\s*[,.?!]|\s*$)",
    re.IGNORECASE,
)


_THING_NAMES = frozenset(("item", "thing", "object", "part", "goods", "product", "article"))
"""Generic names of a field that holds the thing a request is about."""


def only_named(name: str, description: str) -> bool:
    """A field called only ``item`` (or the like), that its tool's line says nothing of."""
    label = r"[\s_-]+".join(re.escape(w) for w in re.split(r"[_\-\s]+", name) if w)
    return name.lower() in _THING_NAMES and not re.search(rf"\b{label}\b", description, re.I)


def thing_named(utterance: str) -> str | None:
    """The thing a request names after a possessive or an article ("replace my gas meter on
    Thursday" -> "gas meter"), for a field named only ``item``: what the caller said, never
    what a model guessed (it wrote the account number there); a clause ("my tap is
    dripping") names no thing."""
    said = _THING_SAID.search(utterance)
    thing = said.group(1).lower() if said else None
    return None if thing is None or _CLAUSE_VERB.search(thing) else thing


_CLAUSE_VERB = re.compile(r"\b(?:is|are|was|were|has|have|had|been|will|would|can|could)\b")


def said_thing(description: str, name: str, utterance: str) -> str | None:
    """A free-text field the tool's description defines as saying what a thing is ("item says
    what it is and what it looks like") is the thing the caller names: "I left my navy scarf in
    the hall" -> "navy scarf", up to where, when or the line's end; ``None`` when the
    description defines no such field or the caller names no thing."""
    label = r"[\s_-]+".join(re.escape(w) for w in re.split(r"[_\-\s]+", name) if w)
    defined = re.search(
        rf"\b{label}\s+(?:says|is|describes|tells(?:\s+us)?)\s+what\s+(?:it|the\s+\w+)\s+is\b",
        description,
        re.IGNORECASE,
    )
    said = _THING_SAID.search(utterance) if defined else None
    return said.group(1).lower() if said else None


_COUNTS = r"(?:my|our|an?|the|some|a couple of|a few|a pair of|\d+|one|two|three|four|five|six)"
_THING = r"((?:[a-z][\w'-]*\s+){0,3}?[a-z][\w'-]*)"
_THING_END = r"(?=\s+(?:on|at|by|from|this|next|to|in|and|please|that|which|for)\b|\s*[,.?!]|\s*$)"
_HANDLED = (
    re.compile(rf"\bfor\s+{_COUNTS}\s+{_THING}{_THING_END}", re.IGNORECASE),
    re.compile(rf"\b(?:got|have|has)\s+{_COUNTS}\s+{_THING}{_THING_END}", re.IGNORECASE),
)
_NOT_A_THING = re.compile(
    rf"\d|\b(?:{alternation(LEXICON.calendar.weekdays)}|{alternation(LEXICON.calendar.months)}|"
    r"today|tomorrow|tonight|week|weekend|morning|afternoon|evening|time|day|date|"
    r"is|are|was|were|has|have|had|been|will|would|can|could)\b",
    re.IGNORECASE,
)


def handled_thing(description: str, name: str, utterance: str) -> str | None:
    """A free-text field its tool's line defines as what the request handles ("item is what
    will be collected") is the thing the caller's request is for or has: "a pickup for an
    old fridge on Thursday" -> "old fridge", "I've got an old couch to get rid of" -> "old
    couch"; never a day, a time or an identifier; ``None`` when the line defines no such field
    or the caller names no thing."""
    label = r"[\s_-]+".join(re.escape(w) for w in re.split(r"[_\-\s]+", name) if w)
    if not re.search(rf"\b{label}\s+(?:is|means|says)\s+what\b", description, re.IGNORECASE):
        return None
    for pattern in _HANDLED:
        for said in pattern.finditer(utterance):
            thing = said.group(1).lower()
            if not _NOT_A_THING.search(thing):
                return thing
    return None


_WHEN_DEFINED = re.compile(
    rf"\b(?:date|time|day|weekday|when|{alternation(LEXICON.calendar.weekdays)})\b", re.IGNORECASE
)


def when_said(
    description: str, name: str, utterance: str, prop: dict[str, object] | None = None
) -> str | None:
    """A free-text field its tool's line defines by a day or a time ("performance is which one
    in the caller's words (like 'Saturday matinee' or a date and time)") is the caller's words
    for when: "the Saturday matinee" -> "Saturday matinee", "on Sunday at eleven"; ``None``
    when the line defines no such field or the caller says no day or time."""
    if not (prop or {}).get(WHEN_KEY) and not when_defined(description, name):
        return None
    said = values.when_phrase(utterance)
    return values.spoken_times(said) if said else None  # "on Sunday at eleven" -> "at 11"


WHEN_KEY = "x-vocero-when"
"""Where :func:`vocero.inference.dialogue.schema.shared_values` marks a bare field that another
tool's field of the same name, defined by a day or a time, makes one too."""


def when_defined(description: str, name: str) -> bool:
    """Whether the tool's line defines field ``name`` by a day or a time."""
    label = r"[\s_-]+".join(re.escape(w) for w in re.split(r"[_\-\s]+", name) if w)
    defined = re.search(
        rf"\b{label}\s+(?:is|means|says)\b([^.;,(]*(?:\([^()]*\))?)", description, re.I
    )  # its own clause, to the next comma, with its parenthesis
    return defined is not None and bool(_WHEN_DEFINED.search(defined.group(1)))


_PERSON_FIELDS = re.compile(
    r"^(?:(?:full|first|contact|caller|holder|collector|person|lead|your)_)?"
    r"name$"
)
_NAME_SAID = re.compile(
    r"\b(?i:under(?: the name(?: of)?)?|in the name of|name of|the name's|name's|name is"
    r"|names is|my name is|i'm called)\s+((?:[A-Z][a-z'\u2019-]+)(?:\s+[A-Z][a-z'\u2019-]+){0,2})"
)
"""A name given as one; the name's words capitalised, as typed and as Whisper writes them."""


def person_named(name: str, utterance: str) -> str | None:
    """A field for a person's name (``name``, ``guest_name``, ...) is the name the caller gives
    as one ("They're under Rosie Whitworth", "name of Patel", "The name's Dawson"); ``None``
    for any other field or a line that gives no name so."""
    if not _PERSON_FIELDS.match(name.lower()):
        return None
    said = _NAME_SAID.search(utterance) or _FOR_NAME.search(utterance)
    return said.group(1) if said else None


_FOR_NAME = re.compile(
    r"\bfor ((?!(?:The|A|An|This|That|My|Our)\b)[A-Z][a-z'\u2019-]+ [A-Z][a-z'\u2019-]+)"
    r"(?=\s*(?:[,.!?]|$|(?i:please)))"
)
"""A first and last name after "for", closing its clause ("..., for Marjorie Lees, please")."""


def option_said(utterance: str, options: list[str]) -> str | None:
    """The value of those a description names that the caller said ("the Riverside store");
    the last one said wins ("not Maple Street, Riverside"), one said after "not" never does
    ("breakfast, not parking"); none said is no value."""
    text = f" {normalise(utterance)} "
    said: list[tuple[int, str]] = []
    for option in options:
        words = r"[\s-]+".join(re.escape(w) for w in normalise(option).split())
        found = [
            m.start()
            for m in re.finditer(rf"(?<=\s){words}(?=\s)", text)
            if not _OPTION_NEGATED.search(text[: m.start()])  # "breakfast, not parking"
        ]
        if found:
            said.append((found[-1], option))
    if not said:
        said = _option_by_parts(text, options) or _option_by_own_word(text, options)
    return max(said)[1] if said else None


def _option_by_parts(text: str, options: list[str]) -> list[tuple[int, str]]:
    """A value joining places ("Kinloch-Skerra") said as its parts, in its order ("from Kinloch
    over to Skerra"); never in the other order (that is "Skerra-Kinloch")."""
    said: list[tuple[int, str]] = []
    for option in options:
        raw = [p for p in re.split(r"\s*[-\u2013/]\s*", option) if p.strip()]
        if len(raw) < 2 or not all(p[:1].isupper() for p in raw):
            continue  # "pet-friendly" is no pair of places
        parts = [normalise(p) for p in raw]
        at, ok = 0, True
        for part in parts:
            found = re.search(rf"(?<=\s){re.escape(part)}(?=\s)", text[at:])
            if found is None:
                ok = False
                break
            at += found.end()
        if ok:
            said.append((at, option))
    return said


def _option_by_own_word(text: str, options: list[str]) -> list[tuple[int, str]]:
    """Options said by the one word no other option has ("an outside cabin" for "outside
    two-berth" beside "inside two-berth"), where the whole value was not said."""
    words = {o: set(normalise(o).replace("-", " ").split()) for o in options}
    said: list[tuple[int, str]] = []
    for option, own in words.items():
        others = set().union(*(w for o, w in words.items() if o != option))
        for word in own - others:
            found = [
                m.start()
                for m in re.finditer(rf"(?<=\s){re.escape(word)}(?=\s)", text)
                if len(word) > 3 and not _OPTION_NEGATED.search(text[: m.start()])
            ]
            if found:
                said.append((found[-1], option))
            else:
                said.extend((at, option) for at in _said_alike(text, word))
    return said


def _said_alike(text: str, word: str) -> list[int]:
    """Where the line says an everyday word for ``word`` ("nicked" for "stolen", "another"
    for "extra"): its last place, or none."""
    found = [
        m.start()
        for alike in STATE_SYNONYMS.get(word, ())
        for m in re.finditer(rf"(?<=\s){re.escape(alike)}(?=\s)", text)
        if not _OPTION_NEGATED.search(text[: m.start()])
    ]
    return [max(found)] if found else []


_OPTION_NEGATED = re.compile(
    r"\b(?:not|never|rather than|instead of)\s+(?:the\s+|a\s+|an\s+|any\s+)?$"
)


def stem(word: str) -> str:
    """Plural to singular, enough to match tool name words ("orders", "followups", "notes")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def normalise(text: str) -> str:
    return re.sub(r"[^\w'\- ]+", " ", text.lower().replace("\u2019", "'"))


def called_by_name(name: str, utterance: str) -> str | None:
    """A bare field named for a thing the caller names with its own words around it ("the
    quarter to three sailing from Kinloch" for ``sailing``): the words from the article to the
    name, and a place after "from" or "to"; ``None`` when the caller says only the name ("the
    sailing"), which is no value."""
    if not re.fullmatch(r"[a-z]{4,}", name):
        return None
    found = re.search(  # the place is a name: capitalised, so case counts there
        rf"\b(?i:the|my|our|this|that)\s+((?:[\w'-]+\s+){{1,5}}?(?i:{name}s?)"
        rf"(?:\s+(?i:from|to|at)\s+[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)?)\b",
        utterance,
    )
    if found is None or _CLAUSE_VERB.search(found.group(1)):
        return None
    return found.group(1)


_PICKUP_NAMES = frozenset(("pickup", "pick_up", "pickup_point", "pickup_spot", "collection",
                           "collect_from", "collection_point"))  # fmt: skip
"""Field names for where someone or something is picked up (everyday English, no domain)."""
_PRONOUN = r"(?:me|us|him|her|them|it|my \w+)"
_PICKED_UP_AT = re.compile(
    rf"\b(?:pick(?:ed)?\s+{_PRONOUN}\s+up|pick[\s-]?up(?:\s+(?:is|point|spot|will be))?"
    rf"|collect(?:ed)?\s+{_PRONOUN}|collection(?:\s+(?:is|point))?|get\s+{_PRONOUN})"
    r"\s*(?:at|from|on|outside|by|in)\s+(?P<place>[^.?!,;]+)",
    re.IGNORECASE,
)
_FROM_PLACE = re.compile(
    r"\b[Ff]rom\s+(?P<place>(?:the\s+)?(?:\d+\s+)?[A-Z][\w'-]*(?:\s+[\w'-]+){0,5})"
)
"""A bare "from" before a name ("from 14 Cabra Road", "from the Phibsborough Luas stop")."""


def pickup_said(name: str, utterance: str) -> str | None:
    """Where the caller asks to be picked up, for a field named for it (``pickup``): the place
    after "pick me up at/from", "collect me at", "pick-up at", or after a bare "from" before a
    name, never a time ("from 14 Cabra Road", not "from two in the afternoon")."""
    if name.lower() not in _PICKUP_NAMES:
        return None
    found = [*_PICKED_UP_AT.finditer(utterance), *_FROM_PLACE.finditer(utterance)]
    for match in found:
        place = match.group("place").strip()
        if values.when_phrase(place) is not None or values.time_in(place) is not None:
            continue  # "from two in the afternoon": a time
        if any(c.isalpha() for c in place):
            return place
    return None
