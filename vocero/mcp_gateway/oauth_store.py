"""OAuth records that outlive the process: the store's ``mcp_oauth_tokens`` table behind
:class:`~vocero.mcp_gateway.oauth.OAuthTokenRepository`. Rows hold sealed text only."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import delete

from vocero.store.engine import Store
from vocero.store.models.tools import McpOAuthTokenRow


class SqlOAuthTokenRepository:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def load(self, server: str) -> str | None:
        async with self._store.read() as session:
            row = await session.get(McpOAuthTokenRow, server)
            return row.sealed if row is not None else None

    async def save(self, server: str, sealed: str) -> None:
        async with self._store.write() as session:
            row = await session.get(McpOAuthTokenRow, server)
            if row is None:
                row = McpOAuthTokenRow(server=server, sealed=sealed)
                session.add(row)
            row.sealed = sealed
            row.updated_at = datetime.now(UTC)

    async def delete(self, server: str) -> None:
        async with self._store.write() as session:
            await session.execute(delete(McpOAuthTokenRow).where(McpOAuthTokenRow.server == server))
