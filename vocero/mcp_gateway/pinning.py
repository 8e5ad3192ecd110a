"""Tool pinning: each allowlisted tool's definition is hashed and held to that hash.

A definition is the tool's name, description, input schema and output schema, as the server
lists it. The first definition seen is pinned (trust on first use, unless settings require an
operator); a later listing with another hash is a "rug pull": the tool is disabled, the pinned
definition is kept, the change is audited, and only an operator's :meth:`PinBook.approve` of the
new hash enables it again. A server that reverts to the pinned definition is enabled again.

Pins persist through a small :class:`PinRepository` port; the in-memory one here serves tests and
single-process runs, the store plane provides the SQL one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol

import msgspec

from vocero.mcp_gateway.model import RemoteTool

PinStatus = Literal["approved", "changed", "missing", "pending", "rejected"]
"""``approved`` is callable; every other status keeps the tool away from the model."""


def definition_hash(definition: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces) of a tool definition."""
    return "sha256:" + hashlib.sha256(msgspec.json.encode(definition, order="sorted")).hexdigest()


class ToolPin(msgspec.Struct, frozen=True, kw_only=True):
    server: str
    tool: str
    definition_hash: str
    definition: dict[str, Any]
    status: PinStatus
    observed_hash: str = ""
    """The hash last listed by the server when it differs from the pinned one."""
    observed_definition: dict[str, Any] | None = None
    approved_by: str = ""
    updated_at: float = 0.0

    @property
    def active(self) -> bool:
        return self.status == "approved"

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = self.definition.get("inputSchema")
        return schema if isinstance(schema, dict) else {}

    @property
    def output_schema(self) -> dict[str, Any] | None:
        schema = self.definition.get("outputSchema")
        return schema if isinstance(schema, dict) else None

    @property
    def description(self) -> str:
        return str(self.definition.get("description") or "")


class PinRepository(Protocol):
    """Where pins outlive the process (the store plane's ``tool_pins`` table)."""

    async def load(self, server: str) -> list[ToolPin]: ...

    async def save(self, pin: ToolPin) -> None: ...


class InMemoryPinRepository:
    def __init__(self, pins: Iterable[ToolPin] = ()) -> None:
        self._pins = {(p.server, p.tool): p for p in pins}

    async def load(self, server: str) -> list[ToolPin]:
        return [p for (s, _), p in self._pins.items() if s == server]

    async def save(self, pin: ToolPin) -> None:
        self._pins[(pin.server, pin.tool)] = pin

    def all(self) -> list[ToolPin]:
        return list(self._pins.values())


PinEvent = tuple[str, dict[str, Any]]
"""(audit kind, audit data): what a pin change reports; data holds names and hashes only."""
SchemaCheck = Callable[[RemoteTool], str | None]
"""Returns why a definition is unacceptable (too deep, remote ``$ref`` ...), or ``None``."""


