"""The store of profile revisions and heads (vocero/store/models/profiles.py says what they are).

:meth:`ProfileVersions.loaded` records what the profile directory holds now; :meth:`rollback`
moves a head back to an earlier revision. Both are single transactions, so two processes that
load at once never number two contents alike: PostgreSQL locks the head row first, and while a
profile has no head yet the process whose insert loses on the unique keys reads again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.contracts.clock import SystemClock
from vocero.contracts.ports import Clock
from vocero.store.engine import Store
from vocero.store.models import ProfileHeadRow, ProfileRevisionRow

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Revision:
    profile_id: str
    revision: int
    version: str
    content_hash: str
    snapshot: dict[str, Any]
    loaded_by: str
    loaded_at: datetime


@dataclass(frozen=True, slots=True)
class Head:
    profile_id: str
    revision: int
    changed_by: str
    changed_at: datetime
    reason: str


class RollbackError(Exception):
    """A rollback the store refuses: ``field`` and ``reason`` say what was wrong."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ProfileVersions:
    def __init__(self, store: Store, *, clock: Clock | None = None) -> None:
        self._store = store
        self._clock = clock or SystemClock()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), UTC)

    async def loaded(
        self, profile_id: str, version: str, content_hash: str, snapshot: dict[str, Any],
        *, by: str,
    ) -> tuple[Revision, bool]:
        """Record that the profile directory now holds this content of ``profile_id``.

        Returns the revision holding it and whether the head moved to it. The head moves only
        when the file's content changed since the last load (an edit), never because an
        unchanged file is read again after a rollback.

        Workers and nodes starting together on one database load the same files at once: the
        one whose insert loses (a unique key the other took first) reads again and finds the
        winner's revision."""
        for attempt in range(3):
            try:
                return await self._loaded(profile_id, version, content_hash, snapshot, by=by)
            except IntegrityError:
                if attempt == 2:
                    raise
                log.info("profiles.load_raced", profile_id=profile_id)
        raise AssertionError("unreachable")

    async def _loaded(
        self, profile_id: str, version: str, content_hash: str, snapshot: dict[str, Any],
        *, by: str,
    ) -> tuple[Revision, bool]:
        now = self._now()
        async with self._store.write() as session:
            head = await self._head_row(session, profile_id)
            if head is not None and head.file_hash == content_hash:
                current = await self._revision_row(session, profile_id, head.revision)
                assert current is not None
                return _revision(current), False
            row = await self._by_hash(session, profile_id, content_hash)
            if row is None:
                number = await self._last_revision(session, profile_id) + 1
                row = ProfileRevisionRow(
                    id=f"{content_hash[:32]}-{number}", profile_id=profile_id, revision=number,
                    version=version, content_hash=content_hash, snapshot=snapshot,
                    loaded_by=by, loaded_at=now,
                )
                session.add(row)
            if head is None:
                session.add(ProfileHeadRow(
                    profile_id=profile_id, revision=row.revision, file_hash=content_hash,
                    changed_by=by, changed_at=now, reason="loaded"))
            else:
                head.revision, head.file_hash = row.revision, content_hash
                head.changed_by, head.changed_at, head.reason = by, now, "edited"
            return _revision(row), True

    async def rollback(self, profile_id: str, version: str, *, by: str) -> tuple[Revision, int]:
        """Make the latest revision declaring ``version`` (or revision ``rN``) the head.

        Returns it and the revision it replaced."""
        async with self._store.write() as session:
            head = await self._head_row(session, profile_id)
            if head is None:
                raise RollbackError("profile_id", "unknown_profile")
            row = await self._wanted(session, profile_id, version)
            if row is None:
                raise RollbackError("version", "unknown_version")
            previous = head.revision
            head.revision, head.changed_by, head.changed_at = row.revision, by, self._now()
            head.reason = "rollback"
            return _revision(row), previous

    async def heads(self) -> list[tuple[Head, Revision]]:
        """Every profile's head and the revision it names, by profile id."""
        async with self._store.read() as session:
            rows = (await session.execute(
                select(ProfileHeadRow, ProfileRevisionRow)
                .join(ProfileRevisionRow, (ProfileRevisionRow.profile_id
                                           == ProfileHeadRow.profile_id)
                      & (ProfileRevisionRow.revision == ProfileHeadRow.revision))
                .order_by(ProfileHeadRow.profile_id)
            )).all()
        return [(_head(head), _revision(revision)) for head, revision in rows]

    async def history(self, profile_id: str) -> list[Revision]:
        """Every revision of ``profile_id``, oldest first (empty: unknown profile)."""
        async with self._store.read() as session:
            rows = (await session.scalars(
                select(ProfileRevisionRow).where(ProfileRevisionRow.profile_id == profile_id)
                .order_by(ProfileRevisionRow.revision)
            )).all()
        return [_revision(row) for row in rows]

    async def head(self, profile_id: str) -> Head | None:
        async with self._store.read() as session:
            row = await session.get(ProfileHeadRow, profile_id)
            return None if row is None else _head(row)

    async def _head_row(self, session: AsyncSession, profile_id: str) -> ProfileHeadRow | None:
        query = select(ProfileHeadRow).where(ProfileHeadRow.profile_id == profile_id)
        if self._store.dialect == "postgresql":
            query = query.with_for_update()
        return (await session.scalars(query)).first()

    @staticmethod
    async def _revision_row(
        session: AsyncSession, profile_id: str, revision: int
    ) -> ProfileRevisionRow | None:
        return (await session.scalars(select(ProfileRevisionRow).where(
            ProfileRevisionRow.profile_id == profile_id,
            ProfileRevisionRow.revision == revision))).first()

    @staticmethod
    async def _by_hash(
        session: AsyncSession, profile_id: str, content_hash: str
    ) -> ProfileRevisionRow | None:
        return (await session.scalars(select(ProfileRevisionRow).where(
            ProfileRevisionRow.profile_id == profile_id,
            ProfileRevisionRow.content_hash == content_hash,
        ).order_by(ProfileRevisionRow.revision.desc()))).first()

    @staticmethod
    async def _last_revision(session: AsyncSession, profile_id: str) -> int:
        found = await session.scalar(select(func.max(ProfileRevisionRow.revision)).where(
            ProfileRevisionRow.profile_id == profile_id))
        return int(found or 0)

    async def _wanted(
        self, session: AsyncSession, profile_id: str, version: str
    ) -> ProfileRevisionRow | None:
        query = select(ProfileRevisionRow).where(ProfileRevisionRow.profile_id == profile_id)
        if version.startswith("r") and version[1:].isdigit():
            query = query.where(ProfileRevisionRow.revision == int(version[1:]))
        else:
            query = query.where(ProfileRevisionRow.version == version)
        return (await session.scalars(
            query.order_by(ProfileRevisionRow.revision.desc()))).first()


def _revision(row: ProfileRevisionRow) -> Revision:
    return Revision(
        profile_id=row.profile_id, revision=row.revision, version=row.version,
        content_hash=row.content_hash, snapshot=dict(row.snapshot), loaded_by=row.loaded_by,
        loaded_at=row.loaded_at,
    )


def _head(row: ProfileHeadRow) -> Head:
    return Head(profile_id=row.profile_id, revision=row.revision, changed_by=row.changed_by,
                changed_at=row.changed_at, reason=row.reason)
