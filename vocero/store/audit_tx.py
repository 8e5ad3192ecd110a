"""Audit appends inside a caller's write transaction.

:meth:`AuditLog.append` opens its own transaction. The action path needs the decision and its
audit event to commit together (an operation authorized without its audit record, or the other
way round, is exactly the gap ADR-0009 closes), so this appends to the same hash chain with
the same guard and locking, inside a transaction opened with :meth:`Store.write`.
:func:`append_on` is the same append on a synchronous connection (the recorder's batches,
:meth:`Store.apply`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import msgspec
from sqlalchemy import Connection, Table, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.store.audit import (
    _check_names,
    _checked_data,
    _hash_of,
    _lock_head,
    _next_seq,
    _store_event,
)
from vocero.store.hashchain import GENESIS_HASH
from vocero.store.models import DEFAULT_CHAIN, AuditChainHeadRow, AuditEventRow
from vocero.store.records import AuditRecord


async def append_in(
    session: AsyncSession,
    kind: str,
    data: dict[str, Any],
    *,
    at: datetime,
    session_id: str = "",
    actor: str = "vocero",
    chain: str = DEFAULT_CHAIN,
) -> AuditRecord:
    """Append one event in ``session``'s open write transaction; it commits with the rest.

    Raises :class:`ValueError` (nothing appended) for data that is not opaque references only.
    """
    _check_names(kind=kind, actor=actor, chain=chain, session_id=session_id)
    clean = _checked_data(data)
    prev_hash = await _lock_head(session, chain)
    unsealed = AuditRecord(
        seq=await _next_seq(session), chain=chain, session_id=session_id, kind=kind,
        actor=actor, at=at, data=clean, prev_hash=prev_hash, hash="",
    )
    event = msgspec.structs.replace(unsealed, hash=_hash_of(unsealed))
    await _store_event(session, event)
    return event


_HEADS = cast(Table, AuditChainHeadRow.__table__)
_EVENTS = cast(Table, AuditEventRow.__table__)


def append_on(
    connection: Connection,
    kind: str,
    data: dict[str, Any],
    *,
    at: datetime,
    session_id: str = "",
    actor: str = "vocero",
    chain: str = DEFAULT_CHAIN,
) -> AuditRecord:
    """:func:`append_in` on a synchronous connection inside its transaction: the same checks,
    head lock, ``seq`` and hash, the same statements."""
    _check_names(kind=kind, actor=actor, chain=chain, session_id=session_id)
    clean = _checked_data(data)
    postgres = connection.dialect.name == "postgresql"
    head = select(_HEADS.c.last_hash).where(_HEADS.c.chain == chain).with_for_update()
    prev_hash = connection.execute(head).scalar_one_or_none()
    if prev_hash is None:
        dialect = postgresql if postgres else sqlite
        connection.execute(dialect.insert(_HEADS).values(
            chain=chain, last_seq=0, last_hash=GENESIS_HASH).on_conflict_do_nothing())
        prev_hash = connection.execute(head).scalar_one()
    if postgres:
        sequence = func.pg_get_serial_sequence(_EVENTS.name, "seq")
        seq = int(connection.execute(select(func.nextval(sequence))).scalar_one())
    else:
        seq = int(connection.execute(
            select(func.coalesce(func.max(_EVENTS.c.seq), 0) + 1)).scalar_one())
    unsealed = AuditRecord(
        seq=seq, chain=chain, session_id=session_id, kind=kind, actor=actor, at=at, data=clean,
        prev_hash=str(prev_hash), hash="",
    )
    event = msgspec.structs.replace(unsealed, hash=_hash_of(unsealed))
    connection.execute(insert(_EVENTS).values(
        seq=event.seq, chain=event.chain, session_id=event.session_id or None, kind=event.kind,
        actor=event.actor, at=event.at, data=event.data, prev_hash=event.prev_hash,
        hash=event.hash,
    ))
    connection.execute(update(_HEADS).where(_HEADS.c.chain == event.chain)
                       .values(last_seq=event.seq, last_hash=event.hash))
    return event
