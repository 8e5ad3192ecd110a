"""Pins persist in the store's ``tool_pins`` table with every gateway pin state, on SQLite and
PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.pg import BACKENDS, clean_pg
from vocero.mcp_gateway.pin_store import SqlPinRepository
from vocero.mcp_gateway.pinning import ToolPin
from vocero.store.engine import Store
from vocero.store.migrate import upgrade_async

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/pins.db" if request.param == "sqlite" else clean_pg()


async def test_pins_round_trip_through_the_store(url: str) -> None:
    await upgrade_async(url)
    store = Store.open(url)
    try:
        repo = SqlPinRepository(store)
        pin = ToolPin(
            server="orders",
            tool="get_order_status",
            definition_hash="a" * 64,
            definition={"name": "get_order_status", "inputSchema": {"type": "object"}},
            status="approved",
            updated_at=1_780_000_000.0,
        )
        await repo.save(pin)
        changed = ToolPin(
            server="orders",
            tool="get_order_status",
            definition_hash="a" * 64,
            definition=pin.definition,
            status="changed",
            observed_hash="b" * 64,
            observed_definition={"name": "get_order_status", "description": "new"},
            updated_at=1_780_000_100.0,
        )
        await repo.save(changed)
        (loaded,) = await repo.load("orders")
        assert loaded.status == "changed"
        assert loaded.observed_hash == "b" * 64
        assert loaded.observed_definition == {"name": "get_order_status", "description": "new"}
        assert loaded.definition_hash == "a" * 64
        assert await repo.load("appointments") == []
    finally:
        await store.close()
