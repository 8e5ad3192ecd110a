"""Claim catalogs in the store: versioned loading and full-text retrieval
(docs/grounding.md "The store and retrieval").

:meth:`KnowledgeRepository.sync_catalog` writes a profile's catalog: unchanged claims stay as
they are, a changed claim gets the next version (the old one is retired, never rewritten), a
claim gone from the catalog is retired. :meth:`KnowledgeRepository.search` ranks the active,
still-valid claims of one profile for a question, with SQLite FTS5 (matching with Porter
stemming, BM25 computed over that profile's claims only, so one tenant's catalog never changes
another's answers) or PostgreSQL full-text search (``ts_rank`` on an ``english`` ``tsvector``,
per document) behind the same call.
Query words are reduced to letters and digits before they reach either engine, so a question
can never become search syntax.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

import msgspec
from sqlalchemy import func, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.contracts.clock import SystemClock
from vocero.contracts.domain import Claim
from vocero.contracts.ports import Clock
from vocero.store.engine import Store
from vocero.store.models import (
    CLAIMS_FTS,
    ApprovedClaimRow,
    ClaimEvidenceRow,
    EvidenceSourceRow,
)

MAX_QUERY_TERMS = 16
RELATIVE_CUTOFF = 0.5
"""A hit is returned only if it scores at least this share of the best hit's score."""
_STOPWORDS_TEXT = """a about am an and any are as at be been but by can could did do does for from
get had has have hello hi how i if in is it its just know let me my of ok okay on or our please say
shall should so some tell than that the then there these this those to up us want was we were what
when where which who why will with would you your"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_TERM = re.compile(r"[^\W_]+")
BM25_K1 = 1.2
BM25_B = 0.75
"""FTS5's own ``bm25`` defaults."""
_MARK = "\x01"
"""What ``highlight`` puts before each matched token, to count a term's occurrences."""


class EvidenceRef(msgspec.Struct, frozen=True, kw_only=True):
    """A source version a claim rests on: safe to log and keep, never to speak."""

    source_id: str
    version: str


