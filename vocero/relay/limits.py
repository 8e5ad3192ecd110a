"""Relay limits: per-connection envelope limits (frame size, audio length, frame rate, garbage
tolerance), pending connections per address, and audit coalescing."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    max_frame_bytes: int = 64 * 1024
    max_audio_ms: int = 200
    max_frames_per_s: int = 100
    strikes_to_close: int = 10
    """Consecutive rejected frames (garbage, oversize, flood) after which the connection closes."""
    connect_timeout_s: float = 10.0


class RateWindow:
    """Sliding one-second window of frame arrival times."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._arrivals: deque[float] = deque()

    def admit(self, now: float) -> bool:
        while self._arrivals and now - self._arrivals[0] >= 1.0:
            self._arrivals.popleft()
        if len(self._arrivals) >= self._limit:
            return False
        self._arrivals.append(now)
        return True


class Strikes:
    """Counts consecutive rejected frames; any accepted frame clears the count."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self.count = 0

    def hit(self) -> bool:
        """Record a rejected frame; True when the client should be disconnected."""
        self.count += 1
        return self.count >= self._limit

    def clear(self) -> None:
        self.count = 0


class PendingConnections:
    """Connections per client address that are open but not yet authenticated.

    One address may hold at most ``limit`` such connections; past it a new upgrade is refused
    before it is accepted, so sockets that never send ``session.connect.v1`` cannot pile up
    (each would otherwise be held for the whole connect timeout)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._by_address: dict[str, int] = {}

    def enter(self, address: str) -> bool:
        """Count one more pending connection of ``address``; False (nothing counted) when it
        already holds ``limit``."""
        held = self._by_address.get(address, 0)
        if held >= self.limit:
            return False
        self._by_address[address] = held + 1
        return True

    def leave(self, address: str) -> None:
        held = self._by_address.get(address, 0) - 1
        if held > 0:
            self._by_address[address] = held
        else:
            self._by_address.pop(address, None)

    def held(self, address: str) -> int:
        return self._by_address.get(address, 0)


class AuditCoalescer:
    """Keeps a client's configuration updates from growing the audit log without bound.

    The first update with a given difference (fields applied, fields rejected and why) is
    audited in full; an identical one later on the same connection is only counted, and so is
    any difference past the first ``max_distinct``. What was counted is audited once, as one
    summary event, when the connection ends. Every event that is written is an ordinary chained
    audit event, so the chain stays verifiable."""

    def __init__(self, max_distinct: int = 16) -> None:
        self.max_distinct = max_distinct
        self._seen: set[tuple[tuple[str, ...], ...]] = set()
        self.repeats = 0

    def admit(self, difference: tuple[tuple[str, ...], ...]) -> bool:
        """True when this difference is to be audited now; False: counted as a repeat."""
        if difference in self._seen or len(self._seen) >= self.max_distinct:
            self.repeats += 1
            return False
        self._seen.add(difference)
        return True

    def take_summary(self) -> dict[str, int] | None:
        """The summary event's data (counting starts again), or ``None`` when nothing was
        coalesced since the last summary."""
        if not self.repeats:
            return None
        summary = {"coalesced_count": self.repeats, "distinct_count": len(self._seen)}
        self.repeats = 0
        return summary