class PinBook:
    """The pins of one server's allowlisted tools, kept in memory and written through."""

    def __init__(
        self,
        server: str,
        tools: Iterable[str],
        repository: PinRepository,
        *,
        now: Callable[[], float],
        auto_approve: bool = True,
        check: SchemaCheck | None = None,
    ) -> None:
        self.server = server
        self.tools = frozenset(tools)
        self._repository = repository
        self._now = now
        self._auto_approve = auto_approve
        self._check = check
        self._pins: dict[str, ToolPin] = {}

    def get(self, tool: str) -> ToolPin | None:
        return self._pins.get(tool)

    def all(self) -> list[ToolPin]:
        return list(self._pins.values())

    async def load(self) -> None:
        for pin in await self._repository.load(self.server):
            if pin.tool in self.tools:
                self._pins[pin.tool] = pin

    async def observe(self, listing: Iterable[RemoteTool]) -> list[PinEvent]:
        """Compare a full tools/list with the pins; returns what changed, for the audit log."""
        listed = {tool.name: tool for tool in listing}
        events: list[PinEvent] = []
        for name in sorted(self.tools):
            remote = listed.get(name)
            event = await (self._absent(name) if remote is None else self._listed(remote))
            if event is not None:
                events.append(event)
        return events

    async def approve(self, tool: str, observed_hash: str, *, approved_by: str) -> PinEvent:
        """An operator accepts the definition the server now lists (named by its hash)."""
        pin = self._pins.get(tool)
        if pin is None or pin.observed_definition is None or pin.observed_hash != observed_hash:
            raise LookupError(f"{self.server}/{tool}: no pending definition {observed_hash}")
        problem = self._check(_as_remote(pin.observed_definition)) if self._check else None
        if problem is not None:
            raise ValueError(f"{self.server}/{tool}: definition refused: {problem}")
        await self._store(
            pin,
            definition_hash=observed_hash,
            definition=pin.observed_definition,
            status="approved",
            observed_hash="",
            observed_definition=None,
            approved_by=approved_by,
        )
        return "mcp.tool_approved", self._data(tool, observed_hash, approved_by=approved_by)

    async def _listed(self, remote: RemoteTool) -> PinEvent | None:
        definition = remote.definition()
        digest = definition_hash(definition)
        pin = self._pins.get(remote.name)
        if pin is not None and pin.status == "rejected" and pin.definition_hash == digest:
            return None
        if pin is None or pin.status == "rejected":
            return await self._first_seen(remote, definition, digest)
        if digest == pin.definition_hash:
            if pin.status not in ("changed", "missing"):
                return None
            await self._store(pin, status="approved", observed_hash="", observed_definition=None)
            return "mcp.tool_restored", self._data(remote.name, digest)
        if pin.status == "pending":
            await self._store(
                pin,
                definition_hash=digest,
                definition=definition,
                observed_hash=digest,
                observed_definition=definition,
            )
            return "mcp.tool_pending", self._data(remote.name, digest)
        if pin.observed_hash == digest and pin.status == "changed":
            return None
        await self._store(
            pin, status="changed", observed_hash=digest, observed_definition=definition
        )
        return "mcp.tool_changed", self._data(
            remote.name, pin.definition_hash, observed_hash=digest, was=pin.status
        )

    async def _first_seen(
        self, remote: RemoteTool, definition: dict[str, Any], digest: str
    ) -> PinEvent:
        problem = self._check(remote) if self._check is not None else None
        if problem is not None:
            status: PinStatus = "rejected"
        else:
            status = "approved" if self._auto_approve else "pending"
        pin = ToolPin(
            server=self.server,
            tool=remote.name,
            definition_hash=digest,
            definition=definition,
            status=status,
            observed_hash=digest if status == "pending" else "",
            observed_definition=definition if status == "pending" else None,
            approved_by="first_use" if status == "approved" else "",
            updated_at=self._now(),
        )
        self._pins[remote.name] = pin
        await self._repository.save(pin)
        kind = {"approved": "mcp.tool_pinned", "pending": "mcp.tool_pending"}.get(status)
        return kind or "mcp.tool_rejected", self._data(remote.name, digest, problem=problem or "")

    async def _absent(self, name: str) -> PinEvent | None:
        pin = self._pins.get(name)
        if pin is None or pin.status in ("missing", "rejected"):
            return None
        await self._store(pin, status="missing")
        return "mcp.tool_missing", self._data(name, pin.definition_hash)

    async def _store(self, pin: ToolPin, **changes: Any) -> None:
        updated = msgspec.structs.replace(pin, updated_at=self._now(), **changes)
        self._pins[pin.tool] = updated
        await self._repository.save(updated)

    def _data(self, tool: str, digest: str, **extra: Any) -> dict[str, Any]:
        return {"server": self.server, "tool": tool, "definition_hash": digest, **extra}


def _as_remote(definition: dict[str, Any]) -> RemoteTool:
    return RemoteTool(
        name=str(definition.get("name", "")),
        description=str(definition.get("description") or ""),
        input_schema=definition.get("inputSchema") or {},
        output_schema=definition.get("outputSchema"),
    )
