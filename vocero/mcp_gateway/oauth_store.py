"""OAuth records that outlive the process: the store's ``mcp_oauth_tokens`` table behind
:class:`~vocero.mcp_gateway.oauth.OAuthTokenRepository`, and ``mcp_oauth_consents`` behind
:class:`~vocero.mcp_gateway.consent.ConsentRepository`. Secrets are held sealed only."""

from __future__ import annotations

from dataclasses import asdict, fields
from datetime import UTC, datetime

from sqlalchemy import delete, select, update

from vocero.mcp_gateway.consent import ConsentStatus, PendingConsent
from vocero.store.engine import Store
from vocero.store.models.tools import McpOAuthConsentRow, McpOAuthTokenRow


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


class SqlConsentRepository:
    """Consents any node can answer: the callback may reach another node than the waiting one."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def open(self, consent: PendingConsent, state_sha256: str) -> None:
        row = McpOAuthConsentRow(
            **asdict(consent), state_sha256=state_sha256, updated_at=consent.created_at
        )
        async with self._store.write() as session:
            session.add(row)

    async def pending(self, now: datetime) -> list[PendingConsent]:
        query = (
            select(McpOAuthConsentRow)
            .where(McpOAuthConsentRow.status == "pending", McpOAuthConsentRow.expires_at > now)
            .order_by(McpOAuthConsentRow.created_at, McpOAuthConsentRow.id)
        )
        async with self._store.read() as session:
            return [_consent(row) for row in (await session.scalars(query)).all()]

    async def find(self, state_sha256: str, now: datetime) -> PendingConsent | None:
        """A read: an unauthenticated callback with a state nobody issued takes no write lock."""
        query = select(McpOAuthConsentRow).where(
            McpOAuthConsentRow.state_sha256 == state_sha256,
            McpOAuthConsentRow.status == "pending",
            McpOAuthConsentRow.expires_at > now,
        )
        async with self._store.read() as session:
            row = await session.scalar(query)
            return _consent(row) if row is not None else None

    async def answer(self, state_sha256: str, sealed: str, now: datetime) -> PendingConsent | None:
        """One compare-and-set: of two callbacks with the same state, only the first lands."""
        async with self._store.write() as session:
            found = await session.scalar(
                update(McpOAuthConsentRow)
                .where(
                    McpOAuthConsentRow.state_sha256 == state_sha256,
                    McpOAuthConsentRow.status == "pending",
                    McpOAuthConsentRow.expires_at > now,
                )
                .values(status="answered", answer_sealed=sealed, updated_at=now)
                .returning(McpOAuthConsentRow)
            )
            return _consent(found) if found is not None else None

    async def take(self, consent_id: str) -> str | None:
        async with self._store.read() as session:
            row = await session.get(McpOAuthConsentRow, consent_id)
            return row.answer_sealed if row is not None and row.status == "answered" else None

    async def close(self, consent_id: str, status: ConsentStatus) -> None:
        async with self._store.write() as session:
            await session.execute(
                update(McpOAuthConsentRow)
                .where(McpOAuthConsentRow.id == consent_id)
                .values(status=status, answer_sealed=None, updated_at=datetime.now(UTC))
            )


def _consent(row: McpOAuthConsentRow) -> PendingConsent:
    return PendingConsent(**{f.name: getattr(row, f.name) for f in fields(PendingConsent)})
