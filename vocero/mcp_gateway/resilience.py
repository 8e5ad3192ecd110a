"""Execution controls that keep one slow or dead server from taking the conversation down:
a circuit breaker per server (the sans-IO table of ``contracts/breaker.py``), bulkheads per
server and per tool, and jittered backoff for the few calls that may be retried.
"""

from __future__ import annotations

import random

from vocero.contracts.breaker import (
    TRANSITIONS,
    BreakerEvent,
    BreakerState,
    BreakerTransitionError,
    CircuitBreaker,
    next_state,
)

__all__ = [
    "TRANSITIONS",
    "BreakerEvent",
    "BreakerState",
    "BreakerTransitionError",
    "Bulkhead",
    "CircuitBreaker",
    "backoff_delay",
    "next_state",
]


class Bulkhead:
    """A bounded count of calls in flight. Full means refuse now: callers never queue."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.in_flight = 0

    def try_enter(self) -> bool:
        if self.in_flight >= self.limit:
            return False
        self.in_flight += 1
        return True

    def leave(self) -> None:
        self.in_flight -= 1


def backoff_delay(
    attempt: int, base_s: float, cap_s: float, rng: random.Random | None = None
) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**attempt)]."""
    draw = (rng or random).uniform
    return draw(0.0, min(cap_s, base_s * (2**attempt)))
