"""Audit appends inside a caller's write transaction.

:meth:`AuditLog.append` opens its own transaction. The action path needs the decision and its
audit event to commit together (an operation authorized without its audit record, or the other
way round, is exactly the gap ADR-0009 closes), so this appends to the same hash chain with
the same guard and locking, inside a transaction opened with :meth:`Store.write`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.store.audit import (
    _check_names,
    _checked_data,
    _hash_of,
    _lock_head,
    _next_seq,
    _store_event,
)
from vocero.store.models import DEFAULT_CHAIN
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
