"""The lifecycle of a durable operation, as one sans-IO transition table.

::

    authorized --claim--> dispatch_pending --send--> in_flight --receipt--> committed
        |                    |      ^                   |  |
        |                    |      +--not sent---------+  +--refused--> rejected
        +--expired-----------+--expired/unavailable--> rejected
                                                        |
                                   timeout / crash ----+--> unknown --lookup: committed--> committed
                                                               | --lookup: not found--> in_flight
                                                               +--still unknown--> unknown

``unknown`` is never retried blindly: only a reconciliation (the tool's ``lookup_tool``) that
proves the operation absent, or a tool declared idempotent (the server deduplicates by
``io.vocero/operation_id``), lets it be sent again, always with the same operation id.
"""

from __future__ import annotations

from typing import Final

from vocero.contracts.events import ToolStatus
from vocero.policy.records import OperationRecord

TERMINAL: Final = frozenset({"committed", "rejected"})
SETTLED: Final = frozenset({"committed", "rejected", "unknown"})
"""Statuses after which the caller can be told something true."""

TRANSITIONS: Final[frozenset[tuple[str, str]]] = frozenset({
    ("authorized", "dispatch_pending"),
    ("authorized", "rejected"),
    ("dispatch_pending", "dispatch_pending"),
    ("dispatch_pending", "in_flight"),
    ("dispatch_pending", "rejected"),
    ("in_flight", "committed"),
    ("in_flight", "rejected"),
    ("in_flight", "unknown"),
    ("in_flight", "dispatch_pending"),
    ("unknown", "committed"),
    ("unknown", "in_flight"),
    ("unknown", "unknown"),
    ("unknown", "rejected"),
})


class InvalidOperationTransition(Exception):
    def __init__(self, current: str, new: str) -> None:
        super().__init__(f"no operation transition from {current} to {new}")
        self.current = current
        self.new = new


def check(current: str, new: ToolStatus) -> ToolStatus:
    if (current, new) not in TRANSITIONS:
        raise InvalidOperationTransition(current, new)
    return new


FINAL_UNKNOWN: Final = frozenset({"reconciliation_required", "reconciliation_failed"})
"""Unknown for good: the worker will not learn more without an operator."""


def settled(op: OperationRecord) -> bool:
    """``committed``, ``rejected``, or ``unknown`` with nothing more the worker can learn."""
    return op.status in TERMINAL or (op.status == "unknown" and op.reason_code in FINAL_UNKNOWN)
