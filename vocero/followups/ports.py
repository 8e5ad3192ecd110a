"""What the follow-up plane needs from the rest of the process, as ports the app wires.

* :class:`FollowupStore` - its own durable state (SQLAlchemy adapter: :mod:`.sql`);
* :class:`Directory` - who a ``subject_ref`` is (phone number, scopes), from the identities file;
* :data:`ProfileLookup` - the profile a follow-up was promised under (its ``followups`` block);
* :class:`~vocero.contracts.system_actions.SystemActions` - the policy plane's entry point for
  operations Vocero starts itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from vocero.contracts.domain import AgentProfile, Caller
from vocero.followups.limits import LimitsLookup
from vocero.followups.records import Attempt, AttemptStatus, Finding, Followup, FollowupDraft
from vocero.store.paging import Cursor, Page
from vocero.store.scope import EVERY_TENANT, OperatorScope

ProfileLookup = Callable[[str, str], AgentProfile | None]
Hook = Callable[[str, str], None]
"""``(step, followup_id)`` after each durable step of the queue commits: ``attempt_recorded``,
``submitted``, ``outcome_recorded``. Tests kill the process there; production passes nothing."""


class Selection(NamedTuple):
    in_flight: list[Followup]
    stale_held: list[Followup]
    due: list[Followup]


class Directory(Protocol):
    def caller(self, tenant: str, subject_ref: str) -> Caller | None:
        """The identity behind an opaque subject reference, or ``None`` when it is gone."""
        ...


class NotAwaitingApprovalError(Exception):
    """An operator tried to approve a follow-up that is not held for approval."""

    def __init__(self, followup_id: str, status: str) -> None:
        super().__init__(f"follow-up {followup_id!r} is {status}, not awaiting_approval")
        self.followup_id = followup_id
        self.status = status


class FollowupStore(Protocol):
    # ------------------------------------------------------------------ recording, reading

    async def record(
        self, draft: FollowupDraft, now: datetime, *, limits: LimitsLookup | None = None
    ) -> tuple[Followup, bool]:
        """Store ``draft`` unless the recording operation already did (same record back) or an
        open follow-up of the same caller has the same *when* (``(existing, True)``). With
        ``limits`` (of the session's profile), one over a cap raises
        :class:`~vocero.followups.limits.FollowupLimitError` and stores nothing but the
        refusal's audit event; counting and adding happen in one transaction."""
        ...

    async def get(self, followup_id: str) -> Followup | None: ...

    async def list_followups(
        self, *, session_id: str | None = None, status: str | None = None,
        cursor: Cursor | None = None, limit: int = 100, scope: OperatorScope = EVERY_TENANT,
    ) -> Page[Followup]:
        """Newest first (``created_at``, then ``id``), after ``cursor``, of ``scope``'s
        tenants."""
        ...

    async def approve(
        self, followup_id: str, *, by: str, note: str, now: datetime
    ) -> Followup | None:
        """``awaiting_approval`` -> ``scheduled`` (approved); ``None`` when unknown; raises
        :class:`NotAwaitingApprovalError` for any other status."""
        ...

    # ---------------------------------------------------------------------------- queue

    async def selection(self, now: datetime, held_before: datetime, limit: int) -> Selection:
        """What one pass of the queue looks at, read in one transaction (at most ``limit`` of
        each): follow-ups with an attempt in flight; ``awaiting_approval`` ones promised before
        ``held_before`` (to close as missed); due phone follow-ups (``scheduled``/``retry``, no
        attempt in flight, due at or before ``now``), oldest first."""
        ...

    async def move(
        self, followup_id: str, status: str, *, now: datetime, reason: str = "",
        due_at: datetime | None = None, expect_attempt: str | None = None,
    ) -> Followup:
        """Change the status (checked against the follow-up lifecycle), audited; ``due_at``
        moves it (retry); ``expect_attempt`` closes that attempt's link."""
        ...

    async def begin_attempt(self, followup_id: str, operation_id: str, now: datetime) -> Attempt:
        """Record a new attempt and its operation id durably, before anything is submitted."""
        ...

    async def finish_attempt(
        self, operation_id: str, status: AttemptStatus, reason: str, now: datetime
    ) -> None: ...

    async def attempts_since(
        self, tenant_id: str, since: datetime, subject_ref: str | None = None
    ) -> int:
        """Attempts that may have rung a phone (not refused or deferred) for the daily budget:
        the tenant's, or one caller's with ``subject_ref`` (their share of it)."""
        ...

    async def placed_since(self, tenant_id: str, subject_ref: str, since: datetime) -> int:
        """Calls placed to this caller since ``since`` (suppression window)."""
        ...

    # ------------------------------------------------------------------------- findings

    async def session_has_followups(self, session_id: str) -> bool: ...

    async def add_findings(self, findings: Sequence[Finding]) -> list[Finding]:
        """Store findings not stored before (by id); returns the new ones."""
        ...

    async def findings(
        self, *, session_id: str | None = None, kind: str | None = None,
        cursor: Cursor | None = None, limit: int = 100, scope: OperatorScope = EVERY_TENANT,
    ) -> Page[Finding]:
        """Newest first (``at``, then ``id``), after ``cursor``, of ``scope``'s tenants."""
        ...
