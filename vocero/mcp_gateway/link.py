"""What a connection holds of its server right now, shared by the parts that use it.

The supervisor (:mod:`vocero.mcp_gateway.supervisor`) opens and closes the SDK session and sets
the state; calls (:mod:`vocero.mcp_gateway.calls`) and the registry
(:mod:`vocero.mcp_gateway.registry`) read the session and, when it breaks under them, say so
(:meth:`Link.mark_lost`). The registry also wakes the supervisor when the listing wants fetching.
Nothing here performs I/O (docs/mcp.md "Shape").
"""

from __future__ import annotations

from typing import Literal

import anyio

from vocero.mcp_gateway.adapters import AdapterSession

ServerState = Literal[
    "starting", "connected", "disconnected", "awaiting_consent", "refused", "stopped"
]


class Link:
    """The live session of one server (``None`` between connections), its state and revision,
    and the signal that wakes the supervisor: the session was lost, or the listing is due."""

    def __init__(self) -> None:
        self.state: ServerState = "starting"
        self.session: AdapterSession | None = None
        self.protocol_version = ""
        self.lost = False
        self._wake = anyio.Event()

    def mark_lost(self) -> None:
        """The session broke: the supervisor ends it and reconnects."""
        self.lost = True
        self._wake.set()

    def wake(self) -> None:
        """Something for the supervisor to do while the session serves (a listing is due)."""
        self._wake.set()

    async def wait(self, timeout_s: float | None) -> bool:
        """Until woken or ``timeout_s`` passes (``None``: until woken); whether the time ran
        out."""
        with anyio.move_on_after(timeout_s) as scope:
            await self._wake.wait()
        self._wake = anyio.Event()
        return scope.cancelled_caught
