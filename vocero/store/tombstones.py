"""Audit tombstones, sans IO: how an audit event loses its payload and the chain still verifies.

The audit table is append-only (database triggers refuse UPDATE and DELETE), with one
exception the triggers allow: the ``data`` of an event may be replaced, once, by a tombstone
``{"$tombstone": S}``, every other column unchanged. ``S`` is the ``seq`` of the
``retention.tombstoned`` event that the same transaction appended to the same chain, whose
data claims exactly which events it tombstoned::

    {"events_sha256": sha256_hex(";".join(f"{seq}:{hash}" for each event, by seq)),
     "count": n, "from_seq": first seq, "to_seq": last seq, "before": cutoff, "days": period}

A verifier walks the chain as before: an intact event must recompute (its hash over its
payload) and link (its ``prev_hash`` is the previous event's ``hash``). A tombstoned event
cannot recompute (its payload is gone) but must still link, and must be claimed: the event
``S`` it names comes later in the chain, recomputes, is a ``retention.tombstoned`` event, and
its ``events_sha256`` and ``count`` match the tombstoned events that name it. So nothing can be
removed (a gap breaks the links), nothing can be altered (the hashes of the kept fields are
fixed by the links), and nothing can be tombstoned quietly (a tombstone no later event claims,
or claims differently, breaks the chain at that event). What is lost is exactly the payload.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

TOMBSTONE_KEY = "$tombstone"
TOMBSTONED_KIND = "retention.tombstoned"
PURGED_KIND = "retention.purged"
KEPT_KINDS = frozenset({TOMBSTONED_KIND, PURGED_KIND})
"""Events never tombstoned: the records of what retention removed (ids and counts only)."""


def tombstone(claimed_by: int) -> dict[str, Any]:
    return {TOMBSTONE_KEY: claimed_by}


def tombstone_of(data: Mapping[str, Any]) -> int | None:
    """The ``seq`` of the event that claims this tombstone, or ``None`` for an intact payload."""
    if len(data) != 1 or TOMBSTONE_KEY not in data:
        return None
    claimed_by = data[TOMBSTONE_KEY]
    return claimed_by if isinstance(claimed_by, int) and not isinstance(claimed_by, bool) else None


def events_digest(events: Iterable[tuple[int, str]]) -> str:
    """``sha256_hex`` of ``seq:hash`` pairs in ``seq`` order, joined by ``;``."""
    text = ";".join(f"{seq}:{digest}" for seq, digest in sorted(events))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def claim(events: list[tuple[int, str]], *, before: str, days: int) -> dict[str, Any]:
    """The data of the ``retention.tombstoned`` event for ``events`` (``(seq, hash)``)."""
    seqs = [seq for seq, _ in events]
    return {
        "events_sha256": events_digest(events),
        "count": len(events),
        "from_seq": min(seqs),
        "to_seq": max(seqs),
        "before": before,
        "days": days,
    }


class TombstoneLedger:
    """What a chain walker collects to check tombstones once it has seen the whole chain."""

    def __init__(self) -> None:
        self._tombstoned: dict[int, list[tuple[int, str]]] = {}
        self._claims: dict[int, Mapping[str, Any]] = {}

    def tombstoned(self, seq: int, digest: str, claimed_by: int) -> None:
        self._tombstoned.setdefault(claimed_by, []).append((seq, digest))

    def intact(self, seq: int, kind: str, data: Mapping[str, Any]) -> None:
        if kind == TOMBSTONED_KIND:
            self._claims[seq] = data

    def first_unclaimed(self) -> int | None:
        """The lowest ``seq`` of a tombstoned event no later intact claim accounts for."""
        bad: list[int] = []
        for claimed_by, events in self._tombstoned.items():
            claim_data = self._claims.get(claimed_by)
            if (
                claim_data is None
                or any(seq >= claimed_by for seq, _ in events)
                or claim_data.get("count") != len(events)
                or claim_data.get("events_sha256") != events_digest(events)
            ):
                bad.append(min(seq for seq, _ in events))
        return min(bad) if bad else None
