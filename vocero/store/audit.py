"""The hash-chained, append-only audit log (:class:`~vocero.contracts.ports.AuditSink`).

Appends to one chain are serialised across processes: each append locks the chain's head row
(``BEGIN IMMEDIATE`` on SQLite, ``SELECT … FOR UPDATE`` on PostgreSQL), reads the last hash,
inserts the event and moves the head, all in one short transaction.

Verification walks the chain from its first event; since every ``GET /v1/audit`` page says
whether the chain verifies, a walk per page would make reading a long chain quadratic. So the
log remembers where its last good walk ended: the next verification checks that event is
unchanged and walks only the events after it, and walks everything again when the last full
walk is older than :data:`FULL_WALK_S` or the short walk finds anything wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from sqlalchemy import func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.contracts.clock import SystemClock
from vocero.contracts.ports import Clock
from vocero.store.engine import Store
from vocero.store.hashchain import GENESIS_HASH, canonical_json, entry_hash, sensitive_paths
from vocero.store.models import DEFAULT_CHAIN, AuditChainHeadRow, AuditEventRow
from vocero.store.models.base import ID, NAME
from vocero.store.records import AuditRecord, ChainVerification
from vocero.store.scope import EVERY_TENANT, OperatorScope
from vocero.store.tombstones import TombstoneLedger, tombstone_of

if TYPE_CHECKING:
    from vocero.contracts.ports import AuditSink

_STREAM_BATCH = 500
FULL_WALK_S = 60.0
"""A verification walks the whole chain again when its last full walk is older than this: a
change to an event already verified (which the append-only triggers refuse) shows within it."""


@dataclass(slots=True)
class _Verified:
    """Where the last good walk of a chain ended, and when it last started from the first event."""

    walker: _ChainWalker
    full_at: float


class AuditLog:
    def __init__(self, store: Store, *, clock: Clock | None = None) -> None:
        self._store = store
        self._clock = clock or SystemClock()
        self._verified: dict[str, _Verified] = {}
        self._verifying = anyio.Lock()

    async def record(
        self,
        kind: str,
        data: dict[str, Any],
        *,
        session_id: str = "",
        actor: str = "vocero",
        chain: str = DEFAULT_CHAIN,
        at: datetime | None = None,
    ) -> None:
        """The :class:`AuditSink` port: :meth:`append`, discarding the record."""
        await self.append(kind, data, session_id=session_id, actor=actor, chain=chain, at=at)

    def now(self) -> datetime:
        """This log's time: what an event appended now would carry as ``at``."""
        return datetime.fromtimestamp(self._clock.now(), UTC)

    async def append(
        self,
        kind: str,
        data: dict[str, Any],
        *,
        session_id: str = "",
        actor: str = "vocero",
        chain: str = DEFAULT_CHAIN,
        at: datetime | None = None,
    ) -> AuditRecord:
        """Append one event and return it as stored. ``data`` must be JSON holding opaque
        references only: a key that looks like a secret or raw speech raises
        :class:`ValueError` and nothing is written. ``at`` is when it happened (default: now);
        an event appended late, after a store outage, keeps its own time."""
        _check_names(kind=kind, actor=actor, chain=chain, session_id=session_id)
        clean = _checked_data(data)
        async with self._store.write() as session:
            prev_hash = await _lock_head(session, chain)
            unsealed = AuditRecord(
                seq=await _next_seq(session), chain=chain, session_id=session_id, kind=kind,
                actor=actor, at=at or self.now(), data=clean,
                prev_hash=prev_hash, hash="",
            )
            event = msgspec.structs.replace(unsealed, hash=_hash_of(unsealed))
            await _store_event(session, event)
        return event

    async def events(
        self,
        session_id: str | None = None,
        chain: str = DEFAULT_CHAIN,
        *,
        after_seq: int = 0,
        limit: int | None = None,
        scope: OperatorScope = EVERY_TENANT,
    ) -> list[AuditRecord]:
        """Events of ``chain`` in ``seq`` order, optionally of one session only, of the
        sessions of ``scope``'s tenants only (an event without a session only when ``scope`` is
        every tenant)."""
        query = (
            select(AuditEventRow)
            .where(AuditEventRow.chain == chain, AuditEventRow.seq > after_seq)
            .order_by(AuditEventRow.seq)
            .limit(limit)
        )
        if session_id is not None:
            query = query.where(AuditEventRow.session_id == (session_id or None))
        query = scope.restrict_by_session(query, AuditEventRow.session_id)
        async with self._store.read() as session:
            rows = (await session.scalars(query)).all()
        return [_to_record(row) for row in rows]

    async def verify(self, chain: str = DEFAULT_CHAIN, *, full: bool = False) -> ChainVerification:
        """Recompute every hash of ``chain`` in order and check the head points at the end.

        Unless ``full``, the events up to the end of the last good walk count as verified when
        that event is unchanged and the last full walk is younger than :data:`FULL_WALK_S`;
        anything wrong found that way is confirmed by a full walk before it is reported."""
        async with self._verifying:
            known = self._verified.pop(chain, None)
            now = self._clock.monotonic()
            if full or (known is not None and now - known.full_at >= FULL_WALK_S):
                known = None
            walker, head, resumed = await self._walk(chain, known.walker if known else None)
            result = walker.result(head)
            if not result.ok and resumed:
                walker, head, resumed = await self._walk(chain, None)  # confirm it in full
                result = walker.result(head)
            if result.ok:
                full_at = known.full_at if resumed and known is not None else now
                self._verified[chain] = _Verified(walker, full_at)
            return result

    async def _walk(
        self, chain: str, resume: _ChainWalker | None
    ) -> tuple[_ChainWalker, AuditChainHeadRow | None, bool]:
        """The walk of ``chain`` up to its head, on from ``resume`` when its last event is
        unchanged (and whether it was), else from the first event."""
        async with self._store.read() as session:
            head = await session.get(AuditChainHeadRow, chain)
            walker, after = _ChainWalker(), 0
            if resume is not None and resume.last_seq is not None:
                stored = await session.scalar(
                    select(AuditEventRow.hash).where(
                        AuditEventRow.chain == chain, AuditEventRow.seq == resume.last_seq
                    )
                )
                if stored == resume.last_hash:
                    walker, after = resume, resume.last_seq
            query = select(AuditEventRow).where(
                AuditEventRow.chain == chain, AuditEventRow.seq > after
            )
            if head is not None:
                query = query.where(AuditEventRow.seq <= head.last_seq)
            query = query.order_by(AuditEventRow.seq).execution_options(yield_per=_STREAM_BATCH)
            async for row in await session.stream_scalars(query):
                walker.feed(_to_record(row))
        return walker, head, after > 0


