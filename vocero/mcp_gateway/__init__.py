"""Enterprise integration plane: the only way to reach MCP servers.

Process-wide :class:`McpConnections` (one supervised client per server, started once with
``await tg.start(connections.run)``) and a per-session :class:`McpGateway` implementing
:class:`vocero.contracts.ports.ToolGateway`. Servers speak 2026-07-28 where they offer it and
2025-11-25 otherwise (docs/adr/0007); a server's questions during a call reach the caller
through ``ToolCallRequest.ask``. See ``docs/mcp.md``.
"""

from vocero.mcp_gateway.adapters import (
    CandidateAdapter_2026_07_28,
    NegotiatingAdapter,
    StableAdapter_2025_11_25,
    StatelessAdapter_2026_07_28,
    select_adapter,
)
from vocero.mcp_gateway.askable import answer_problems
from vocero.mcp_gateway.auth_flow import AuthOptions
from vocero.mcp_gateway.calls import SdkCallObserver
from vocero.mcp_gateway.connection import McpConnections, ServerConnection
from vocero.mcp_gateway.consent import (
    CALLBACK_PARAMETERS,
    InMemoryConsentRepository,
    OperatorConsent,
    PendingConsent,
    callback_problem,
)
from vocero.mcp_gateway.delegation import CallerCredentials, DelegationUnavailable, SubjectTokens
from vocero.mcp_gateway.errors import (
    INPUT_REASONS,
    CandidateDisabledError,
    InvalidToolArgumentsError,
    ServerAuthError,
    ServerRefusedError,
    ToolBusyError,
    ToolInputError,
    ToolSecretInputError,
    public_error,
)
from vocero.mcp_gateway.gateway import CallObserver, McpGateway, wire_meta
from vocero.mcp_gateway.oauth import (
    ConsentResult,
    InMemoryOAuthTokenRepository,
    OAuthTokenRepository,
    Sealer,
)
from vocero.mcp_gateway.outbox import record_safely
from vocero.mcp_gateway.pinning import (
    InMemoryPinRepository,
    PinRepository,
    ToolPin,
    definition_hash,
)
from vocero.mcp_gateway.settings import (
    AUTO_PROTOCOL,
    CANDIDATE_PROTOCOL,
    STABLE_PROTOCOL,
    STATELESS_PROTOCOL,
    GatewaySettings,
)

__all__ = [
    "AUTO_PROTOCOL",
    "CALLBACK_PARAMETERS",
    "CANDIDATE_PROTOCOL",
    "INPUT_REASONS",
    "STABLE_PROTOCOL",
    "STATELESS_PROTOCOL",
    "AuthOptions",
    "CallObserver",
    "CallerCredentials",
    "CandidateAdapter_2026_07_28",
    "CandidateDisabledError",
    "ConsentResult",
    "DelegationUnavailable",
    "GatewaySettings",
    "InMemoryConsentRepository",
    "InMemoryOAuthTokenRepository",
    "InMemoryPinRepository",
    "InvalidToolArgumentsError",
    "McpConnections",
    "McpGateway",
    "NegotiatingAdapter",
    "OAuthTokenRepository",
    "OperatorConsent",
    "PendingConsent",
    "PinRepository",
    "SdkCallObserver",
    "Sealer",
    "ServerAuthError",
    "ServerConnection",
    "ServerRefusedError",
    "StableAdapter_2025_11_25",
    "StatelessAdapter_2026_07_28",
    "SubjectTokens",
    "ToolBusyError",
    "ToolInputError",
    "ToolPin",
    "ToolSecretInputError",
    "answer_problems",
    "callback_problem",
    "definition_hash",
    "public_error",
    "record_safely",
    "select_adapter",
    "wire_meta",
]
