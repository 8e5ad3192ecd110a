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
)
"""Words that ask the same thing of a catalog: "how much does it cost" asks the fee a claim's
topics may call "fee" or "charge". A line that says one says them all, for finding the claim
topics it asks about (never a tool)."""
