"""How long a server's tool listing may be trusted: ``ttlMs`` / ``cacheScope`` (2026-07-28).

Sans-IO: a table of entries keyed by server and *partition*, the authorization context the
listing was fetched under (the gateway's credential for that server, its revocation epoch, and
the tenant when a listing is fetched on a tenant's behalf). Rules (ADR-0004, docs/mcp.md):

* an entry is served only to the partition it was fetched for: ``private`` by definition, and
  ``public`` too: a cache is never shared across tenants or credentials on a server's word
  (``cacheScope`` is recorded, and only ever narrows);
* freshness is the server's ``ttlMs`` capped by the gateway's ``relist_interval_s`` (no hint:
  the interval alone); ``ttlMs: 0`` is stale at once;
* a list-changed signal, a pin change (rug pull, operator approval) or a credential revocation
  drops the server's entries: nothing fetched before one of those is used after it.
"""

from __future__ import annotations

from dataclasses import dataclass

from vocero.mcp_gateway.model import Listing


@dataclass(frozen=True, slots=True)
class Partition:
    """Who a listing was fetched for. ``epoch`` moves on every revocation or credential change."""

    credential: str = "static"
    epoch: int = 0
    tenant: str = ""


@dataclass(frozen=True, slots=True)
class _Entry:
    partition: Partition
    scope: str
    fresh_until: float
    pin_epoch: int


class ListingCache:
    def __init__(self, *, max_age_s: float | None) -> None:
        self._max_age_s = max_age_s
        self._entries: dict[str, list[_Entry]] = {}

    def freshness_s(self, listing: Listing) -> float | None:
        """Seconds a listing stays fresh (``None``: until told otherwise)."""
        if listing.ttl_ms is None:
            return self._max_age_s
        ttl_s = listing.ttl_ms / 1000
        return ttl_s if self._max_age_s is None else min(ttl_s, self._max_age_s)

    def store(
        self, server: str, partition: Partition, listing: Listing, *, now: float, pin_epoch: int
    ) -> None:
        """Record a listing just fetched (it replaces what that partition held)."""
        age = self.freshness_s(listing)
        entry = _Entry(
            partition=partition,
            scope="public" if listing.cache_scope == "public" else "private",
            fresh_until=float("inf") if age is None else now + age,
            pin_epoch=pin_epoch,
        )
        kept = [e for e in self._entries.get(server, []) if e.partition != partition]
        self._entries[server] = [*kept, entry]

    def is_fresh(self, server: str, partition: Partition, *, now: float, pin_epoch: int) -> bool:
        """Whether a listing this partition may use is still fresh."""
        for entry in self._entries.get(server, []):
            if entry.pin_epoch != pin_epoch or now >= entry.fresh_until:
                continue
            if entry.partition == partition:
                return True
        return False

    def fresh_until(self, server: str, partition: Partition) -> float | None:
        for entry in self._entries.get(server, []):
            if entry.partition == partition:
                return entry.fresh_until
        return None

    def invalidate(self, server: str) -> None:
        """List changed, pins changed or credentials revoked: nothing held is used again."""
        self._entries.pop(server, None)