class ClaimHit(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    text: str
    conditions: list[str]
    topics: list[str]
    version: int
    evidence: list[EvidenceRef]
    score: float
    """Higher is better, comparable only within one search."""


class CatalogSync(msgspec.Struct, frozen=True, kw_only=True):
    added: list[str] = []
    changed: list[str] = []
    retired: list[str] = []
    unchanged: list[str] = []
    versions: dict[str, int] = {}
    """The active version of every claim after the sync."""


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose catalog: claims belong to one version of one tenant's profile."""

    tenant_id: str
    profile_id: str
    profile_version: str

    @property
    def key(self) -> str:
        return f"{self.tenant_id}\x1f{self.profile_id}\x1f{self.profile_version}"


def parse_valid_until(value: str) -> datetime | None:
    """A claim's ``valid_until``: RFC3339 with an offset, or a plain date meaning the end of
    that day in UTC. ``None`` when it is neither (an empty value is "no end" to callers)."""
    value = value.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return datetime.combine(date.fromisoformat(value), time(23, 59, 59), UTC)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def query_terms(query: str) -> list[str]:
    """The words of a question that retrieval matches on: lower case, no stop words, no
    punctuation or search syntax, first occurrence order, at most :data:`MAX_QUERY_TERMS`."""
    terms = [t for t in _TERM.findall(query.casefold()) if t not in STOPWORDS]
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


class KnowledgeRepository:
    def __init__(self, store: Store, *, clock: Clock | None = None) -> None:
        self._store = store
        self._clock = clock or SystemClock()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), UTC)

    # ------------------------------------------------------------------------ loading

    async def sync_catalog(
        self, scope: Scope, claims: Sequence[Claim], *, approved_by: str
    ) -> CatalogSync:
        """Make the store's active claims of ``scope`` exactly ``claims``, with versions."""
        now = self._now()
        added: list[str] = []
        changed: list[str] = []
        unchanged: list[str] = []
        versions: dict[str, int] = {}
        async with self._store.write() as session:
            locking = self._store.dialect == "postgresql"
            rows = await _active_rows(session, scope, lock=locking)
            active = {row.claim_key: row for row in rows}
            latest = await _latest_versions(session, scope)
            for claim in claims:
                digest = content_hash(claim)
                row = active.pop(claim.key, None)
                if row is not None and row.content_hash == digest:
                    unchanged.append(claim.key)
                    versions[claim.key] = row.version
                    continue
                if row is not None:
                    await self._retire(session, row, now)
                version = latest.get(claim.key, 0) + 1
                await self._insert(session, scope, claim, version, digest, approved_by, now)
                (changed if row is not None else added).append(claim.key)
                versions[claim.key] = version
            for row in active.values():
                await self._retire(session, row, now)
        return CatalogSync(
            added=added, changed=changed, retired=sorted(active), unchanged=unchanged,
            versions=versions,
        )

    async def _insert(
        self, session: AsyncSession, scope: Scope, claim: Claim, version: int, digest: str,
        approved_by: str, now: datetime,
    ) -> None:
        row = ApprovedClaimRow(
            id=_claim_id(scope, claim.key, version), tenant_id=scope.tenant_id,
            profile_id=scope.profile_id, profile_version=scope.profile_version,
            claim_key=claim.key, version=version, text=claim.text,
            conditions=list(claim.conditions), topics=list(claim.topics), locale=claim.locale,
            search_text=search_text(claim), content_hash=digest, status="active",
            valid_from=now, valid_until=parse_valid_until(claim.valid_until)
            if claim.valid_until else None, retired_at=None,
        )
        session.add(row)
        for position, source in enumerate(claim.sources):
            evidence = await _evidence_source(
                session, scope.tenant_id, source.id, source.version, approved_by, now
            )
            session.add(ClaimEvidenceRow(
                claim_id=row.id, evidence_id=evidence.id, position=position,
                passage=source.passage, passage_sha256=_sha256(source.passage),
            ))
        await session.flush()
        if self._store.dialect == "sqlite":
            await session.execute(
                text(f"INSERT INTO {CLAIMS_FTS} (claim_id, scope, body) VALUES (:c, :s, :b)"),
                {"c": row.id, "s": scope.key, "b": row.search_text},
            )

    async def _retire(self, session: AsyncSession, row: ApprovedClaimRow, now: datetime) -> None:
        row.status = "retired"
        row.retired_at = now
        if self._store.dialect == "sqlite":
            await session.execute(
                text(f"DELETE FROM {CLAIMS_FTS} WHERE claim_id = :c"), {"c": row.id}
            )

    async def active_versions(self, scope: Scope) -> dict[str, int]:
        async with self._store.read() as session:
            return {row.claim_key: row.version for row in await _active_rows(session, scope)}

    async def claim_version(self, scope: Scope, key: str, at: datetime) -> int | None:
        """The version of a claim that was active at ``at`` (for reviews of past sessions)."""
        query = select(ApprovedClaimRow.version).where(
            *_in_scope(scope), ApprovedClaimRow.claim_key == key,
            ApprovedClaimRow.valid_from <= at,
            or_(ApprovedClaimRow.retired_at.is_(None), ApprovedClaimRow.retired_at > at),
        ).order_by(ApprovedClaimRow.version.desc())
        async with self._store.read() as session:
            return (await session.scalars(query)).first()

    # ------------------------------------------------------------------------ retrieval

    async def search(self, scope: Scope, query: str, *, limit: int = 3) -> list[ClaimHit]:
        """The best active, still-valid claims of ``scope`` for ``query``, best first."""
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        async with self._store.read() as session:
            if self._store.dialect == "postgresql":
                ranked = await self._rank_postgresql(session, scope, terms, limit)
            else:
                ranked = await self._rank_sqlite(session, scope, terms, limit)
            ranked = _above_cutoff(ranked)
            evidence = await _evidence_of(session, [row.id for row, _ in ranked])
        return [_hit(row, score, evidence.get(row.id, [])) for row, score in ranked]

    async def _rank_sqlite(
        self, session: AsyncSession, scope: Scope, terms: list[str], limit: int
    ) -> list[tuple[ApprovedClaimRow, float]]:
        """BM25 over the scope's usable claims only.

        FTS5 matches (Porter stemming, one ``MATCH`` per term, restricted to the scope), but its
        own ``bm25()`` takes document frequencies and the average length over the whole index,
        i.e. every profile's catalog, so the score is computed here from the scope's usable
        rows (active, still valid): N = their number, n_t = how many of them match term t,
        idf = ln(1 + (N - n_t + 0.5) / (n_t + 0.5)), document length = the words of the row's
        ``search_text`` (letters and digits, as FTS5's ``unicode61`` splits them), k1 = 1.2,
        b = 0.75. The term frequency is exact: the number of tokens FTS5 itself highlights for
        the term (its stem) in the row.
        """
        usable = (await session.execute(
            select(ApprovedClaimRow.id, ApprovedClaimRow.claim_key, ApprovedClaimRow.search_text)
            .where(*self._usable(scope))
        )).all()
        if not usable:
            return []
        keys = {str(claim_id): str(key) for claim_id, key, _ in usable}
        lengths = {str(claim_id): len(_TERM.findall(body.casefold()))
                   for claim_id, _, body in usable}
        count = len(lengths)
        average = sum(lengths.values()) / count or 1.0
        scores: dict[str, float] = {}
        for term in terms:
            found = await session.execute(
                text(
                    f"SELECT claim_id, highlight({CLAIMS_FTS}, 2, :mark, '') FROM {CLAIMS_FTS} "
                    f"WHERE {CLAIMS_FTS} MATCH :match AND scope = :scope"
                ),
                {"mark": _MARK, "match": f'"{term}"', "scope": scope.key},
            )
            frequencies = {
                str(claim_id): max(1, str(marked).count(_MARK))
                for claim_id, marked in found if str(claim_id) in lengths
            }
            if not frequencies:
                continue
            matching = len(frequencies)
            idf = math.log(1 + (count - matching + 0.5) / (matching + 0.5))
            for claim_id, tf in frequencies.items():
                norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[claim_id] / average)
                gain = idf * tf * (BM25_K1 + 1) / (tf + norm)
                scores[claim_id] = scores.get(claim_id, 0.0) + gain
        if not scores:
            return []
        best = sorted(scores, key=lambda claim_id: (-scores[claim_id], keys[claim_id]))[:limit]
        rows = {
            row.id: row
            for row in await session.scalars(
                select(ApprovedClaimRow).where(ApprovedClaimRow.id.in_(best))
            )
        }
        return [(rows[claim_id], scores[claim_id]) for claim_id in best if claim_id in rows]

    async def _rank_postgresql(
        self, session: AsyncSession, scope: Scope, terms: list[str], limit: int
    ) -> list[tuple[ApprovedClaimRow, float]]:
        vector = func.to_tsvector(text("'english'"), ApprovedClaimRow.search_text)
        tsquery = func.to_tsquery(text("'english'"), " | ".join(terms))
        score = func.ts_rank(vector, tsquery).label("score")
        query = (
            select(ApprovedClaimRow, score)
            .where(*self._usable(scope), vector.op("@@")(tsquery))
            .order_by(score.desc(), ApprovedClaimRow.claim_key)
            .limit(limit)
        )
        result = (await session.execute(query)).all()
        return [(found[0], float(found[1])) for found in result]

    def _usable(self, scope: Scope) -> list[Any]:
        now = self._now()
        return [
            *_in_scope(scope),
            ApprovedClaimRow.status == "active",
            or_(ApprovedClaimRow.valid_until.is_(None), ApprovedClaimRow.valid_until > now),
        ]


