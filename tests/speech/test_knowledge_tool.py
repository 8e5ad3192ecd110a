"""``knowledge.search`` as a built-in tool: canonical arguments from the conversation, the
catalog of the caller's own session profile only, and results without passages."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from vocero.contracts.builtins import BuiltinSet, CanonicalError, Context
from vocero.contracts.domain import AgentProfile, Claim, ClaimSource, Principal
from vocero.contracts.ports import CallMeta, Message
from vocero.speech.knowledge import KNOWLEDGE, KnowledgeTools
from vocero.store import Store
from vocero.store.repositories import Conversations

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def meta(tenant: str = "acme") -> CallMeta:
    principal = Principal(subject_ref="sub_x", tenant_id=tenant, scopes=[])
    return CallMeta(operation_id="op_1", principal=principal)


async def session(
    store: Store, session_id: str, tenant: str = "acme", profile: str = "demo"
) -> None:
    await Conversations(store).create_session(
        session_id=session_id, tenant_id=tenant, subject_ref="sub_x", profile_id=profile,
        profile_version="1",
    )


async def tools(store: Store, demo: AgentProfile) -> KnowledgeTools:
    knowledge = KnowledgeTools(store)
    synced = await knowledge.sync([demo])
    assert synced["demo@1"].added
    return knowledge


def test_the_query_comes_from_the_model_or_the_callers_last_words() -> None:
    tool = KnowledgeTools.__new__(KnowledgeTools)
    ctx = Context(tenant="acme", timezone="UTC", now=NOW, history=[
        Message(role="user", content="Hi"), Message(role="assistant", content="Hello"),
        Message(role="user", content="  what time do you   open on Saturdays? "),
    ])
    assert tool.canonicalize(KNOWLEDGE, {"query": " opening  hours "}, ctx).arguments == {
        "query": "opening hours"}
    assert tool.canonicalize(KNOWLEDGE, {}, ctx).arguments == {
        "query": "what time do you open on Saturdays?"}
    with pytest.raises(CanonicalError) as caught:
        tool.canonicalize(KNOWLEDGE, {"query": ""}, Context(tenant="a", timezone="UTC", now=NOW))
    assert caught.value.field == "query" and caught.value.question


async def test_a_search_returns_the_best_claims_without_passages(
    store: Store, demo: AgentProfile
) -> None:
    knowledge = await tools(store, demo)
    await session(store, "ses_1")
    result = await knowledge.call(
        KNOWLEDGE, {"query": "What time do you open on Saturdays?"}, meta(), session_id="ses_1"
    )
    assert not result.is_error
    content = result.content
    saturday = next(c for c in demo.claims if c.key == "hours.saturday")
    assert content["best"] == ["hours.saturday"]
    assert content["claims"][0] == {
        "key": "hours.saturday", "text": saturday.text, "conditions": [],
        "evidence": [{"source_id": s.id, "version": s.version} for s in saturday.sources],
    }
    assert "passage" not in str(content)
    assert all(s.passage not in str(content) for c in demo.claims for s in c.sources)


async def test_near_ties_are_both_offered_as_best(store: Store, demo: AgentProfile) -> None:
    knowledge = await tools(store, demo)
    await session(store, "ses_1")
    result = await knowledge.call(KNOWLEDGE, {"query": "returns"}, meta(), session_id="ses_1")
    assert 1 <= len(result.content["best"]) <= 2
    assert all(k.startswith("returns.") or k == "refunds.timing" for k in result.content["best"])


async def test_another_tenants_session_never_searches_this_catalog(
    store: Store, demo: AgentProfile
) -> None:
    knowledge = await tools(store, demo)
    await session(store, "ses_globex", tenant="globex", profile="demo")
    result = await knowledge.call(KNOWLEDGE, {"query": "open saturday"}, meta("globex"),
                                  session_id="ses_globex")
    assert result.content.get("claims", []) == []
    forged = await knowledge.call(KNOWLEDGE, {"query": "open saturday"}, meta("globex"),
                                  session_id="ses_missing")
    assert forged.is_error
    await session(store, "ses_acme")
    mismatched = await knowledge.call(KNOWLEDGE, {"query": "open"}, meta("globex"),
                                      session_id="ses_acme")
    assert mismatched.is_error and mismatched.content == {"error": "no_catalog"}


async def test_it_composes_with_other_built_ins(store: Store, demo: AgentProfile) -> None:
    knowledge = await tools(store, demo)
    builtins = BuiltinSet(knowledge)
    assert builtins.handles(KNOWLEDGE) and not builtins.handles("followups.record")
    assert builtins.schema(KNOWLEDGE)["required"] == ["query"]
    await session(store, "ses_1")
    result = await builtins.call(KNOWLEDGE, {"query": "talk to a person"}, meta(),
                                 session_id="ses_1")
    assert result.content["best"] == ["contact.person"]


def _claim(key: str, text: str, topics: list[str]) -> Claim:
    return Claim(key=key, text=text, topics=topics,
                 sources=[ClaimSource(id="terms", version="1", passage=text)])  # fmt: skip


async def test_a_question_asked_in_other_words_finds_the_claim_of_its_topic(
    store: Store, demo: AgentProfile
) -> None:
    """Issue 42: "I'm 22, can I still hire a kayak?" found the claims sharing "kayak" (fuel,
    abroad in the rental suite), not the one about age; "how much does it cost" finds a fee."""
    catalog = [
        _claim("hire.age", "Paddlers under 18 need an adult with them on the water.",
               ["age", "under 18", "minimum age"]),
        _claim("hire.kit", "Every kayak comes with a paddle, a buoyancy aid and a dry bag.",
               ["kit", "kayak", "paddle"]),
        _claim("hire.cancel", "Cancelling a kayak hire is free up to a day before; later a "
               "10 pound fee applies.", ["cancellation", "fee", "refund"]),
        _claim("hire.weather", "We close the water in winds over 25 knots; your kayak hire is "
               "then moved or refunded.", ["weather", "wind", "kayak"]),
    ]  # fmt: skip
    profile = msgspec.structs.replace(demo, id="paddle", claims=catalog)
    knowledge = KnowledgeTools(store)
    await knowledge.sync([profile])
    await session(store, "ses_paddle", profile="paddle")

    async def best(query: str) -> list[str]:
        result = await knowledge.call(KNOWLEDGE, {"query": query}, meta(), session_id="ses_paddle")
        assert result.content["query"] == query  # the caller's words, as they were asked
        return list(result.content["best"])

    assert await best("I'm 17, can I still hire a kayak?") == ["hire.age"]
    assert await best("How much does it cost to cancel my kayak?") == ["hire.cancel"]
    # A question about prices is not answered by whatever claim says a fee (Kestrel).
    assert "hire.cancel" not in await best("Do you price match if another shop quoted me less?")
