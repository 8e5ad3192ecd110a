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


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-shared")


@pytest.fixture(scope="session", params=["stdio", "http"])
async def shared(request: pytest.FixtureRequest, shared_dir: Path) -> AsyncIterator[Stack]:
    transport: Transport = request.param
    folder = shared_dir / transport
    folder.mkdir()
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
