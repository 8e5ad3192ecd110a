"""MCP gateway tests run on asyncio through the anyio pytest plugin.

The shared stack (orders, appointments and admin fixture servers behind one running gateway) is
started once per transport for the whole session: a fixture server takes about a second to
start, and most contract tests only read or use their own operation ids and appointments.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from gateway_support import Stack, Transport, gateway_stack


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-shared")


# Module scope, not session: while an async fixture is alive the anyio plugin keeps its event loop
# running in the main thread, and later tests that call ``anyio.run`` would find it there.
@pytest.fixture(scope="module", params=["stdio", "http"])
async def shared(request: pytest.FixtureRequest, shared_dir: Path) -> AsyncIterator[Stack]:
    transport: Transport = request.param
    folder = shared_dir / transport
    folder.mkdir(exist_ok=True)
    servers = {
        "orders": (
            "orders_server.py",
            {
                "VOCERO_MCP_RECORD": str(folder / "orders.jsonl"),
                "VOCERO_MCP_CORRUPT": "get_order_status=BAD1",
            },
        ),
        "appointments": (
            "appointments_server.py",
            {
                "VOCERO_MCP_RECORD": str(folder / "appointments.jsonl"),
                "VOCERO_MCP_STATE": str(folder / "appointments.json"),
            },
        ),
    }
    async with gateway_stack(transport, servers, folder=folder) as stack:
        yield stack
