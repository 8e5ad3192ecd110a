"""A catalog edit and its rollback keep every claim version a unit may have cited (issue 32):
the knowledge store retires, never deletes, so ``claim_version(scope, key, planned_at)`` (what
``GET /v1/units`` evidence and ``vocero review`` resolve) answers the version in force when the
unit was planned, before the edit, after it and after the rollback. SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.app.test_profile_rollback import profile_copy
from tests.support.pg import BACKENDS, fresh_db
from vocero.app.adapters import profile_versions as pv
from vocero.app.adapters.profile_registry import ProfileRegistry
from vocero.app.settings import db_url
from vocero.contracts.domain import AgentProfile
from vocero.speech.knowledge import KnowledgeTools
from vocero.store.audit import AuditLog
from vocero.store.engine import Store
from vocero.store.knowledge import Scope
from vocero.store.migrate import upgrade_async
from vocero.store.profiles import ProfileVersions

OLD = "Our stores are open Monday to Friday from 9 AM to 6 PM."
NEW = "Our stores are open Monday to Friday from 8 AM to 6 PM."


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/v.db"
    else:
        with fresh_db() as found:
            yield found


@pytest.mark.anyio
async def test_units_citing_a_rolled_back_catalog_still_resolve(tmp_path: Path, url: str) -> None:
    profiles = profile_copy(tmp_path)
    await upgrade_async(db_url(url))
    store = Store.open(db_url(url))
    knowledge = KnowledgeTools(store)

    async def sync(profile: AgentProfile) -> None:
        await knowledge.sync([profile])

    registry = ProfileRegistry(profiles, ProfileVersions(store), AuditLog(store), on_change=sync)
    try:
        await registry.start()
        demo = registry.get("demo")
        assert demo is not None
        scope = Scope(demo.match.tenant, "demo", demo.version)
        before = datetime.now(UTC)

        catalog = profiles / "catalogs" / "demo.yaml"
        catalog.write_text(catalog.read_text().replace(OLD, NEW))
        await registry.refresh()
        edited = datetime.now(UTC)
        assert _text(registry.get("demo"), "hours.weekdays") == NEW
        history = await pv.history(store, "demo")
        assert history is not None and [r["revision"] for r in history] == [1, 2]
        assert {r["version"] for r in history} == {"1"}  # a catalog edit, same declared version

        await pv.rollback(store, "demo", "r1", actor="test", via="test")
        await registry.refresh()
        rolled = datetime.now(UTC)
        assert _text(registry.get("demo"), "hours.weekdays") == OLD

        repo = knowledge.repository
        assert await repo.claim_version(scope, "hours.weekdays", before) == 1
        assert await repo.claim_version(scope, "hours.weekdays", edited) == 2
        assert await repo.claim_version(scope, "hours.weekdays", rolled) == 3
        assert (await repo.active_versions(scope))["hours.weekdays"] == 3
        assert await repo.claim_version(scope, "hours.saturday", rolled) == 1  # untouched
    finally:
        await store.close()


def _text(profile: AgentProfile | None, key: str) -> str:
    assert profile is not None
    return next(claim.text for claim in profile.claims if claim.key == key)
