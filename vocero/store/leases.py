"""One process's lease on a shared store (docs/scaling.md "Leases and takeover", ADR-0006).

Several Vocero processes may share one database: ``serve --workers N`` on one machine, several
machines on one PostgreSQL, a ``vocero followups tick`` beside a server. Each registers a row of
``nodes`` and renews its lease every ``renew_every_s``; sessions and outbox rows it holds carry
its id and the same expiry, renewed together in one transaction. A process that stops renewing
(killed, frozen, cut off from the database) loses what it held once the lease runs out: any
other process may then take it over. Takeover is always a single conditional write, so two
processes never both win it (``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite has one
writer at a time, and every claim re-reads inside its ``BEGIN IMMEDIATE`` transaction).

A process that finds a node of its own host and PID namespace whose process is gone (a crash and
restart, a worker the supervisor lost) does not wait for the lease: it declares that node
``dead`` at once. Across hosts only the lease tells.

Named leases (``leases``) are singleton jobs: one pass of the follow-up queue at a time.

Lease times are wall-clock times of the machine (:func:`lease_clock`), never a business clock
such as ``followups tick --now``: processes compare each other's expiries.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import structlog
from sqlalchemy import CursorResult, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from vocero.contracts.clock import SystemClock
from vocero.contracts.ports import Clock, Timers
from vocero.store.engine import Store, conflicted
from vocero.store.models import LeaseRow, NodeRow, OutboxRow, SessionRow

log = structlog.get_logger("vocero.store.leases")

CONFLICT_ATTEMPTS = 3
"""Tries of one renewal that conflicts with another transaction before it counts as failed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseSettings:
    ttl_s: float = 15.0
    """How long a hold lasts without renewal: the takeover delay after a crash seen only by
    its lease (another host), and how long a database outage may last before peers take over."""
    renew_s: float = 0.0
    """Seconds between renewals; 0: a third of ``ttl_s``."""
    local_liveness: bool = True
    """Declare a node of this host whose process is gone dead at once, not after its lease."""

    @property
    def renew_every_s(self) -> float:
        return self.renew_s if self.renew_s > 0 else self.ttl_s / 3


def new_node_id() -> str:
    return f"node_{uuid.uuid4().hex[:20]}"


def host_key() -> str:
    """Where a process id means something: host name, kernel boot, PID namespace."""
    parts = [socket.gethostname()]
    for path in ("/proc/sys/kernel/random/boot_id",):
        try:
            parts.append(Path(path).read_text().strip())
        except OSError:
            parts.append("-")
    try:
        parts.append(os.readlink("/proc/self/ns/pid"))
    except OSError:
        parts.append("-")
    return "|".join(parts)[:256]


def process_gone(pid: int) -> bool:
    """No such process here (a zombie, killed and not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[:1] == ["Z"]


def lease_clock(clock: Clock | None = None) -> Clock:
    """The clock lease times are read from: ``clock`` (tests) or the machine's wall time."""
    return clock if clock is not None else SystemClock()


def lease_time(clock: Clock) -> datetime:
    return datetime.fromtimestamp(clock.now(), UTC)


class LeaseLostError(RuntimeError):
    """This process no longer holds what it was about to change (another one took it over)."""


