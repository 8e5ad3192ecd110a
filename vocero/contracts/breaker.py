"""A circuit breaker as a sans-IO transition table: consecutive dependency failures open it,
and after a cool-down one probe may pass.

It lives with the contracts because two planes call dependencies that can die: the MCP gateway
(one breaker per server) and the inference plane's serving engines (one per stage endpoint,
docs/deployment.md "Faults"). It is plain logic over a clock it is given; no I/O, no framework.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

BreakerState = Literal["closed", "open", "half_open"]
BreakerEvent = Literal["success", "failure", "trip", "cooldown_elapsed", "connected"]


class BreakerTransitionError(RuntimeError):
    """A (state, event) pair the table does not define."""


TRANSITIONS: dict[tuple[BreakerState, BreakerEvent], BreakerState] = {
    ("closed", "success"): "closed",
    ("closed", "failure"): "closed",
    ("closed", "trip"): "open",
    ("closed", "connected"): "closed",
    ("open", "failure"): "open",
    ("open", "trip"): "open",
    ("open", "cooldown_elapsed"): "half_open",
    ("open", "connected"): "half_open",
    ("open", "success"): "closed",
    ("half_open", "success"): "closed",
    ("half_open", "failure"): "open",
    ("half_open", "trip"): "open",
    ("half_open", "connected"): "half_open",
}
"""``connected`` is a successful (re)connection with a fresh tools/list: evidence enough to let
one probe through, not to close the breaker outright."""


def next_state(state: BreakerState, event: BreakerEvent) -> BreakerState:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise BreakerTransitionError(f"{state} does not accept {event}") from None


class CircuitBreaker:
    """Consecutive dependency failures open the breaker; after ``reset_s`` one probe may pass.

    Only failures that say the server is unhealthy count (timeouts, lost connections); a bad
    argument or a business refusal does not.
    """

    def __init__(
        self,
        *,
        threshold: int,
        reset_s: float,
        monotonic: Callable[[], float],
        on_change: Callable[[BreakerState, BreakerState], None] | None = None,
    ) -> None:
        self.state: BreakerState = "closed"
        self.failures = 0
        self._threshold = max(1, threshold)
        self._reset_s = reset_s
        self._monotonic = monotonic
        self._opened_at = 0.0
        self._probing = False
        self._on_change = on_change

    def allow(self) -> bool:
        """Whether a call may go out now; in half-open, only one probe at a time."""
        if self.state == "open" and self._monotonic() - self._opened_at >= self._reset_s:
            self._apply("cooldown_elapsed")
        if self.state == "closed":
            return True
        if self.state == "half_open" and not self._probing:
            self._probing = True
            return True
        return False

    def record_success(self) -> None:
        self.failures = 0
        self._probing = False
        self._apply("success")

    def record_failure(self) -> None:
        self.failures += 1
        self._probing = False
        self._apply("failure")
        if self.state == "half_open" or self.failures >= self._threshold:
            self._apply("trip")

    def release_probe(self) -> None:
        """A probe ended without a verdict (cancelled, refused locally)."""
        self._probing = False

    def record_connected(self) -> None:
        self._apply("connected")

    def _apply(self, event: BreakerEvent) -> None:
        before = self.state
        self.state = next_state(before, event)
        if self.state == "open" and (before != "open" or event == "trip"):
            self._opened_at = self._monotonic()
        if self.state != before and self._on_change is not None:
            self._on_change(before, self.state)
