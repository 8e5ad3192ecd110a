"""The follow-up plane wired into a process: its store, the built-in tool, reviews, the queue.

``serve`` builds :class:`FollowupServices` once, puts its tool into the runtime's
:class:`~vocero.contracts.builtins.BuiltinSet`, runs the end-of-session reviews and a pass of
the queue every ``--followups-tick-s`` seconds (after the runners and MCP servers are ready).
``vocero followups tick`` (:mod:`vocero.app.commands.followups`) runs one pass on its own
through :func:`tick_plane`: the same wiring and the action plane's outbox worker to dispatch the
calls. It
registers as a node of the store like a server does; a pass runs under the queue's named lease,
so a tick run beside ``serve`` (or N workers' periodic passes) never run two passes at once.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import anyio
import structlog
from anyio.abc import TaskStatus

from vocero.contracts.builtins import BuiltinSet
from vocero.contracts.clock import SystemClock
from vocero.contracts.ports import Clock
from vocero.followups import (
    FollowupQueue,
    FollowupTools,
    HeardLine,
    QueueSettings,
    SessionReviews,
    SqlFollowupStore,
)
from vocero.followups.ports import Directory, Hook, ProfileLookup
from vocero.followups.queue import QueueBusyError, QueueLease
from vocero.policy import ActionPlane
from vocero.policy.ports import Counter, StepHook
from vocero.store.engine import Store
from vocero.store.repositories import Conversations

log = structlog.get_logger("vocero.app.followups")

TELEPHONY = ("public_url", "twilio_auth_token", "twilio_api_base", "twilio_account_sid",
             "twilio_from")
"""The settings ``vocero followups tick`` takes for the built-in call tool ``carrier.call``."""


class OffsetClock(SystemClock):
    """Wall time that starts at a given instant and advances in real time (``--now``); waits
    are real."""

    def __init__(self, start: float) -> None:
        super().__init__()
        self._start = start
        self._origin = time.monotonic()

    def now(self) -> float:
        return self._start + (time.monotonic() - self._origin)


class _Flushable(Protocol):
    async def flush(self) -> None: ...


@dataclass
class FollowupServices:
    store: SqlFollowupStore
    tools: FollowupTools
    reviews: SessionReviews
    queue: FollowupQueue | None = None

    def session_ended(self, session_id: str) -> None:
        """A session let go of its connection: review what the caller heard."""
        self.reviews.session_ended(session_id)

    def attach_queue(
        self, plane: ActionPlane, *, profiles: ProfileLookup, directory: Directory,
        settings: QueueSettings | None = None, hook: Hook | None = None,
        lease: QueueLease | None = None,
    ) -> FollowupQueue:
        self.queue = FollowupQueue(self.store, plane.system_actions, profiles=profiles,
                                   directory=directory, settings=settings, hook=hook,
                                   lease=lease)
        return self.queue


def followup_services(
    store: Store, clock: Clock, conversations: Conversations, *,
    recorder: _Flushable | None = None, metrics: Counter | None = None,
    profiles: ProfileLookup | None = None,
) -> FollowupServices:
    """``profiles``: the profiles sessions run under, whose ``followups`` caps the tool keeps
    (without: nothing capped)."""
    sql = SqlFollowupStore(store)

    async def heard(session_id: str) -> Sequence[HeardLine]:
        if recorder is not None:
            await recorder.flush()  # the session's last words reach the store first
        entries = await conversations.history(session_id)
        return [HeardLine(role=e.role, text=e.text, generation_id=e.generation_id)
                for e in entries]

    def counted(kind: str) -> None:
        if metrics is not None:
            metrics.count("findings", kind=kind)

    reviews = SessionReviews(sql, heard, clock, on_finding=counted)
    return FollowupServices(store=sql, tools=FollowupTools(sql, clock, profiles),
                             reviews=reviews)


def builtin_tools(services: FollowupServices) -> BuiltinSet:
    """Vocero's own tools, one provider each (the grounded-speech plane adds its own here)."""
    return BuiltinSet(*[services.tools])


async def run_ticks(
    queue: FollowupQueue, clock: Clock, period_s: float, *, ready: anyio.Event | None = None,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """A pass of the queue every ``period_s`` seconds until cancelled (0: never)."""
    task_status.started()
    if period_s <= 0:
        return
    if ready is not None:
        await ready.wait()
    while True:
        try:
            await queue.tick(datetime.fromtimestamp(clock.now(), UTC))
        except QueueBusyError:  # another process is running this pass
            log.info("followups.tick_skipped", reason="held_elsewhere")
        except Exception:  # a failed pass is logged; the next one tries again
            log.exception("followups.tick_failed")
        await anyio.sleep(period_s)


@asynccontextmanager
async def tick_plane(
    args: argparse.Namespace, now: datetime, *, hook: Hook | None = None,
    step_hook: StepHook | None = None,
) -> AsyncIterator[tuple[FollowupServices, ActionPlane, Clock]]:
    """Everything one pass needs, running: store, MCP connections, the outbox worker."""
    from vocero.app.adapters.callbacks import carrier_call_tools
    from vocero.app.settings import Settings, db_url
    from vocero.identity.identities import load_identities
    from vocero.identity.profiles import load_profiles
    from vocero.mcp_gateway import McpConnections, McpGateway
    from vocero.mcp_gateway.pin_store import SqlPinRepository
    from vocero.store.audit import AuditLog
    from vocero.store.leases import NodeLease
    from vocero.store.migrate import upgrade_async

    settings = Settings(
        db=args.db, profiles=args.profiles, identities=args.identities,
        **{name: getattr(args, name) for name in TELEPHONY if hasattr(args, name)})
    identities = load_identities(settings.identities_file)
    profiles = load_profiles(settings.profiles_dir)
    url = db_url(settings.db)
    await upgrade_async(url)
    store = Store.open(url)
    clock = OffsetClock(now.timestamp())
    node = NodeLease(store, role="followups-tick")  # wall time, whatever --now says
    try:
        await node.register()
        services = followup_services(store, clock, Conversations(store, clock=clock),
                                     profiles=profiles.get)
        connections = McpConnections.from_profiles(
            list(profiles), audit=AuditLog(store), pins=SqlPinRepository(store))
        async with connections.running(), anyio.create_task_group() as tg:
            await tg.start(node.run)
            callbacks = carrier_call_tools(settings, services.store, profiles=profiles.get,
                                           audit=AuditLog(store), clock=clock)
            plane = ActionPlane(
                store, clock=clock, builtins=BuiltinSet(builtin_tools(services), callbacks),
                profiles=profiles.get,
                gateway_for=lambda profile: McpGateway(connections, profile), hook=step_hook,
                owner=node.id, lease_ttl_s=node.settings.ttl_s)
            services.attach_queue(plane, profiles=profiles.get, directory=identities,
                                  settings=QueueSettings(settle_wait_s=args.settle_s), hook=hook,
                                  lease=node)
            await tg.start(plane.run)
            try:
                yield services, plane, clock
            finally:
                await plane.drain(5)
                with anyio.CancelScope(shield=True):
                    await node.release()
                tg.cancel_scope.cancel()
    finally:
        await store.close()
