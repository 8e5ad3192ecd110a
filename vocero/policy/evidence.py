"""Evidence for required steps, as one sans-IO transition table
(docs/adr/0009-policy-outside-the-llm.md).

The one required step today is the read-back of a proposal revision: a confirmation binds only
after the caller heard the whole question. A step is ``missing`` until a generation starts
speaking it (``in_progress``, bound to that ``generation_id``); playout of *that* generation
completing makes it ``satisfied``, an interruption or cancel makes it ``invalidated`` until the
question is spoken again, and a client that cannot report playout leaves it ``unobservable``
(which never counts as delivered). Events of any other generation are stale and change nothing,
so a canceled generation's late completion can never satisfy the step. When the revision is
superseded the step is invalidated for good (``closed``).

The profile's required steps (:mod:`vocero.policy.steps`, ADR-0030) use the same table and the
same statuses, one step per session and step id. A ``disclosure`` is delivered exactly like a
read-back (bound to the generation speaking it). A ``verify_identity`` attempt is bound to its
own attempt id the same way: ``ASKED`` starts it, ``MATCHED`` satisfies it, ``ABANDONED`` (the
question went unanswered) invalidates it until asked again, ``UNVERIFIABLE`` (the read tool gave
no answer) leaves it ``unobservable``, and ``MISMATCHED`` fails it for good: ``invalidated``,
``closed`` and ``failed``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Literal

EvidenceStatus = Literal["missing", "in_progress", "satisfied", "invalidated", "unobservable"]
READBACK_STEP = "readback_delivered"
POLICY_VERSION = "readback.v1"


class Ev(enum.StrEnum):
    SPOKEN = "spoken"
    DELIVERED = "delivered"
    NOT_DELIVERED = "not_delivered"
    UNOBSERVED = "unobserved"
    ASKED = "asked"
    MATCHED = "matched"
    ABANDONED = "abandoned"
    UNVERIFIABLE = "unverifiable"
    MISMATCHED = "mismatched"


SAME_AS: dict[Ev, Ev] = {
    Ev.ASKED: Ev.SPOKEN,
    Ev.MATCHED: Ev.DELIVERED,
    Ev.ABANDONED: Ev.NOT_DELIVERED,
    Ev.UNVERIFIABLE: Ev.UNOBSERVED,
}
"""A verification attempt moves like a delivery: asked like spoken, matched like delivered..."""
DELIVERY_EVENTS = (Ev.SPOKEN, Ev.DELIVERED, Ev.NOT_DELIVERED, Ev.UNOBSERVED)
"""What a spoken step (a read-back, a disclosure) receives."""
VERIFY_EVENTS = (Ev.ASKED, Ev.MATCHED, Ev.ABANDONED, Ev.UNVERIFIABLE, Ev.MISMATCHED)
"""What a verification step receives."""
STARTS = frozenset({Ev.SPOKEN, Ev.ASKED})
"""Events that bind the step to a new generation (or verification attempt)."""


_S: EvidenceStatus = "satisfied"
_I: EvidenceStatus = "invalidated"
_P: EvidenceStatus = "in_progress"

TRANSITIONS: dict[tuple[str, Ev], EvidenceStatus] = {
    ("missing", Ev.SPOKEN): _P,
    ("missing", Ev.DELIVERED): "missing",
    ("missing", Ev.NOT_DELIVERED): "missing",
    ("missing", Ev.UNOBSERVED): "missing",
    (_P, Ev.SPOKEN): _P,
    (_P, Ev.DELIVERED): _S,
    (_P, Ev.NOT_DELIVERED): _I,
    (_P, Ev.UNOBSERVED): "unobservable",
    (_S, Ev.SPOKEN): _P,
    (_S, Ev.DELIVERED): _S,
    (_S, Ev.NOT_DELIVERED): _I,
    (_S, Ev.UNOBSERVED): _S,
    (_I, Ev.SPOKEN): _P,
    (_I, Ev.DELIVERED): _I,
    (_I, Ev.NOT_DELIVERED): _I,
    (_I, Ev.UNOBSERVED): _I,
    ("unobservable", Ev.SPOKEN): _P,
    ("unobservable", Ev.DELIVERED): "unobservable",
    ("unobservable", Ev.NOT_DELIVERED): _I,
    ("unobservable", Ev.UNOBSERVED): "unobservable",
}
"""Every (status, event) pair; delivery events only reach it for the step's own generation."""
STATUSES: tuple[EvidenceStatus, ...] = ("missing", _P, _S, _I, "unobservable")
TRANSITIONS.update({
    (status, alias): TRANSITIONS[(status, same)]
    for alias, same in SAME_AS.items()
    for status in STATUSES
})
TRANSITIONS.update({(status, Ev.MISMATCHED): _I if status == _P else status for status in STATUSES})
"""A verification attempt's events (a mismatch during an attempt also fails the step for good)."""


class InvalidEvidenceTransition(Exception):
    def __init__(self, status: str, event: Ev) -> None:
        super().__init__(f"no evidence transition from {status} on {event.value}")


@dataclass(frozen=True, slots=True)
class Step:
    proposal_id: str
    revision: int
    status: EvidenceStatus = "missing"
    generation_id: str = ""
    policy_version: str = POLICY_VERSION
    closed: bool = False
    """The revision was superseded: nothing can satisfy this step any more."""
    step: str = READBACK_STEP
    """Which step: the read-back of ``(proposal_id, revision)``, or a profile step's id."""
    failed: bool = False
    """A verification whose answer did not match the record (closed for the session)."""

    @property
    def satisfied(self) -> bool:
        return self.status == "satisfied" and not self.closed


def apply(step: Step, event: Ev, generation_id: str) -> Step:
    """The step after ``event`` reported for ``generation_id`` (unchanged when stale)."""
    if step.closed:
        return step
    if event not in STARTS and generation_id != step.generation_id:
        return step
    try:
        status = TRANSITIONS[(step.status, event)]
    except KeyError:
        raise InvalidEvidenceTransition(step.status, event) from None
    if event is Ev.MISMATCHED and step.status == "in_progress":
        return replace(step, status=status, closed=True, failed=True)
    if event in STARTS:
        return replace(step, status=status, generation_id=generation_id)
    return replace(step, status=status)


def supersede(step: Step) -> Step:
    return replace(step, status="invalidated", closed=True)
