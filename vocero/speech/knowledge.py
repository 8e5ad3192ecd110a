"""``knowledge.search``: the built-in read tool that finds approved claims
(docs/grounding.md "`knowledge.search` (`server: vocero`)").

It implements the :class:`~vocero.contracts.builtins.BuiltinTools` port, so the policy plane
dispatches it through the same gate as any tool. It searches the catalog of the caller's own
profile (the session's tenant, profile and version; another tenant's catalog is never
searched) and returns, best first, each claim's key, approved text, conditions and evidence
references (source id and version, never the passage), plus ``best``: the claims to answer with
(the top hit and any near tie). Search words come from the model's ``query``, or from the
caller's last words when the model gave none.

:meth:`KnowledgeTools.sync` loads every profile's catalog into the store with versions; the
composition root calls it once at start-up.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import structlog

from vocero.contracts import values
from vocero.contracts.builtins import Canonical, CanonicalError, Context
from vocero.contracts.domain import AgentProfile
from vocero.contracts.ports import CallMeta, Clock, ToolResult
from vocero.speech import answering
from vocero.store.engine import Store
from vocero.store.knowledge import CatalogSync, ClaimHit, KnowledgeRepository, Scope
from vocero.store.repositories import Conversations

log = structlog.get_logger("vocero.knowledge")

KNOWLEDGE = "knowledge.search"
MAX_QUERY_CHARS = 256
NEAR_TIE = 0.8
"""A hit scoring at least this share of the best one is answered with too (at most two)."""
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "maxLength": MAX_QUERY_CHARS,
            "description": "The caller's question about policies, hours, returns, shipping, "
            "contact, in their own words",
        }
    },
    "required": ["query"],
}


class KnowledgeTools:
    """The ``knowledge.search`` built-in of ``server: vocero``."""

    def __init__(self, store: Store, *, clock: Clock | None = None, limit: int = 3) -> None:
        self._store = store
        self._repo = KnowledgeRepository(store, clock=clock)
        self._sessions = Conversations(store, clock=clock)
        self._limit = limit

    @property
    def repository(self) -> KnowledgeRepository:
        return self._repo

    async def sync(self, profiles: Iterable[AgentProfile]) -> dict[str, CatalogSync]:
        """Load every profile's catalog (docs/grounding.md) into the store, with versions."""
        done: dict[str, CatalogSync] = {}
        for profile in profiles:
            scope = Scope(profile.match.tenant, profile.id, profile.version)
            sync = await self._repo.sync_catalog(
                scope, profile.claims, approved_by=f"profile:{profile.id}@{profile.version}"
            )
            done[f"{profile.id}@{profile.version}"] = sync
            log.info(
                "knowledge.catalog_synced", profile_id=profile.id,
                profile_version=profile.version, added=len(sync.added),
                changed=len(sync.changed), retired=len(sync.retired),
                unchanged=len(sync.unchanged),
            )
        return done

    # ------------------------------------------------------------------------ the port

    def handles(self, tool: str) -> bool:
        return tool == KNOWLEDGE

    def schema(self, tool: str) -> dict[str, Any]:
        return SCHEMA

    def canonicalize(self, tool: str, arguments: dict[str, Any], ctx: Context) -> Canonical:
        query = " ".join(str(arguments.get("query") or "").split())
        if not query:
            query = next((m.content for m in reversed(ctx.history) if m.role == "user"), "")
            query = " ".join(query.split())
        if not query:
            raise CanonicalError("query", "missing", "What would you like to know?")
        return Canonical(arguments={"query": query[:MAX_QUERY_CHARS]})

    async def call(
        self, tool: str, arguments: dict[str, Any], meta: CallMeta, *, session_id: str
    ) -> ToolResult:
        if tool != KNOWLEDGE:
            return ToolResult(content={"error": "unknown_tool"}, is_error=True)
        scope = await self._scope(session_id, meta.principal.tenant_id)
        if scope is None:
            return ToolResult(content={"error": "no_catalog"}, is_error=True)
        query = str(arguments.get("query") or "")[:MAX_QUERY_CHARS]
        # "I'm 22, can I still rent?" asks about age, "how long does it go on for?" the running
        # time. (Words for money are not added: "price match" would then be answered with any
        # claim that says a fee.)
        asked = " ".join([query, *values.age_asked(query), *values.length_asked(query)])
        hits = await self._repo.search(scope, asked, limit=self._limit)
        return ToolResult(content=search_result(query, hits, asked=asked))

    async def _scope(self, session_id: str, tenant_id: str) -> Scope | None:
        """The catalog of the session's profile, and only of the caller's own tenant."""
        if not session_id:
            return None
        session = await self._sessions.get_session(session_id)
        if session is None or session.tenant_id != tenant_id:
            return None
        return Scope(session.tenant_id, session.profile_id, session.profile_version)


def search_result(query: str, hits: list[ClaimHit], *, asked: str = "") -> dict[str, Any]:
    """What the model (and the planner) sees of a search: no passages, no scores; only the
    claims that answer the question (:mod:`.answering`), those that cover it best, so a claim
    that merely shares a word ("price") is never offered as the answer. ``asked``: the question
    with the words it asks by another name (``values.asked_alike``), judged in its place."""
    hits = answering_hits(asked or query, hits)
    best = [h.key for h in hits if hits and h.score >= hits[0].score * NEAR_TIE][:2]
    return {
        "query": query,
        "claims": [
            {
                "key": h.key,
                "text": h.text,
                "conditions": list(h.conditions),
                "evidence": [{"source_id": e.source_id, "version": e.version} for e in h.evidence],
            }
            for h in hits
        ],
        "best": best,
    }


def answering_hits(query: str, hits: list[ClaimHit]) -> list[ClaimHit]:
    """The hits that answer ``query``, in their order: each covers enough of its key words
    (:func:`.answering.answers`) and as much of them as the best-covering hit does, judged
    first on the sentences that ask ("What happens on Christmas Day?" of a line that first
    says which day the caller's bins go out), then on the whole line."""
    asking = answering.asked_sentences(query)
    covers = {
        h.key: (answering.covered(asking, words), answering.covered(query, words))
        for h in hits
        if (words := _claim_words(h))
    }
    kept = [h for h in hits if answering.answers(query, _claim_words(h), h.topics)]
    top = max((covers[h.key] for h in kept), default=(0.0, 0.0))
    return [h for h in kept if covers[h.key] >= top]


def _claim_words(hit: ClaimHit) -> list[str]:
    return [hit.text, *hit.topics, *hit.conditions, hit.key.replace(".", " ").replace("_", " ")]
