"""How many follow-ups a caller and a session may have, and a caller's share of the day's calls.

A profile's ``followups`` block sets them (docs/followups.md "Bounds"; defaults in
:class:`~vocero.contracts.domain.FollowupSettings`, checked at load):

=======================  ==================================================  ==================
``max_open_per_caller``  call-backs one caller has waiting (``scheduled``,   ``caller_limit``
                         ``awaiting_approval``, ``retry``), every session
``max_per_session``      follow-ups one session recorded, any status or      ``session_limit``
                         channel (tasks too)
``caller_daily_share``   the share of ``daily_budget`` one caller's          ``caller_budget``
                         call-backs may ring in a UTC day (rounded up)       (the queue)
=======================  ==================================================  ==================

``followups.record`` refuses a follow-up over either cap with ``NOT recorded`` and the code
(nothing stored); the same *when* of an open one is still a duplicate, never refused. Tasks do
not count toward a caller's open call-backs: no queue ever closes one, so they would fill the cap
for good; the per-session cap bounds them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from vocero.contracts.domain import FollowupSettings

WAITING = frozenset({"scheduled", "awaiting_approval", "retry"})
"""A call-back still owed to the caller: what ``max_open_per_caller`` counts."""


@dataclass(frozen=True, slots=True)
class RecordLimits:
    open_per_caller: int
    per_session: int

    @classmethod
    def of(cls, settings: FollowupSettings) -> RecordLimits:
        return cls(open_per_caller=settings.max_open_per_caller,
                   per_session=settings.max_per_session)


LimitsLookup = Callable[[str, str], RecordLimits]
"""The limits of the profile ``(id, version)`` a session runs under."""


class FollowupLimitError(Exception):
    """A follow-up over a cap: ``reason_code`` says which, ``limit`` how many are allowed."""

    def __init__(self, reason_code: str, limit: int) -> None:
        super().__init__(f"{reason_code}: at most {limit}")
        self.reason_code = reason_code
        self.limit = limit


def over_cap(
    limits: RecordLimits, *, channel: str, waiting: int, in_session: int
) -> FollowupLimitError | None:
    """The cap one more follow-up on ``channel`` would pass, given the caller's ``waiting``
    call-backs and the follow-ups ``in_session`` (``None``: within both)."""
    if in_session >= limits.per_session:
        return FollowupLimitError("session_limit", limits.per_session)
    if channel == "phone" and waiting >= limits.open_per_caller:
        return FollowupLimitError("caller_limit", limits.open_per_caller)
    return None


def caller_allowance(settings: FollowupSettings) -> int:
    """Calls one caller may be rung in a day: their share of ``daily_budget``, rounded up
    (exactly: a share of 0.1 of 30 is 3, not 4), and none when the budget is none."""
    share = Fraction(str(settings.caller_daily_share))
    return math.ceil(share * max(settings.daily_budget, 0))
