"""The tools one server lists, pinned, and how fresh that listing is (docs/mcp.md "Discovery and
pinning", "Listing freshness").

Every listing is compared with the pins (:class:`~vocero.mcp_gateway.pinning.PinBook`); a pin
change, an operator's approval or new credentials start a new cache epoch, so nothing listed
before is trusted after it. A list-changed signal marks the listing stale: it is fetched again
before anything else is called. A listing past its ``ttlMs`` is fetched again in the background
while calls go on under the pins.
"""

from __future__ import annotations

from collections.abc import Iterable

import anyio
import structlog

from vocero.contracts.ports import Timers
from vocero.mcp_gateway.adapters import AdapterSession
from vocero.mcp_gateway.errors import is_transport_failure, map_call_failure
from vocero.mcp_gateway.link import Link
from vocero.mcp_gateway.listing_cache import ListingCache, Partition
from vocero.mcp_gateway.model import Listing
from vocero.mcp_gateway.outbox import AuditOutbox
from vocero.mcp_gateway.pinning import PinBook, PinRepository
from vocero.mcp_gateway.settings import GatewaySettings
from vocero.mcp_gateway.tally import Tally
from vocero.mcp_gateway.validation import schema_problem

log = structlog.get_logger("vocero.mcp_gateway")


class ToolRegistry:
    """One server's listing and pins: fetching, comparing, and knowing when to fetch again."""

    def __init__(
        self,
        name: str,
        tools: Iterable[str],
        repository: PinRepository,
        *,
        oauth: bool,
        link: Link,
        outbox: AuditOutbox,
        settings: GatewaySettings,
        clock: Timers,
    ) -> None:
        self.name = name
        self.pins = PinBook(
            name,
            tools,
            repository,
            now=clock.now,
            auto_approve=settings.auto_approves(name),
            check=lambda tool: schema_problem(tool, settings),
        )
        self.listings = ListingCache(max_age_s=settings.relist_interval_s)
        self.partition = Partition(credential="oauth" if oauth else "static")
        self.pin_epoch = 0
        self.stale = False
        self.described: dict[str, str] = {}
        """Each tool's line as the last listing gave it, pinned or not: material for what the
        profile prohibits (``McpGateway.refused``), never a definition the model is offered."""
        self._link = link
        self._outbox = outbox
        self._settings = settings
        self._clock = clock
        self._due = False
        self._lock = anyio.Lock()
        self._listings = Tally()
        self._last_listing_at = float("-inf")

    @property
    def listed(self) -> int:
        """How many complete listings have been fetched."""
        return self._listings.count

    async def wait_listed(self, count: int) -> None:
        """Until ``count`` listings have been fetched (tests; bounded by the caller)."""
        await self._listings.reach(count)

    async def first_listing(self, session: AdapterSession) -> None:
        """A new session's listing, fetched before the session serves any call."""
        with anyio.fail_after(self._settings.connect_timeout_s):
            listing = await session.list_tools()
        self.stale = False
        await self._observe(listing)

    def note_use(self) -> None:
        """A call needs the listing: past its ``ttlMs``, fetch it again in the background (the
        pins keep every call safe meanwhile), at most every ``min_relist_interval_s``."""
        if self.stale or self._link.session is None:
            return
        now = self._clock.monotonic()
        if self.listings.is_fresh(self.name, self.partition, now=now, pin_epoch=self.pin_epoch):
            return
        if now - self._last_listing_at < self._settings.min_relist_interval_s:
            return
        self._last_listing_at = now
        self._due = True
        self._link.wake()

    async def ensure_fresh(self) -> None:
        """Re-list after a list-changed signal before anything else is called."""
        if not self.stale or self._link.session is None:
            return
        async with self._lock:
            session = self._link.session
            if not self.stale or session is None:
                return
            self.stale = False
            try:
                with anyio.fail_after(self._settings.connect_timeout_s):
                    listing = await session.list_tools()
            except Exception as exc:
                self.stale = True
                if is_transport_failure(exc):
                    self._link.mark_lost()
                raise map_call_failure(exc, dispatched=False) from exc
            await self._observe(listing)
        await self._outbox.flush()

    async def refresh(self, *, interval_passed: bool) -> None:
        """The supervisor woke while the session serves: fetch what is due. After
        ``relist_interval_s`` without a listing the listing is stale."""
        if interval_passed:
            self.stale = True
        if self._due and not self.stale:
            await self._relist_in_background()
        await self.ensure_fresh()

    def tools_changed(self) -> None:
        """The server says its tool list changed (``notifications/tools/list_changed``)."""
        self.stale = True
        self.listings.invalidate(self.name)
        self._link.wake()

    def pins_changed(self) -> None:
        """An operator changed a pin: the listing is fetched again before it is trusted."""
        self.pin_epoch += 1
        self.listings.invalidate(self.name)

    def credentials_changed(self) -> None:
        """New, wider or failing credentials: nothing listed under the old ones is used again."""
        self.partition = Partition(
            credential=self.partition.credential,
            epoch=self.partition.epoch + 1,
            tenant=self.partition.tenant,
        )
        self.listings.invalidate(self.name)

    def disconnected(self) -> None:
        """The session ended: its listing is not trusted past it."""
        self.listings.invalidate(self.name)

    async def _relist_in_background(self) -> None:
        """A listing past its ``ttlMs``: fetched again while calls go on under the pins."""
        self._due = False
        session = self._link.session
        if session is None:
            return
        async with self._lock:
            try:
                with anyio.fail_after(self._settings.connect_timeout_s):
                    listing = await session.list_tools()
            except Exception as exc:
                if is_transport_failure(exc):
                    self._link.mark_lost()
                log.warning("mcp.relist_failed", server=self.name, error=type(exc).__name__)
                return
            await self._observe(listing)
        await self._outbox.flush()

    async def _observe(self, listing: Listing) -> None:
        """Compare a listing with the pins; a pin change starts a new cache epoch."""
        events = await self.pins.observe(listing.tools)
        self.described = {t.name: t.description[:500] for t in listing.tools}
        if events:
            self.pin_epoch += 1
        for kind, data in events:
            self._outbox.queue(kind, data)
        now = self._clock.monotonic()
        self._last_listing_at = now
        self.listings.store(self.name, self.partition, listing, now=now, pin_epoch=self.pin_epoch)
        self._listings.add()