class _ChainWalker:
    """Follows a chain event by event; remembers the first event that does not recompute."""

    def __init__(self) -> None:
        self.count = 0
        self.last_seq: int | None = None
        self.last_hash = GENESIS_HASH
        self.broken_at: int | None = None
        self.tombstones = TombstoneLedger()

    def feed(self, event: AuditRecord) -> None:
        """A tombstoned event only links; its claim is checked at the end (tombstones.py)."""
        self.count += 1
        claimed_by = tombstone_of(event.data)
        if claimed_by is not None:
            self.tombstones.tombstoned(event.seq, event.hash, claimed_by)
            intact = event.prev_hash == self.last_hash
        else:
            intact = event.prev_hash == self.last_hash and event.hash == _hash_of(event)
            self.tombstones.intact(event.seq, event.kind, event.data)
        if not intact and self.broken_at is None:
            self.broken_at = event.seq
        self.last_seq, self.last_hash = event.seq, event.hash

    def result(self, head: AuditChainHeadRow | None) -> ChainVerification:
        unclaimed = self.tombstones.first_unclaimed()
        if unclaimed is not None and (self.broken_at is None or unclaimed < self.broken_at):
            self.broken_at = unclaimed
        if self.broken_at is not None:
            return ChainVerification(ok=False, count=self.count, broken_at_seq=self.broken_at)
        if head is None:
            ok = self.count == 0
            return ChainVerification(ok=ok, count=self.count,
                                     broken_at_seq=None if ok else self.last_seq)
        if (self.last_seq, self.last_hash) != (head.last_seq, head.last_hash):
            return ChainVerification(ok=False, count=self.count, broken_at_seq=head.last_seq)
        return ChainVerification(ok=True, count=self.count)


