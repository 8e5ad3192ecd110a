"""The follow-up queue (docs/followups.md "The queue"): one :meth:`FollowupQueue.tick` places what
is due.

A tick, in order:

1. **settles** the attempts already in flight: the call tool's operation ``committed`` with
   ``placed`` -> ``placed``; ``line_not_ready`` -> ``retry``, due again in an hour; refused by the
   tool or the gate -> ``refused`` with the reason; unknown beyond reconciliation -> ``refused``
   (it may have rung: never again). An attempt whose operation was never submitted (the process
   died in between) is submitted again *under the same operation id*;
2. closes follow-ups held for approval more than 24 hours past their time (``missed``);
3. takes the due phone follow-ups, oldest first, and for each applies :func:`.checks.decide`;
   at most ``max_per_tick`` per profile are placed (attempts still in flight count), and no
   caller's call-backs use more than their ``caller_daily_share`` of the day. Placing one
   records a new attempt and its operation id durably first, then submits it through
   :class:`~vocero.contracts.system_actions.SystemActions` (gate, operation, outbox);
4. waits (bounded) for what it submitted to settle and records the outcomes.

``task`` follow-ups are never touched: they are work for people.

Several processes may share the queue (``serve --workers N``, a ``vocero followups tick`` beside
a server, several machines): a pass runs under the named lease :data:`QUEUE_LEASE`, so one pass
runs at a time and the per-tick and daily budgets hold across processes. A pass that finds the
lease held elsewhere raises :class:`QueueBusyError` and changes nothing. A process that dies mid
pass loses the lease when its node's lease runs out; the next pass settles what it left.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

import msgspec
import structlog

from vocero.contracts.domain import AgentProfile, Caller, FollowupSettings, Principal
from vocero.contracts.system_actions import SystemAction, SystemActions, SystemActionState
from vocero.followups import lifecycle
from vocero.followups.checks import Facts, blocked_set, decide
from vocero.followups.limits import caller_allowance
from vocero.followups.ports import Directory, FollowupStore, Hook, ProfileLookup
from vocero.followups.records import Followup, new_id

log = structlog.get_logger("vocero.followups.queue")

TRANSIENT = frozenset({"tool_unavailable", "authorization_unavailable"})
"""Gate reasons that say "not now" (a server still connecting): the follow-up stays due."""
INITIATOR = "followups"
NO_SETTINGS = FollowupSettings()
QUEUE_LEASE = "followups.queue"
"""The named lease one pass of the queue runs under."""
MAY_HAVE_RUNG = "call_outcome_unknown"
"""A call tool's refusal that says the phone may have rung (the built-in ``carrier.call`` sent
again): the attempt is ``unknown`` and counts against the day's budgets."""


class QueueLease(Protocol):
    """Named leases shared by every process on the store
    (:class:`vocero.store.leases.NodeLease`)."""

    async def acquire(self, name: str) -> bool: ...

    async def release_lease(self, name: str) -> None: ...


class QueueBusyError(RuntimeError):
    """Another process is running a pass of the queue right now."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueSettings:
    scan_limit: int = 200
    """Due follow-ups looked at per tick (placements are capped by ``max_per_tick``)."""
    settle_wait_s: float = 10.0
    """How long a tick waits for its calls to settle before leaving them to the next tick."""
    suppression: timedelta = timedelta(hours=1)
    """A caller rung this recently is not rung again (``suppressed``)."""


class TickOutcome(msgspec.Struct, frozen=True, kw_only=True):
    followup_id: str
    status: str
    """The follow-up's status after this tick, or ``in_flight`` while its call is pending."""
    outcome_reason: str = ""
    operation_id: str = ""
    attempts: int = 0

    @classmethod
    def of(cls, followup: Followup, *, operation_id: str = "", status: str = "") -> TickOutcome:
        return cls(followup_id=followup.id, status=status or followup.status,
                   outcome_reason=followup.outcome_reason, operation_id=operation_id,
                   attempts=followup.attempts)


@dataclass
class _Tick:
    now: datetime
    busy: Counter[tuple[str, str]]
    rung: set[tuple[str, str]]
    spent: Counter[str]
    spent_by: Counter[tuple[str, str]]
    """This tick's calls per caller (their share of the day's budget)."""
    outcomes: list[TickOutcome]
    submitted: list[tuple[Followup, str]]


