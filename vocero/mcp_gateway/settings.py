"""Tunables of the MCP gateway. Defaults are production-safe; tests shrink the waits."""

from __future__ import annotations

from dataclasses import dataclass

STABLE_PROTOCOL = "2025-11-25"
STATELESS_PROTOCOL = "2026-07-28"
CANDIDATE_PROTOCOL = STATELESS_PROTOCOL
"""Former name of 2026-07-28, kept for callers; supported since docs/adr/0007."""
AUTO_PROTOCOL = "auto"
SUPPORTED_PROTOCOLS = (STABLE_PROTOCOL, STATELESS_PROTOCOL)


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewaySettings:
    max_result_bytes: int = 64 * 1024
    """A result larger than this (text plus structured content, encoded) never reaches the model."""
    max_argument_bytes: int = 16 * 1024
    max_schema_bytes: int = 64 * 1024
    max_schema_depth: int = 32
    strict_arguments: bool = True
    """Refuse argument names a schema does not declare, even where JSON Schema would allow them."""

    tool_concurrency: int = 4
    """Bulkhead per tool; the server's ``max_concurrency`` is the bulkhead per server."""
    breaker_failure_threshold: int = 3
    """Consecutive dependency failures (timeouts, lost connections) that open a server's breaker."""
    breaker_reset_s: float = 5.0
    """How long an open breaker refuses calls before it lets one probe through."""

    read_retries: int = 1
    """Extra attempts for ``read`` tools declared ``idempotent`` when the server is unavailable."""
    retry_base_s: float = 0.05
    reissue_broken_streams: int = 1
    """2026-07-28 over HTTP has no stream resumption: a call whose response stream broke is sent
    again this many times, with a new request id and the same ``io.vocero/operation_id`` (the
    server's idempotency key, docs/mcp.md "A call")."""

    connect_timeout_s: float = 10.0
    reconnect_initial_s: float = 0.2
    reconnect_max_s: float = 5.0
    relist_interval_s: float | None = 300.0
    """Re-run tools/list this often even without a list-changed notification (``None``: never).
    Also the cap on a server's ``ttlMs``: a listing is never trusted for longer."""
    min_relist_interval_s: float = 1.0
    """A stale listing (``ttlMs`` elapsed) is fetched again in the background when a call needs
    it, but never more often than this."""

    auto_approve_first_seen: bool = True
    """Trust on first use: a tool never seen before is pinned as listed. With ``False``
    (``serve --tool-approval review``) it is ``pending`` and cannot be called until an operator
    approves its definition hash, like a changed one."""
    review_servers: frozenset[str] = frozenset()
    """Servers whose first-seen tools wait for an operator whatever ``auto_approve_first_seen``
    says: those of a profile with ``tool_approval: review`` (the stricter setting wins)."""

    def auto_approves(self, server: str) -> bool:
        """Whether a tool ``server`` lists for the first time is approved on sight."""
        return self.auto_approve_first_seen and server not in self.review_servers

    input_timeout_s: float = 60.0
    """How long a server's question may wait for the caller's answer before it is cancelled."""
    max_input_fields: int = 8
    """A question asking for more fields than this is refused (a caller answers by voice)."""
