"""``vocero bench audit``: what reading a long audit chain costs an auditor, page by page.

A fresh SQLite store (migrated, on disk) gets ``--events`` events (default 20,000), chained
exactly as :meth:`~vocero.store.audit.AuditLog.append` chains them (the same hashes), written in
bulk so that the set-up takes seconds. Then an auditor reads the whole chain the way
``GET /v1/audit`` serves it, 500 events a page: each page is the page's read plus the chain
verification the response carries. Measured:

* ``page_ms`` - per page, p50/p95/max, and ``pages_total_s`` for the whole chain;
* ``verify_full_ms`` - one walk of the whole chain from its first event;
* whether every page said the chain verifies (it must).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from vocero.bench.stats import percentiles
from vocero.store.audit import AuditLog
from vocero.store.engine import Store
from vocero.store.hashchain import GENESIS_HASH, entry_hash
from vocero.store.migrate import upgrade_async
from vocero.store.models import DEFAULT_CHAIN, AuditChainHeadRow, AuditEventRow

PAGE = 500
_BATCH = 2000
START = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


async def audit(args: argparse.Namespace) -> dict[str, Any]:
    events = max(1, int(getattr(args, "events", 20_000)))
    with tempfile.TemporaryDirectory(prefix="vocero-bench-audit-") as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'audit.db'}"
        await upgrade_async(url)
        store = Store.open(url)
        try:
            started = time.perf_counter()
            await _fill(store, events)
            filled_s = time.perf_counter() - started
            log = AuditLog(store)
            pages, verified = await _read_all(log)
            started = time.perf_counter()
            full = await log.verify(full=True)
            full_ms = (time.perf_counter() - started) * 1000
        finally:
            await store.close()
    return {
        "events": events,
        "page_size": PAGE,
        "pages": len(pages),
        "page_ms": percentiles(pages),
        "pages_total_s": round(sum(pages) / 1000, 3),
        "every_page_verified": verified and full.ok,
        "verify_full_ms": round(full_ms, 2),
        "fill_s": round(filled_s, 2),
    }


async def _read_all(log: AuditLog) -> tuple[list[float], bool]:
    """Every page as the operator API serves it; each page's time and whether all verified."""
    pages: list[float] = []
    verified = True
    after = 0
    while True:
        started = time.perf_counter()
        batch = await log.events(after_seq=after, limit=PAGE + 1)
        chain = await log.verify()
        pages.append((time.perf_counter() - started) * 1000)
        verified = verified and chain.ok
        if len(batch) <= PAGE:
            return pages, verified
        after = batch[PAGE - 1].seq


async def _fill(store: Store, events: int) -> None:
    """``events`` events of a realistic mix, hashed and linked as ``append`` does."""
    previous = GENESIS_HASH
    rows: list[dict[str, Any]] = []
    async with store.write() as session:
        for seq in range(1, events + 1):
            session_id = f"ses_{seq % 250:04d}"
            kind, data = _event(seq)
            at = START + timedelta(milliseconds=250 * seq)
            digest = entry_hash(previous, seq=seq, chain=DEFAULT_CHAIN, session_id=session_id,
                                kind=kind, actor="vocero", at=at, data=data)
            rows.append({"seq": seq, "chain": DEFAULT_CHAIN, "session_id": session_id,
                         "kind": kind, "actor": "vocero", "at": at, "data": data,
                         "prev_hash": previous, "hash": digest})
            previous = digest
            if len(rows) == _BATCH:
                await session.execute(insert(AuditEventRow), rows)
                rows = []
        if rows:
            await session.execute(insert(AuditEventRow), rows)
        await session.execute(insert(AuditChainHeadRow).values(
            chain=DEFAULT_CHAIN, last_seq=events, last_hash=previous))


def _event(seq: int) -> tuple[str, dict[str, Any]]:
    if seq % 10 == 0:
        return "session.opened", {"profile_id": "orders", "profile_version": "3"}
    if seq % 10 == 1:
        return "policy.decided", {"tool": "orders.status", "decision": "allow",
                                  "reason": "read", "operation_id": f"op_{seq:08d}"}
    return "mcp.tool_call", {"server": "orders", "tool": "get_order_status", "outcome": "ok",
                             "reason": "", "possibly_executed": False,
                             "duration_ms": 12.5 + seq % 7, "operation_id": f"op_{seq:08d}"}