def content_hash(claim: Claim) -> str:
    """What makes a claim version: a change of any of these is a new version."""
    body = {
        "text": claim.text, "conditions": claim.conditions, "topics": claim.topics,
        "locale": claim.locale, "valid_until": claim.valid_until,
        "sources": [[s.id, s.version, s.passage] for s in claim.sources],
    }
    return _sha256(json.dumps(body, sort_keys=True, ensure_ascii=False))


def search_text(claim: Claim) -> str:
    return " ".join([claim.text, *claim.topics, *claim.conditions])


def _sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _claim_id(scope: Scope, key: str, version: int) -> str:
    return "clm_" + _sha256(f"{scope.key}\x1f{key}\x1f{version}")[:28]


def _in_scope(scope: Scope) -> list[Any]:
    return [
        ApprovedClaimRow.tenant_id == scope.tenant_id,
        ApprovedClaimRow.profile_id == scope.profile_id,
        ApprovedClaimRow.profile_version == scope.profile_version,
    ]


async def _active_rows(
    session: AsyncSession, scope: Scope, *, lock: bool = False
) -> list[ApprovedClaimRow]:
    query = select(ApprovedClaimRow).where(
        *_in_scope(scope), ApprovedClaimRow.status == "active"
    )
    if lock:
        query = query.with_for_update()  # PostgreSQL; SQLite writers already hold the lock
    return list(await session.scalars(query))