class NodeLease:
    """This process's row of ``nodes`` and everything held under it."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Timers | None = None,
        settings: LeaseSettings | None = None,
        role: str = "serve",
        node_id: str = "",
    ) -> None:
        self.store = store
        self.clock = clock or SystemClock()
        self.settings = settings or LeaseSettings()
        self.role = role
        self.id = node_id or new_node_id()
        self.host = host_key()
        self.pid = os.getpid()
        self.renewed_until: datetime | None = None
        """The expiry of the last renewal that reached the store."""

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), UTC)

    def expiry(self) -> datetime:
        """What a hold taken now lasts until."""
        return self.now() + timedelta(seconds=self.settings.ttl_s)

    # ------------------------------------------------------------------------- lifecycle

    async def register(self) -> list[str]:
        """Enter ``nodes``, then declare the nodes whose hold is over (see :meth:`sweep`)."""
        now, until = self.now(), self.expiry()
        async with self.store.write() as session:
            session.add(NodeRow(id=self.id, host=self.host, pid=self.pid, role=self.role,
                                started_at=now, renewed_at=now, expires_at=until))
        self.renewed_until = until
        log.info("node.registered", node_id=self.id, role=self.role, ttl_s=self.settings.ttl_s)
        return await self.sweep()

    async def renew(self) -> None:
        """Extend this node's lease and every hold under it, in one transaction."""
        now, until = self.now(), self.expiry()
        async with self.store.write() as session:
            revived = await _rows(session, update(NodeRow).where(
                NodeRow.id == self.id, NodeRow.ended_at.is_not(None)
            ).values(ended_at=None, ending=None))
            await session.execute(update(NodeRow).where(NodeRow.id == self.id)
                                  .values(renewed_at=now, expires_at=until))
            await session.execute(update(SessionRow).where(
                SessionRow.owner_id == self.id, SessionRow.closed_at.is_(None)
            ).values(lease_expires_at=until))
            await session.execute(update(OutboxRow).where(
                OutboxRow.claimed_by == self.id, OutboxRow.done.is_(False)
            ).values(lease_expires_at=until))
            await session.execute(update(LeaseRow).where(LeaseRow.owner_id == self.id)
                                  .values(expires_at=until))
        if revived:  # it was declared over while this process was cut off: what others took
            log.warning("node.lease_resumed", node_id=self.id)  # over is theirs now
        self.renewed_until = until

    async def sweep(self) -> list[str]:
        """Mark the nodes whose hold is over: lease run out (``expired``) or, on this host,
        process gone (``dead``: its sessions, outbox rows and leases expire now)."""
        now = self.now()
        async with self.store.read() as session:
            live = (await session.execute(select(NodeRow.id, NodeRow.host, NodeRow.pid,
                                                 NodeRow.expires_at)
                                          .where(NodeRow.ended_at.is_(None),
                                                 NodeRow.id != self.id))).all()
        expired = [row.id for row in live if row.expires_at <= now]
        dead = [row.id for row in live if row.expires_at > now and self.settings.local_liveness
                and row.host == self.host and process_gone(row.pid)]
        if not expired and not dead:
            return []
        ended: list[str] = []
        async with self.store.write() as session:
            for node_id, ending in [(n, "expired") for n in expired] + [(n, "dead") for n in dead]:
                changed = await _rows(session, update(NodeRow).where(
                    NodeRow.id == node_id, NodeRow.ended_at.is_(None)
                ).values(ended_at=now, ending=ending, expires_at=now))
                if changed:
                    await _expire_holds(session, node_id, now)
                    ended.append(node_id)
        for node_id in ended:
            log.warning("node.ended", node_id=node_id, ending=(
                "dead" if node_id in dead else "expired"))
        return ended

    async def release(self) -> None:
        """A clean exit: everything held is handed back now, nothing waits for the lease."""
        now = self.now()
        async with self.store.write() as session:
            await session.execute(update(NodeRow).where(NodeRow.id == self.id)
                                  .values(ended_at=now, ending="released", expires_at=now))
            await _expire_holds(session, self.id, now)
            await session.execute(update(LeaseRow).where(LeaseRow.owner_id == self.id)
                                  .values(owner_id=None, expires_at=None))
        self.renewed_until = None
        log.info("node.released", node_id=self.id)

    async def run(
        self,
        *,
        on_beat: Callable[[], Awaitable[None]] | None = None,
        on_failure: Callable[[], Awaitable[None]] | None = None,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Renew and sweep every ``renew_every_s`` until cancelled; ``on_beat`` runs after each
        (the runtime takes over sessions whose holder is gone, and lets go of stolen ones). A
        failed renewal (database unreachable) is logged, ``on_failure`` runs, and it is tried
        again at the next beat."""
        task_status.started()
        while True:
            await self.clock.sleep(self.settings.renew_every_s)
            try:
                await self._beat()
            except Exception as exc:
                log.warning("node.renew_failed", node_id=self.id, error=type(exc).__name__,
                            detail=str(exc)[:300])
                if on_failure is not None:
                    await on_failure()
                continue
            if on_beat is not None:
                try:
                    await on_beat()
                except Exception:
                    log.exception("node.beat_failed", node_id=self.id)

    async def _beat(self) -> None:
        """Renew and sweep. A renewal chosen as a deadlock's victim (it updates every row this
        node holds while other transactions of this process update some of them, in another
        order) was rolled back by a store that answers: it runs again at once, and an outage
        is declared only if the store is away or the conflict persists."""
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            try:
                await self.renew()
                break
            except Exception as exc:
                if attempt == CONFLICT_ATTEMPTS or not conflicted(exc):
                    raise
                log.info("node.renew_conflict", node_id=self.id, attempt=attempt)
        await self.sweep()

    def holds(self) -> bool:
        """The last renewal that reached the store is still good."""
        return self.renewed_until is not None and self.renewed_until > self.now()

    # -------------------------------------------------------------------------- named

    async def acquire(self, name: str) -> bool:
        """Hold the named lease (free, expired or already ours); renewed with the node."""
        now, until = self.now(), self.expiry()
        async with self.store.write() as session:
            await session.execute(_insert_missing(self.store.dialect, name))
            won = await _rows(session, update(LeaseRow).where(
                LeaseRow.name == name,
                (LeaseRow.owner_id.is_(None) | (LeaseRow.owner_id == self.id)
                 | LeaseRow.expires_at.is_(None) | (LeaseRow.expires_at <= now)),
            ).values(owner_id=self.id, acquired_at=now, expires_at=until))
        return won == 1

    async def release_lease(self, name: str) -> None:
        async with self.store.write() as session:
            await session.execute(update(LeaseRow).where(
                LeaseRow.name == name, LeaseRow.owner_id == self.id
            ).values(owner_id=None, expires_at=None))


def _insert_missing(dialect: str, name: str) -> Any:
    values = {"name": name, "owner_id": None, "acquired_at": None, "expires_at": None}
    if dialect == "postgresql":
        return pg_insert(LeaseRow).values(**values).on_conflict_do_nothing(
            index_elements=["name"])
    return sqlite_insert(LeaseRow).values(**values).on_conflict_do_nothing(
        index_elements=["name"])


async def _rows(session: AsyncSession, statement: Any) -> int:
    result = await session.execute(statement)
    assert isinstance(result, CursorResult)
    return int(result.rowcount)


async def _expire_holds(session: AsyncSession, node_id: str, now: datetime) -> None:
    """What ``node_id`` held is free to take over from ``now``."""
    await session.execute(update(SessionRow).where(
        SessionRow.owner_id == node_id, SessionRow.closed_at.is_(None)
    ).values(lease_expires_at=now))
    await session.execute(update(OutboxRow).where(
        OutboxRow.claimed_by == node_id, OutboxRow.done.is_(False)
    ).values(lease_expires_at=now, claimed_at=None))
    await session.execute(update(LeaseRow).where(LeaseRow.owner_id == node_id)
                          .values(expires_at=now))
