"""One tenant's catalog never changes another tenant's answers: claims are ranked with statistics
of the searched scope's usable claims only, whatever else the store holds (other profiles and
tenants, retired versions)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from vocero.contracts.domain import AgentProfile, Claim, ClaimSource
from vocero.identity.profiles import load_profiles
from vocero.speech.knowledge import search_result
from vocero.store import Store
from vocero.store.knowledge import KnowledgeRepository, Scope

pytestmark = pytest.mark.anyio

ACME = Scope("acme", "demo", "1")
GLOBEX = Scope("globex", "shop", "1")
FIXTURES = Path(__file__).parents[2] / "fixtures"


def claim(key: str, text: str, *topics: str) -> Claim:
    source = ClaimSource(id=f"{key}-doc", version="1", passage=f"Passage behind {key}.")
    fields: dict[str, object] = {
        "key": key, "text": text, "topics": list(topics), "sources": [source],
    }
    return msgspec.convert(msgspec.to_builtins(fields), Claim)


ACME_CLAIMS = [
    claim("hours.weekdays", "Our stores are open Monday to Friday from 9 AM to 6 PM.",
          "opening hours", "open", "weekdays"),
    claim("hours.saturday", "On Saturdays our stores are open from 10 AM to 2 PM.",
          "opening hours", "open", "saturday"),
    claim("returns.unopened", "Unopened items can be returned within 30 days for a refund.",
          "returns", "return", "unopened", "refund"),
    claim("returns.opened", "Opened items can be returned within 14 days for store credit.",
          "returns", "return", "opened", "store credit"),
    claim("shipping.times", "Standard shipping takes 3 to 5 business days.",
          "shipping", "delivery", "how long"),
]
# Another tenant whose words overlap: many claims about opening, items and returns.
GLOBEX_CLAIMS = [
    claim(f"globex.{n}", f"Globex branch {n} is open late and opened items return to stock.",
          "open", "opened", "items", "return")
    for n in range(12)
] + [
    claim("globex.shipping", "Globex shipping takes two days, shipping is free, shipping daily.",
          "shipping", "shipping"),
]
# Versions of Acme claims that later retire: a changed wording and claims gone from the catalog.
ACME_EARLIER = [
    *[c for c in ACME_CLAIMS if c.key != "returns.opened"],
    claim("returns.opened", "Opened items open returns: open, opened, opening items returned.",
          "open", "opened"),
    *[claim(f"old.{n}", "Opened items return open Saturday shipping store.", "open")
      for n in range(6)],
]
QUERIES = [
    "Can I return an opened item?",
    "I'd like to send back something unopened",
    "What time do you open on Saturdays?",
    "Are you open on weekdays?",
    "How long does shipping take?",
    "store credit",
    "open items return shipping",
]


async def rankings(
    repo: KnowledgeRepository, scope: Scope, queries: list[str]
) -> dict[str, tuple[list[tuple[str, float]], list[str]]]:
    found = {}
    for query in queries:
        hits = await repo.search(scope, query, limit=5)
        found[query] = ([(h.key, h.score) for h in hits], search_result(query, hits)["best"])
    return found


async def test_another_scopes_catalog_and_retired_versions_leave_the_ranking_as_it_was(
    store: Store,
) -> None:
    repo = KnowledgeRepository(store)
    await repo.sync_catalog(ACME, ACME_CLAIMS, approved_by="t")
    alone = await rankings(repo, ACME, QUERIES)
    assert all(alone[query][0] for query in QUERIES)

    await repo.sync_catalog(GLOBEX, GLOBEX_CLAIMS, approved_by="t")
    assert await rankings(repo, ACME, QUERIES) == alone

    await repo.sync_catalog(ACME, ACME_EARLIER, approved_by="t")
    sync = await repo.sync_catalog(ACME, ACME_CLAIMS, approved_by="t")
    assert sync.changed == ["returns.opened"] and len(sync.retired) == 6
    assert await rankings(repo, ACME, QUERIES) == alone


DEMO_QUESTIONS = [
    "Can I return an opened item?",
    "I'd like to send back something still sealed, unopened",
    "What time do you open on Saturdays?",
    "Are you open on Sunday?",
    "What are your opening hours?",
    "How long does shipping take?",
    "Can I talk to a real person?",
    "When do I get my refund?",
]


def profile(name: str) -> AgentProfile:
    found = load_profiles(FIXTURES / "profiles").get(name)
    assert found is not None
    return found


def scope_of(found: AgentProfile) -> Scope:
    return Scope(found.match.tenant, found.id, found.version)


async def test_the_demo_answers_are_the_same_with_the_harbor_catalog_in_the_store(
    store: Store,
) -> None:
    demo, harbor = profile("demo"), profile("harbor")
    repo = KnowledgeRepository(store)
    await repo.sync_catalog(scope_of(demo), demo.claims, approved_by="t")
    alone = await rankings(repo, scope_of(demo), DEMO_QUESTIONS)
    await repo.sync_catalog(scope_of(harbor), harbor.claims, approved_by="t")
    together = await rankings(repo, scope_of(demo), DEMO_QUESTIONS)
    assert together == alone
    assert together["Can I return an opened item?"][1] == ["returns.opened"]