async def _latest_versions(session: AsyncSession, scope: Scope) -> dict[str, int]:
    query = select(ApprovedClaimRow.claim_key, func.max(ApprovedClaimRow.version)).where(
        *_in_scope(scope)
    ).group_by(ApprovedClaimRow.claim_key)
    return {key: int(version) for key, version in await session.execute(query)}


async def _evidence_source(
    session: AsyncSession, tenant_id: str, key: str, version: str, approved_by: str,
    now: datetime,
) -> EvidenceSourceRow:
    identity = f"{tenant_id}\x1f{key}\x1f{version}"
    source_id = "evs_" + _sha256(identity)[:28]
    row = await session.get(EvidenceSourceRow, source_id)
    if row is None:
        row = EvidenceSourceRow(
            id=source_id, tenant_id=tenant_id, source_key=key, title=key, uri="",
            version=version, sha256=_sha256(identity), approved_by=approved_by[:128],
            approved_at=now,
        )
        session.add(row)
        await session.flush()
    return row


async def _evidence_of(
    session: AsyncSession, claim_ids: list[str]
) -> dict[str, list[EvidenceRef]]:
    if not claim_ids:
        return {}
    query = (
        select(ClaimEvidenceRow.claim_id, EvidenceSourceRow.source_key, EvidenceSourceRow.version)
        .join(EvidenceSourceRow, EvidenceSourceRow.id == ClaimEvidenceRow.evidence_id)
        .where(ClaimEvidenceRow.claim_id.in_(claim_ids))
        .order_by(ClaimEvidenceRow.claim_id, ClaimEvidenceRow.position)
    )
    found: dict[str, list[EvidenceRef]] = {}
    for claim_id, key, version in await session.execute(query):
        found.setdefault(claim_id, []).append(EvidenceRef(source_id=key, version=version))
    return found


def _above_cutoff(
    ranked: list[tuple[ApprovedClaimRow, float]],
) -> list[tuple[ApprovedClaimRow, float]]:
    if not ranked:
        return []
    best = ranked[0][1]
    return [(row, score) for row, score in ranked if score >= best * RELATIVE_CUTOFF]


def _hit(row: ApprovedClaimRow, score: float, evidence: list[EvidenceRef]) -> ClaimHit:
    return ClaimHit(
        key=row.claim_key, text=row.text, conditions=list(row.conditions),
        topics=list(row.topics), version=row.version, evidence=evidence,
        score=round(score, 6),
    )


__all__ = [
    "CatalogSync",
    "ClaimHit",
    "EvidenceRef",
    "KnowledgeRepository",
    "Scope",
    "parse_valid_until",
    "query_terms",
]
