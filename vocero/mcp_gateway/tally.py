"""A count that can be waited for: how many listings a connection fetched, how many consents a
node asked for. Tests and the operator console wait on these instead of polling."""

from __future__ import annotations

import anyio


class Tally:
    def __init__(self) -> None:
        self.count = 0
        self._grew = anyio.Event()

    def add(self) -> None:
        self.count += 1
        self._grew.set()
        self._grew = anyio.Event()

    async def reach(self, count: int) -> None:
        """Until the count is at least ``count`` (bounded by the caller)."""
        while self.count < count:
            await self._grew.wait()
