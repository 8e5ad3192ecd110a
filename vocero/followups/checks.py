"""What the queue does with one due phone follow-up, as a pure function of trusted facts.

In order (the first that applies wins):

========================  =========================================================
more than 24 h late       ``missed``: closed, never rung
profile ``approve``       ``awaiting_approval`` until an operator releases it
no profile / call tool    ``refused`` ``tool_not_allowed``
no identity or no phone   ``refused`` ``consent`` (nobody on file agreed to be called)
number in ``blocked``     ``refused`` ``blocked``
rung within the hour      ``refused`` ``suppressed`` (one call-back at a time)
caller's share spent      ``refused`` ``caller_budget`` (``caller_daily_share`` of the day)
tenant's day spent        ``refused`` ``budget`` (``daily_budget`` calls per UTC day)
otherwise                 ``place`` through the call tool (the policy gate decides next)
========================  =========================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Action = Literal["place", "hold", "missed", "refuse"]
_NOT_DIGITS = re.compile(r"[^\d+]")


@dataclass(frozen=True, slots=True)
class Facts:
    late: bool
    autonomy: str
    approved: bool
    call_tool: str
    phone: str | None
    blocked: frozenset[str]
    recently_rung: bool
    attempts_today: int
    daily_budget: int
    caller_attempts_today: int = 0
    caller_allowance: int = 1
    """How many of the day's calls this caller's call-backs may use (:mod:`.limits`)."""


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    reason: str = ""


def decide(facts: Facts) -> Decision:
    if facts.late:
        return Decision("missed", "late")
    if facts.autonomy == "approve" and not facts.approved:
        return Decision("hold")
    if not facts.call_tool:
        return Decision("refuse", "tool_not_allowed")
    if not facts.phone:
        return Decision("refuse", "consent")
    if normalize_phone(facts.phone) in facts.blocked:
        return Decision("refuse", "blocked")
    if facts.recently_rung:
        return Decision("refuse", "suppressed")
    if facts.caller_attempts_today >= facts.caller_allowance:
        return Decision("refuse", "caller_budget")
    if facts.attempts_today >= facts.daily_budget:
        return Decision("refuse", "budget")
    return Decision("place")


def normalize_phone(phone: str) -> str:
    """Digits (and a leading ``+``) only, so "+34 600-000-001" matches "+34600000001"."""
    return _NOT_DIGITS.sub("", phone.strip())


def blocked_set(numbers: list[str]) -> frozenset[str]:
    return frozenset(normalize_phone(n) for n in numbers if n.strip())
