"""Operators' consents persist in the store's ``mcp_oauth_consents`` table, on SQLite and
PostgreSQL: listed while pending and unexpired, found by a read, answered once (compare-and-set),
taken, closed (``failed`` too: migration 0010)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.pg import BACKENDS, clean_pg
from vocero.mcp_gateway.consent import PendingConsent
from vocero.mcp_gateway.oauth_store import SqlConsentRepository
from vocero.store.engine import Store
from vocero.store.migrate import upgrade_async

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/consents.db"
    return clean_pg()


def _consent(consent_id: str, minutes: int = 15) -> PendingConsent:
    return PendingConsent(
        id=consent_id,
        server="crm",
        node_id="node_a",
        authorization_url=f"https://login.example.com/authorize?state={consent_id}",
        status="pending",
        created_at=NOW,
        expires_at=NOW + timedelta(minutes=minutes),
    )


async def test_consents_round_trip_through_the_store(url: str) -> None:
    await upgrade_async(url)
    store = Store.open(url)
    try:
        repo = SqlConsentRepository(store)
        await repo.open(_consent("cns_1"), "a" * 64)
        await repo.open(_consent("cns_2", minutes=1), "b" * 64)
        listed = await repo.pending(NOW)
        assert [c.id for c in listed] == ["cns_1", "cns_2"]
        assert listed[0] == _consent("cns_1")
        assert await repo.take("cns_1") is None  # nothing answered yet
        assert await repo.find("a" * 64, NOW) == _consent("cns_1")  # read only: still pending
        assert await repo.find("c" * 64, NOW) is None
        answered = await repo.answer("a" * 64, "sealed-answer", NOW)
        assert answered is not None and (answered.id, answered.status) == ("cns_1", "answered")
        assert await repo.answer("a" * 64, "another", NOW) is None, "answered once"
        assert await repo.take("cns_1") == "sealed-answer"
        assert [c.id for c in await repo.pending(NOW)] == ["cns_2"]
        later = NOW + timedelta(minutes=2)
        assert await repo.find("a" * 64, NOW) is None, "answered: not pending any more"
        assert await repo.find("b" * 64, later) is None, "expired"
        assert await repo.answer("b" * 64, "too-late", later) is None, "expired"
        assert await repo.pending(later) == []
        assert await repo.answer("c" * 64, "unknown", NOW) is None
        await repo.close("cns_1", "failed")  # the token exchange refused the code
        assert await repo.take("cns_1") is None  # the answer is gone with the close
    finally:
        await store.close()
