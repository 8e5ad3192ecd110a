"""Everyday English synonyms of the nouns customer-facing tools name (language data, like the
calendar and clock words of :mod:`.en`).

The dialogue manager (:mod:`vocero.inference.dialogue`) knows no domain: it reads what a tool is
about from the profile, and looks a noun up here only when the tool's own name or description
names it, so that "package" reaches a tool about orders. A noun no tool names is never used.
"""

from __future__ import annotations

from typing import Final

NOUN_SYNONYMS: Final[dict[str, tuple[str, ...]]] = {
    "order": ("order", "purchase", "package", "parcel", "delivery", "shipment"),
    "parcel": ("parcel", "package", "delivery", "shipment"),
    "package": ("package", "parcel", "delivery", "shipment"),
    "delivery": ("delivery", "package", "parcel", "shipment"),
    "shipment": ("shipment", "package", "parcel", "delivery"),
    "appointment": ("appointment", "booking", "visit", "reservation", "slot"),
    "booking": ("booking", "appointment", "reservation", "visit"),
    "reservation": ("reservation", "booking", "table", "slot"),
    "visit": ("visit", "appointment", "call out", "booking"),
    "invoice": ("invoice", "bill", "statement", "payment"),
    "bill": ("bill", "invoice", "statement", "payment"),
    "subscription": ("subscription", "plan", "membership", "contract"),
    "plan": ("plan", "subscription", "package", "tariff"),
    "membership": ("membership", "subscription", "plan"),
    "ticket": ("ticket", "case", "request", "issue", "complaint"),
    "case": ("case", "ticket", "claim", "request"),
    "claim": ("claim", "case", "request"),
    "account": ("account", "profile", "details"),
    "address": ("address", "details", "location"),
    "prescription": ("prescription", "medication", "refill"),
    "repair": ("repair", "fix", "service job"),
    "departure": ("departure", "sailing", "crossing", "train", "bus"),
    "sailing": ("sailing", "crossing", "departure", "ferry", "boat"),
    "crossing": ("crossing", "sailing", "departure", "ferry", "boat"),
}  # fmt: skip
"""Everyday English words for common nouns of customer service: the dialogue manager uses a
row only for a noun a tool's own name or description already names, to hear the caller's
everyday word for it."""

QUESTION_SYNONYMS: Final[tuple[tuple[str, ...], ...]] = (
    (
        "cost",
        "costs",
        "price",
        "prices",
        "fee",
        "fees",
        "charge",
        "charges",
        "charged",
        "how much",
        "pay",
        "paying",
    ),
    ("age", "how old", "years old", "minimum age"),
    ("how long", "running time", "length", "duration", "go on for", "last"),
)
"""Words that ask the same thing of a catalog: "how much does it cost" asks the fee a claim's
topics may call "fee" or "charge". A line that says one says them all, for finding the claim
topics it asks about (never a tool)."""

STATE_SYNONYMS: Final[dict[str, tuple[str, ...]]] = {
    "stolen": ("stolen", "nicked", "pinched", "swiped", "taken", "gone missing", "went missing",
               "disappeared", "vanished", "someone took"),
    "damaged": ("damaged", "broken", "cracked", "snapped", "split", "busted", "bust", "smashed",
                "wrecked", "falling apart", "came off", "fell off"),
    "broken": ("broken", "damaged", "cracked", "snapped", "busted", "bust", "smashed",
               "not working", "stopped working"),
    "replacement": ("replacement", "replace", "new one", "a new", "another one"),
    "replace": ("replace", "replacement", "new one", "a new"),
    "extra": ("extra", "another", "additional", "second", "spare", "one more"),
    "additional": ("additional", "extra", "another", "one more"),
    "missed": ("missed", "skipped", "not collected", "not emptied", "didn't get", "went past",
               "went straight past", "forgot"),
    "late": ("late", "delayed", "running behind", "still waiting", "hasn't come", "not here"),
    "lost": ("lost", "misplaced", "can't find", "left behind", "mislaid"),
}  # fmt: skip
"""Everyday English words for the states and wishes a tool's line names ("reason says why:
damaged, stolen, or wanting an extra one"): what a caller says instead ("nicked", "snapped",
"another"). Used only for a word the tool's own line (or a value it lists) already says."""
