"""Enterprise integration plane: the only way to reach MCP servers.

Process-wide :class:`McpConnections` (one supervised client per server, started once with
``await tg.start(connections.run)``) and a per-session :class:`McpGateway` implementing
:class:`vocero.contracts.ports.ToolGateway`. See ``docs/mcp.md``.
"""

from vocero.mcp_gateway.adapters import (
    CandidateAdapter_2026_07_28,
    StableAdapter_2025_11_25,
    select_adapter,
)
from vocero.mcp_gateway.connection import McpConnections, ServerConnection
from vocero.mcp_gateway.errors import (
    CandidateDisabledError,
    InvalidToolArgumentsError,
    ToolBusyError,
    public_error,
)
from vocero.mcp_gateway.gateway import CallObserver, McpGateway, wire_meta
from vocero.mcp_gateway.pinning import (
    InMemoryPinRepository,
    PinRepository,
    ToolPin,
    definition_hash,
)
from vocero.mcp_gateway.settings import CANDIDATE_PROTOCOL, STABLE_PROTOCOL, GatewaySettings

__all__ = [
    "CANDIDATE_PROTOCOL",
    "STABLE_PROTOCOL",
    "CallObserver",
    "CandidateAdapter_2026_07_28",
    "CandidateDisabledError",
    "GatewaySettings",
    "InMemoryPinRepository",
    "InvalidToolArgumentsError",
    "McpConnections",
    "McpGateway",
    "PinRepository",
    "ServerConnection",
    "StableAdapter_2025_11_25",
    "ToolBusyError",
    "ToolPin",
    "definition_hash",
    "public_error",
    "select_adapter",
    "wire_meta",
]