class FollowupQueue:
    def __init__(
        self,
        store: FollowupStore,
        actions: SystemActions,
        *,
        profiles: ProfileLookup,
        directory: Directory,
        settings: QueueSettings | None = None,
        hook: Hook | None = None,
        lease: QueueLease | None = None,
    ) -> None:
        self._store = store
        self._actions = actions
        self._profiles = profiles
        self._directory = directory
        self.settings = settings or QueueSettings()
        self._hook = hook
        self._lease = lease

    async def tick(self, now: datetime) -> list[TickOutcome]:
        """One pass of the queue at ``now`` (aware), under :data:`QUEUE_LEASE` when the queue
        has a lease (:class:`QueueBusyError` when another process holds it)."""
        if self._lease is None:
            return await self._pass(now)
        if not await self._lease.acquire(QUEUE_LEASE):
            raise QueueBusyError("another process is running a pass of the follow-up queue")
        try:
            return await self._pass(now)
        finally:
            await self._lease.release_lease(QUEUE_LEASE)

    async def _pass(self, now: datetime) -> list[TickOutcome]:
        now = now.astimezone(UTC)
        tick = _Tick(now=now, busy=Counter(), rung=set(), spent=Counter(), spent_by=Counter(),
                     outcomes=[], submitted=[])
        selected = await self._store.selection(now, now - lifecycle.LATE_AFTER,
                                               self.settings.scan_limit)
        for followup in selected.in_flight:
            await self._settle(tick, followup)
        for followup in selected.stale_held:
            moved = await self._store.move(followup.id, "missed", now=now, reason="late")
            tick.outcomes.append(TickOutcome.of(moved))
        for followup in selected.due:
            await self._consider(tick, followup)
        if tick.submitted and self.settings.settle_wait_s > 0:
            await self._await_submitted(tick)
        log.info("followups.tick", outcomes=len(tick.outcomes), placed=sum(
            1 for o in tick.outcomes if o.status == "placed"))
        return tick.outcomes

    # ---------------------------------------------------------------------- in flight

    async def _settle(self, tick: _Tick, followup: Followup) -> None:
        operation_id = followup.attempt_operation_id
        assert operation_id is not None
        state = await self._actions.state(operation_id)
        if state is None:  # recorded, never submitted: the same operation id again
            caller = self._directory.caller(followup.tenant_id, followup.subject_ref)
            if await self._submit(tick, followup, caller, operation_id) is not None:
                tick.busy[_profile_key(followup)] += 1
                tick.rung.add((followup.tenant_id, followup.subject_ref))
                tick.submitted.append((followup, operation_id))
            return
        if state.settled:
            await self._apply(tick, followup, state)
            return
        tick.busy[_profile_key(followup)] += 1  # still ringing: it counts, and is awaited
        tick.rung.add((followup.tenant_id, followup.subject_ref))
        tick.submitted.append((followup, operation_id))

    async def _await_submitted(self, tick: _Tick) -> None:
        ids = [operation_id for _, operation_id in tick.submitted]
        states = await self._actions.wait(ids, self.settings.settle_wait_s)
        for followup, operation_id in tick.submitted:
            state = states.get(operation_id)
            if state is not None and state.settled:
                await self._apply(tick, followup, state)
            else:
                tick.outcomes.append(TickOutcome.of(followup, operation_id=operation_id,
                                                    status="in_flight"))

    async def _apply(self, tick: _Tick, followup: Followup, state: SystemActionState) -> None:
        """Record what the call tool's operation came to."""
        now, operation_id = tick.now, state.operation_id
        answer = _answer(state)
        if answer == "line_not_ready":
            await self._store.finish_attempt(operation_id, "line_not_ready", answer, now)
            moved = await self._store.move(
                followup.id, "retry", now=now, reason="line_not_ready",
                due_at=now + lifecycle.RETRY_AFTER, expect_attempt=operation_id)
        elif state.status == "committed":
            await self._store.finish_attempt(operation_id, "placed", "", now)
            moved = await self._store.move(followup.id, "placed", now=now,
                                           expect_attempt=operation_id)
        else:
            reason = state.reason_code or state.status
            maybe_rang = state.status == "unknown" or reason == MAY_HAVE_RUNG
            await self._store.finish_attempt(
                operation_id, "unknown" if maybe_rang else "refused", reason, now)
            moved = await self._store.move(followup.id, "refused", now=now, reason=reason,
                                           expect_attempt=operation_id)
        self._step("outcome_recorded", followup.id)
        tick.outcomes.append(TickOutcome.of(moved, operation_id=operation_id))

    # --------------------------------------------------------------------------- due

    async def _consider(self, tick: _Tick, followup: Followup) -> None:
        profile = self._profiles(followup.profile_id, followup.profile_version)
        settings = profile.followups if profile is not None else NO_SETTINGS
        late = lifecycle.late(followup, tick.now)
        if not late and tick.busy[_profile_key(followup)] >= settings.max_per_tick:
            return  # this profile's calls for this tick are spent; it stays due
        caller = self._directory.caller(followup.tenant_id, followup.subject_ref)
        decision = decide(Facts(
            late=late, autonomy=settings.autonomy, approved=bool(followup.approved_by),
            call_tool=settings.call_tool if profile is not None else "",
            phone=caller.phone if caller is not None else None,
            blocked=blocked_set(settings.blocked),
            recently_rung=await self._recently_rung(tick, followup),
            attempts_today=await self._spent_today(tick, followup.tenant_id),
            daily_budget=settings.daily_budget,
            caller_attempts_today=await self._caller_spent_today(tick, followup),
            caller_allowance=caller_allowance(settings),
        ))
        if decision.action == "place":
            await self._place(tick, followup, caller)
            return
        status = {"missed": "missed", "hold": "awaiting_approval"}.get(decision.action,
                                                                        "refused")
        moved = await self._store.move(followup.id, status, now=tick.now, reason=decision.reason)
        tick.outcomes.append(TickOutcome.of(moved))

    async def _recently_rung(self, tick: _Tick, followup: Followup) -> bool:
        who = (followup.tenant_id, followup.subject_ref)
        if who in tick.rung:
            return True
        since = tick.now - self.settings.suppression
        return await self._store.placed_since(*who, since) > 0

    async def _spent_today(self, tick: _Tick, tenant_id: str) -> int:
        return await self._store.attempts_since(tenant_id, _day(tick.now)) \
            + tick.spent[tenant_id]

    async def _caller_spent_today(self, tick: _Tick, followup: Followup) -> int:
        who = (followup.tenant_id, followup.subject_ref)
        return await self._store.attempts_since(followup.tenant_id, _day(tick.now),
                                                subject_ref=followup.subject_ref) \
            + tick.spent_by[who]

    async def _place(self, tick: _Tick, followup: Followup, caller: Caller | None) -> None:
        operation_id = new_id("op")
        await self._store.begin_attempt(followup.id, operation_id, tick.now)
        self._step("attempt_recorded", followup.id)
        state = await self._submit(tick, followup, caller, operation_id)
        if state is None:
            return  # refused before anything was sent: no call spent
        self._step("submitted", followup.id)
        tick.busy[_profile_key(followup)] += 1
        tick.rung.add((followup.tenant_id, followup.subject_ref))
        tick.spent[followup.tenant_id] += 1
        tick.spent_by[(followup.tenant_id, followup.subject_ref)] += 1
        tick.submitted.append((followup, operation_id))

    async def _submit(
        self, tick: _Tick, followup: Followup, caller: Caller | None, operation_id: str
    ) -> SystemActionState | None:
        """Submit the attempt's operation; a denial is recorded here (``None`` back)."""
        profile = self._profiles(followup.profile_id, followup.profile_version)
        reason = _unplaceable(followup, caller, profile)
        if reason:
            await self._deny(tick, followup, operation_id, reason)
            return None
        assert caller is not None and profile is not None and followup.session_id is not None
        state = await self._actions.submit(SystemAction(
            operation_id=operation_id, session_id=followup.session_id,
            profile_id=profile.id, profile_version=profile.version,
            tool=profile.followups.call_tool,
            arguments={"phone": caller.phone, "reason": followup.reason,
                       "followup_id": followup.id},
            principal=Principal.of(caller), initiator=INITIATOR, subject=followup.id,
        ))
        if state.status == "denied":
            await self._deny(tick, followup, operation_id, state.reason_code or "refused")
            return None
        return state

    async def _deny(self, tick: _Tick, followup: Followup, operation_id: str,
                    reason: str) -> None:
        """The gate (or a missing fact) refused the attempt: nothing was sent. A transient
        reason leaves the follow-up due for the next tick."""
        transient = reason in TRANSIENT
        await self._store.finish_attempt(operation_id, "deferred" if transient else "refused",
                                         reason, tick.now)
        current = await self._store.get(followup.id)
        status = current.status if transient and current is not None else "refused"
        moved = await self._store.move(followup.id, status, now=tick.now,
                                       reason=reason, expect_attempt=operation_id)
        tick.outcomes.append(TickOutcome.of(moved, operation_id=operation_id,
                                            status="deferred" if transient else ""))

    def _step(self, step: str, followup_id: str) -> None:
        if self._hook is not None:
            self._hook(step, followup_id)


def _unplaceable(followup: Followup, caller: Caller | None,
                 profile: AgentProfile | None) -> str:
    if profile is None or not profile.followups.call_tool:
        return "tool_not_allowed"
    if caller is None or not caller.phone:
        return "consent"
    if followup.session_id is None:
        return "session_missing"
    return ""


def _answer(state: SystemActionState) -> str:
    """What the call tool said: ``placed``, ``line_not_ready``, or ``""``."""
    if state.status == "rejected" and state.reason_code == "line_not_ready":
        return "line_not_ready"
    content = (state.receipt or {}).get("content")
    if state.status == "committed" and isinstance(content, dict):
        return str(content.get("status", ""))
    return ""


def _day(now: datetime) -> datetime:
    """The start of ``now``'s UTC day: the daily budgets count from here."""
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def _profile_key(followup: Followup) -> tuple[str, str]:
    return followup.profile_id, followup.profile_version


def outcomes_json(now: datetime, outcomes: Sequence[TickOutcome]) -> dict[str, object]:
    """What ``vocero followups tick`` prints."""
    return {"now": now.isoformat(), "outcomes": [msgspec.to_builtins(o) for o in outcomes]}
