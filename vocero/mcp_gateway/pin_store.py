"""Pins that outlive the process: the store's ``tool_pins`` table behind ``PinRepository``."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from vocero.mcp_gateway.pinning import ToolPin
from vocero.store.engine import Store
from vocero.store.models.tools import ToolPinRow


class SqlPinRepository:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def load(self, server: str) -> list[ToolPin]:
        async with self._store.read() as session:
            rows = (
                await session.scalars(select(ToolPinRow).where(ToolPinRow.server == server))
            ).all()
            return [_pin(row) for row in rows]

    async def save(self, pin: ToolPin) -> None:
        now = datetime.fromtimestamp(pin.updated_at, UTC) if pin.updated_at else datetime.now(UTC)
        async with self._store.write() as session:
            row = await session.get(ToolPinRow, (pin.server, pin.tool))
            if row is None:
                row = ToolPinRow(server=pin.server, tool=pin.tool, pinned_at=now)
                session.add(row)
            row.definition_hash = pin.definition_hash
            row.definition = dict(pin.definition)
            row.status = pin.status
            row.observed_hash = pin.observed_hash
            row.observed_definition = pin.observed_definition
            row.approved_by = pin.approved_by
            row.changed_at = now


def _pin(row: ToolPinRow) -> ToolPin:
    changed = row.changed_at or row.pinned_at
    return ToolPin(
        server=row.server,
        tool=row.tool,
        definition_hash=row.definition_hash,
        definition=dict(row.definition),
        status=row.status,
        observed_hash=row.observed_hash,
        observed_definition=row.observed_definition,
        approved_by=row.approved_by,
        updated_at=changed.timestamp() if changed else 0.0,
    )
