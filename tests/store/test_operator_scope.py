"""``OperatorScope`` narrows the store's queries in SQL (SQLite and PostgreSQL): pages of one
tenant's rows stay full and in order while another tenant's rows interleave; an audit event of no
session is only in the every-tenant scope."""

from __future__ import annotations

import time

import pytest

from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import Principal
from vocero.policy.gate import ResolvedTool
from vocero.policy.repository import ActionRepository
from vocero.store import AuditLog, Store
from vocero.store.paging import Cursor
from vocero.store.repositories import Conversations
from vocero.store.scope import EVERY_TENANT, OperatorScope

pytestmark = pytest.mark.anyio

A, B = "tenant-a", "tenant-b"
ROWS = 5
TOOL = ResolvedTool(name="records.read", server="records", tool="read_record",
                    action_class="read", required_scopes=frozenset(),
                    requires_confirmation=False, idempotent=True, lookup_tool="",
                    timeout_ms=1000)


async def _seed(store: Store) -> ActionRepository:
    repo = ActionRepository(store, VirtualClock(start=time.time()))
    audit = AuditLog(store)
    for tenant in (A, B):
        await Conversations(store).create_session(
            session_id=f"ses_{tenant}", tenant_id=tenant, subject_ref="sub", profile_id="p",
            profile_version="1")
    for i in range(ROWS):
        for tenant in (A, B):
            await audit.append("test.event", {"n": i}, session_id=f"ses_{tenant}")
            await repo.record_read(
                session_id=f"ses_{tenant}", operation_id=f"op_{tenant}_{i}", tool=TOOL,
                principal=Principal(subject_ref="sub", tenant_id=tenant, scopes=[]),
                arguments_hash="h", status="committed", reason="")
        await audit.append("auth.denied", {"n": i})
    return repo


async def test_audit_events_of_a_scope_page_in_sql(store: Store) -> None:
    await _seed(store)
    audit = AuditLog(store)
    only_a, after, pages = OperatorScope.of([A]), 0, []
    while True:
        page = await audit.events(after_seq=after, limit=2, scope=only_a)
        if not page:
            break
        pages.append(page)
        after = page[-1].seq
    # operation.read events are audited too: every A event, none of B's or of no session
    events = [e for p in pages for e in p]
    assert all(len(p) == 2 for p in pages[:-1])
    assert {e.session_id for e in events} == {f"ses_{A}"}
    assert [e.data["n"] for e in events if e.kind == "test.event"] == list(range(ROWS))
    everything = await audit.events(scope=EVERY_TENANT)
    assert {e.session_id for e in everything} == {f"ses_{A}", f"ses_{B}", ""}
    assert await audit.events(scope=OperatorScope.of([])) == []


async def test_operations_of_a_scope_page_in_sql(store: Store) -> None:
    repo = await _seed(store)
    cursor: Cursor | None = None
    listed: list[str] = []
    sizes: list[int] = []
    while True:
        page = await repo.operations_page(cursor=cursor, limit=2, scope=OperatorScope.of([B]))
        listed += [op.id for op in page.items]
        sizes.append(len(page.items))
        if page.next is None:
            break
        cursor = page.next
    assert sizes == [2, 2, 1]
    assert listed == [f"op_{B}_{i}" for i in range(ROWS - 1, -1, -1)]
