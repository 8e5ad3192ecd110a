"""Tunables of the MCP gateway. Defaults are production-safe; tests shrink the waits."""

from __future__ import annotations

from dataclasses import dataclass

STABLE_PROTOCOL = "2025-11-25"
CANDIDATE_PROTOCOL = "2026-07-28"


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewaySettings:
    allow_candidate: bool = False
    """Process-wide switch for :class:`CandidateAdapter_2026_07_28`. A server asks for it with
    ``protocol: "2026-07-28"``; without this switch such a server is refused, never downgraded."""

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

    connect_timeout_s: float = 10.0
    reconnect_initial_s: float = 0.2
    reconnect_max_s: float = 5.0
    relist_interval_s: float | None = 300.0
    """Re-run tools/list this often even without a list-changed notification (``None``: never)."""

    auto_approve_first_seen: bool = True
    """Trust on first use: a tool never seen before is pinned as listed. With ``False`` it waits
    for an operator's approval like a changed one."""