def _check_names(**names: str) -> None:
    limits = {"kind": NAME, "actor": NAME, "chain": ID, "session_id": ID}
    for field, value in names.items():
        if len(value) > limits[field] or (field != "session_id" and not value):
            raise ValueError(f"audit {field} must be 1..{limits[field]} characters")


def _checked_data(data: dict[str, Any]) -> dict[str, Any]:
    """The JSON round-trip of ``data`` as it will be hashed and stored, after the guard."""
    refused = sensitive_paths(data)
    if refused:
        raise ValueError(f"audit data may hold opaque references only; refused {refused}")
    try:
        clean: dict[str, Any] = json.loads(canonical_json(data))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"audit data must be plain JSON: {exc}") from None
    return clean


async def _lock_head(session: AsyncSession, chain: str) -> str:
    """Lock the chain's head row (creating it at genesis the first time); its last hash."""
    query = (
        select(AuditChainHeadRow.last_hash)
        .where(AuditChainHeadRow.chain == chain)
        .with_for_update()
    )
    last_hash = (await session.execute(query)).scalar_one_or_none()
    if last_hash is None:
        await _create_head(session, chain)
        last_hash = (await session.execute(query)).scalar_one()
    return last_hash


async def _create_head(session: AsyncSession, chain: str) -> None:
    values = {"chain": chain, "last_seq": 0, "last_hash": GENESIS_HASH}
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        await session.execute(postgresql.insert(AuditChainHeadRow).values(values)
                              .on_conflict_do_nothing())
    elif dialect == "sqlite":
        await session.execute(sqlite.insert(AuditChainHeadRow).values(values)
                              .on_conflict_do_nothing())
    else:
        try:
            async with session.begin_nested():
                await session.execute(insert(AuditChainHeadRow).values(values))
        except IntegrityError:
            pass  # another appender created it; the locking select that follows waits for it


async def _next_seq(session: AsyncSession) -> int:
    """The next ``seq``: the column's sequence on PostgreSQL (chains append concurrently), the
    next rowid elsewhere (SQLite's write lock is database-wide)."""
    if session.get_bind().dialect.name == "postgresql":
        sequence = func.pg_get_serial_sequence(AuditEventRow.__tablename__, "seq")
        return int((await session.execute(select(func.nextval(sequence)))).scalar_one())
    query = select(func.coalesce(func.max(AuditEventRow.seq), 0) + 1)
    return int((await session.execute(query)).scalar_one())


def _hash_of(event: AuditRecord) -> str:
    return entry_hash(event.prev_hash, seq=event.seq, chain=event.chain,
                      session_id=event.session_id, kind=event.kind, actor=event.actor,
                      at=event.at, data=event.data)


async def _store_event(session: AsyncSession, event: AuditRecord) -> None:
    """Insert the sealed event and move its chain's head to it."""
    await session.execute(insert(AuditEventRow).values(
        seq=event.seq, chain=event.chain, session_id=event.session_id or None, kind=event.kind,
        actor=event.actor, at=event.at, data=event.data, prev_hash=event.prev_hash,
        hash=event.hash,
    ))
    await session.execute(
        update(AuditChainHeadRow)
        .where(AuditChainHeadRow.chain == event.chain)
        .values(last_seq=event.seq, last_hash=event.hash)
    )


def _to_record(row: AuditEventRow) -> AuditRecord:
    return AuditRecord(seq=row.seq, chain=row.chain, session_id=row.session_id or "",
                       kind=row.kind, actor=row.actor, at=row.at, data=row.data,
                       prev_hash=row.prev_hash, hash=row.hash)


if TYPE_CHECKING:
    _sink: type[AuditSink] = AuditLog
