"""A profile's approved claims, by key, with what the grounding check needs precomputed."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from vocero.contracts.domain import Claim
from vocero.speech.model import EvidenceRef
from vocero.speech.values import restriction_words, text_values
from vocero.store.knowledge import parse_valid_until

_CACHE_SIZE = 64


@dataclass(frozen=True, slots=True)
class CatalogClaim:
    claim: Claim
    evidence: tuple[EvidenceRef, ...]
    values: frozenset[tuple[str, str]]
    """Canonical critical values of the claim's text (relative words unresolved)."""
    restrictions: frozenset[str]
    ends_at: datetime | None

    @property
    def key(self) -> str:
        return self.claim.key

    @property
    def text(self) -> str:
        return self.claim.text

    def valid_at(self, moment: datetime) -> bool:
        return self.ends_at is None or moment < self.ends_at


class ClaimCatalog:
    """Approved claims by key. Build it once per profile with :meth:`of` (cached)."""

    def __init__(self, claims: Iterable[Claim]) -> None:
        self._claims: dict[str, CatalogClaim] = {}
        for claim in claims:
            if claim.key in self._claims:
                raise ValueError(f"duplicate claim key {claim.key!r}")
            if not claim.sources:
                raise ValueError(f"claim {claim.key!r} has no evidence")
            evidence = tuple(EvidenceRef(source_id=s.id, version=s.version) for s in claim.sources)
            until = parse_valid_until(claim.valid_until) if claim.valid_until else None
            self._claims[claim.key] = CatalogClaim(
                claim=claim, evidence=evidence,
                values=frozenset(text_values([claim.text])),
                restrictions=restriction_words(claim.text), ends_at=until,
            )

    _cache: OrderedDict[int, tuple[object, ClaimCatalog]] = OrderedDict()

    @classmethod
    def of(cls, claims: list[Claim]) -> ClaimCatalog:
        """The catalog of a profile's claim list, built once per list object."""
        found = cls._cache.get(id(claims))
        if found is not None and found[0] is claims:
            cls._cache.move_to_end(id(claims))
            return found[1]
        catalog = cls(claims)
        cls._cache[id(claims)] = (claims, catalog)  # the list is kept alive with its catalog
        while len(cls._cache) > _CACHE_SIZE:
            cls._cache.popitem(last=False)
        return catalog

    def get(self, key: str) -> CatalogClaim | None:
        return self._claims.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._claims

    def __len__(self) -> int:
        return len(self._claims)

    def keys(self) -> list[str]:
        return list(self._claims)


def utc(epoch_s: float) -> datetime:
    return datetime.fromtimestamp(epoch_s, UTC)
