"""Claim catalogs in the store: versioned loading and full-text ranking, on SQLite (FTS5) and,
with ``VOCERO_TEST_PG_URL``, PostgreSQL full-text search behind the same calls."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest
import sqlalchemy as sa

from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import AgentProfile, Claim, ClaimSource
from vocero.store import Store
from vocero.store.knowledge import KnowledgeRepository, Scope, query_terms
from vocero.store.models import ApprovedClaimRow, ClaimEvidenceRow, EvidenceSourceRow

pytestmark = pytest.mark.anyio

DEMO = Scope("acme", "demo", "1")


def claim(key: str, text: str, **changes: object) -> Claim:
    source = ClaimSource(id=f"{key}-doc", version="1", passage=f"Passage behind {key}.")
    fields: dict[str, object] = {"key": key, "text": text, "sources": [source], **changes}
    return msgspec.convert(msgspec.to_builtins(fields), Claim)


async def loaded(
    store: Store, demo: AgentProfile, clock: VirtualClock | None = None
) -> KnowledgeRepository:
    repo = KnowledgeRepository(store, clock=clock)
    await repo.sync_catalog(DEMO, demo.claims, approved_by="profile:demo@1")
    return repo


@pytest.mark.parametrize(
    ("question", "best"),
    [
        ("What time do you open on Saturdays?", "hours.saturday"),
        ("Are you open on Sunday?", "hours.sunday_holidays"),
        ("Can I return an opened item?", "returns.opened"),
        ("I'd like to send back something still sealed, unopened", "returns.unopened"),
        ("How long does shipping take?", "shipping.times"),
        ("Can I talk to a real person?", "contact.person"),
        ("How much does it cost to cancel my appointment?", "appointments.changes"),
        ("When do I get my refund?", "refunds.timing"),
    ],
)
async def test_the_demo_catalog_ranks_the_claim_that_answers_first(
    store: Store, demo: AgentProfile, question: str, best: str
) -> None:
    hits = await (await loaded(store, demo)).search(DEMO, question)
    assert hits, question
    assert hits[0].key == best
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(hits) <= 3


async def test_a_question_the_catalog_does_not_cover_finds_nothing(
    store: Store, demo: AgentProfile
) -> None:
    repo = await loaded(store, demo)
    assert await repo.search(DEMO, "What is the meaning of life?") == []
    assert await repo.search(DEMO, "what is it?") == []  # only stop words
    assert await repo.search(DEMO, "") == []


async def test_hits_carry_wording_conditions_and_evidence_but_no_passage(
    store: Store, demo: AgentProfile
) -> None:
    [top, *_] = await (await loaded(store, demo)).search(DEMO, "return opened item")
    source = next(c for c in demo.claims if c.key == "returns.opened")
    assert top.text == source.text
    assert top.conditions == source.conditions
    assert [(e.source_id, e.version) for e in top.evidence] == [
        (s.id, s.version) for s in source.sources
    ]
    assert "passage" not in msgspec.json.encode(top).decode()
    assert top.version == 1


@pytest.mark.parametrize(
    "query",
    ['open" OR "x', "open*", "NEAR(open saturday)", "open AND -saturday", "open's; DROP TABLE",
     "saturday:*", "(open | !x)", "\\x00 open"],
)
async def test_search_syntax_in_a_question_is_only_words(
    store: Store, demo: AgentProfile, query: str
) -> None:
    hits = await (await loaded(store, demo)).search(DEMO, query)
    assert all(h.key.startswith(("hours.", "contact.", "returns.")) for h in hits)


def test_query_terms_drop_stop_words_and_punctuation() -> None:
    assert query_terms("What time do you OPEN on Saturdays?!") == ["time", "open", "saturdays"]
    assert query_terms('"a" OR b*') == ["b"]


async def test_a_changed_claim_gets_a_new_version_and_the_old_one_retires(store: Store) -> None:
    repo = KnowledgeRepository(store)
    first = [claim("hours", "We open at 9 AM."), claim("returns", "Returns within 30 days.")]
    sync = await repo.sync_catalog(DEMO, first, approved_by="t")
    assert sync.added == ["hours", "returns"] and sync.versions == {"hours": 1, "returns": 1}
    second = [claim("hours", "We open at 10 AM."), claim("returns", "Returns within 30 days.")]
    sync = await repo.sync_catalog(DEMO, second, approved_by="t")
    assert (sync.changed, sync.unchanged, sync.added) == (["hours"], ["returns"], [])
    assert sync.versions == {"hours": 2, "returns": 1}
    assert await repo.active_versions(DEMO) == {"hours": 2, "returns": 1}
    [hit] = await repo.search(DEMO, "what time do you open")
    assert (hit.text, hit.version) == ("We open at 10 AM.", 2)
    async with store.read() as session:
        rows = (await session.scalars(
            sa.select(ApprovedClaimRow).where(ApprovedClaimRow.claim_key == "hours")
            .order_by(ApprovedClaimRow.version)
        )).all()
    assert [(r.version, r.status, r.text) for r in rows] == [
        (1, "retired", "We open at 9 AM."), (2, "active", "We open at 10 AM."),
    ]


async def test_a_claim_gone_from_the_catalog_is_retired_and_never_found(store: Store) -> None:
    repo = KnowledgeRepository(store)
    await repo.sync_catalog(DEMO, [claim("hours", "We open at 9 AM.")], approved_by="t")
    sync = await repo.sync_catalog(DEMO, [], approved_by="t")
    assert sync.retired == ["hours"]
    assert await repo.search(DEMO, "open") == []
    sync = await repo.sync_catalog(DEMO, [claim("hours", "We open at 9 AM.")], approved_by="t")
    assert sync.versions == {"hours": 2}  # back, as a new version: history is never rewritten


async def test_a_reload_of_the_same_catalog_changes_nothing(
    store: Store, demo: AgentProfile
) -> None:
    repo = await loaded(store, demo)
    sync = await repo.sync_catalog(DEMO, demo.claims, approved_by="profile:demo@1")
    assert sync.unchanged == [c.key for c in demo.claims]
    assert not (sync.added or sync.changed or sync.retired)
    assert len(await repo.search(DEMO, "open saturday")) >= 1


async def test_an_expired_claim_is_not_found(store: Store) -> None:
    clock = VirtualClock(start=1_780_000_000.0)  # 2026-05-28
    repo = KnowledgeRepository(store, clock=clock)
    claims = [
        claim("sale", "The winter sale ends soon.", valid_until="2026-05-29"),
        claim("hours", "Winter opening hours start in May."),
    ]
    await repo.sync_catalog(DEMO, claims, approved_by="t")
    assert {h.key for h in await repo.search(DEMO, "winter")} == {"sale", "hours"}
    clock.advance(3 * 86400)
    assert {h.key for h in await repo.search(DEMO, "winter")} == {"hours"}


async def test_catalogs_of_other_profiles_and_tenants_stay_apart(store: Store) -> None:
    repo = KnowledgeRepository(store)
    await repo.sync_catalog(DEMO, [claim("hours", "Acme opens at 9 AM.")], approved_by="t")
    other = Scope("globex", "globex", "1")
    await repo.sync_catalog(other, [claim("hours", "Globex opens at 8 AM.")], approved_by="t")
    newer = Scope("acme", "demo", "2")
    await repo.sync_catalog(newer, [claim("hours", "Acme opens at 10 AM.")], approved_by="t")
    assert [h.text for h in await repo.search(DEMO, "opens")] == ["Acme opens at 9 AM."]
    assert [h.text for h in await repo.search(other, "opens")] == ["Globex opens at 8 AM."]
    assert [h.text for h in await repo.search(newer, "opens")] == ["Acme opens at 10 AM."]


async def test_sources_are_stored_once_per_version_with_each_claims_passage(
    store: Store, demo: AgentProfile
) -> None:
    await loaded(store, demo)
    async with store.read() as session:
        sources = (await session.scalars(sa.select(EvidenceSourceRow))).all()
        links = (await session.scalars(sa.select(ClaimEvidenceRow))).all()
    cited = {(s.id, s.version) for c in demo.claims for s in c.sources}
    assert {(s.source_key, s.version) for s in sources} == cited
    assert len(sources) == len(cited)
    passages = {s.passage for c in demo.claims for s in c.sources}
    assert {link.passage for link in links} == passages
    assert len(links) == sum(len(c.sources) for c in demo.claims)


async def test_the_version_active_at_a_moment_is_found_for_reviews(store: Store) -> None:
    clock = VirtualClock()
    repo = KnowledgeRepository(store, clock=clock)
    await repo.sync_catalog(DEMO, [claim("hours", "We open at 9 AM.")], approved_by="t")
    clock.advance(60)
    between = datetime.fromtimestamp(clock.now(), UTC)
    clock.advance(60)
    await repo.sync_catalog(DEMO, [claim("hours", "We open at 10 AM.")], approved_by="t")
    clock.advance(60)
    after = datetime.fromtimestamp(clock.now(), UTC)
    assert await repo.claim_version(DEMO, "hours", between) == 1
    assert await repo.claim_version(DEMO, "hours", after) == 2
    assert await repo.claim_version(DEMO, "unknown", after) is None
