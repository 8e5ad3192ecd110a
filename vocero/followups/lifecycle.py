"""The follow-up lifecycle (docs/followups.md) as one sans-IO transition table, and the duplicate
rule.

::

    scheduled --hold--> awaiting_approval --approve--> scheduled
        |  ^                  |
        |  +----retry---------+---(line not ready: due again in an hour)
        +--> placed | refused | missed          task (never sent; listed for people)

``placed``, ``refused``, ``missed`` are final. ``missed`` means more than 24 hours late: closed and
never rung, because a very late call-back is worse than none.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Final

from vocero.followups.records import OPEN, Followup

TRANSITIONS: Final[frozenset[tuple[str, str]]] = frozenset({
    ("scheduled", "awaiting_approval"),
    ("scheduled", "placed"),
    ("scheduled", "retry"),
    ("scheduled", "refused"),
    ("scheduled", "missed"),
    ("scheduled", "scheduled"),
    ("awaiting_approval", "scheduled"),
    ("awaiting_approval", "missed"),
    ("awaiting_approval", "refused"),
    ("retry", "placed"),
    ("retry", "retry"),
    ("retry", "refused"),
    ("retry", "missed"),
    ("retry", "awaiting_approval"),
})
FINAL: Final = frozenset({"placed", "refused", "missed"})
LATE_AFTER: Final = timedelta(hours=24)
RETRY_AFTER: Final = timedelta(hours=1)
DUPLICATE_WINDOW: Final = timedelta(minutes=15)
"""Two open follow-ups of one caller, on one channel, due within this of each other, are the
same promise."""


class InvalidFollowupTransitionError(Exception):
    def __init__(self, current: str, new: str) -> None:
        super().__init__(f"no follow-up transition from {current} to {new}")
        self.current = current
        self.new = new


def check(current: str, new: str) -> str:
    if (current, new) not in TRANSITIONS:
        raise InvalidFollowupTransitionError(current, new)
    return new


def late(followup: Followup, now: datetime) -> bool:
    """More than 24 hours after the time it was promised for."""
    return now - followup.promised_at > LATE_AFTER


def duplicate_of(
    candidates: Iterable[Followup], *, tenant_id: str, subject_ref: str, channel: str,
    due_at: datetime,
) -> Followup | None:
    """The open follow-up a new one with this *when* would repeat, if any (the earliest)."""
    same = [
        f for f in candidates
        if f.status in OPEN and (f.tenant_id, f.subject_ref, f.channel)
        == (tenant_id, subject_ref, channel) and abs(f.due_at - due_at) < DUPLICATE_WINDOW
    ]
    return min(same, key=lambda f: (f.created_at, f.id)) if same else None
