"""Whether a caller's answer binds: a deterministic judgement around a model classification.

The model only says what the answer sounded like (``confirm`` / ``reject`` / ``uncertain``). The
code here decides whether that answer applies: it must answer the *active* question (the exact
proposal revision the caller was last asked about, and the last thing the agent said: a "yes"
after another answer may answer that one), come in a later turn than the question, arrive before
the question expires, and, for a "yes", only after the caller heard every consequential value of
the read-back.
"I think so", overlapping speech and anything uncertain lead to a clarification, never a Boolean.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import Any, Literal

Answer = Literal["confirm", "reject", "uncertain"]
Source = Literal["button", "speech"]


@dataclass(frozen=True, slots=True)
class Question:
    """The confirmation question the caller was asked (one proposal revision)."""

    proposal_id: str
    revision: int
    tool: str
    summary: str
    expires_at: float
    asked_turn_id: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    expires_at_text: str = ""
    parts: tuple[str, ...] = ()
    """The spoken form of every consequential value of the read-back, in order."""


@dataclass(frozen=True, slots=True)
class Judgement:
    binds: bool
    reason: str = ""
    keep_question: bool = True
    """False when the question can no longer be answered (expired, answered)."""


def judge(
    question: Question | None,
    *,
    proposal_id: str,
    revision: int,
    answer: Answer,
    source: Source,
    turn_id: str,
    now: float,
    delivered: bool,
    last_heard: bool = True,
    current_revisions: Mapping[str, int],
    used: Set[tuple[str, int]],
) -> Judgement:
    """Judge one answer. ``current_revisions`` maps this session's proposals to their current
    revision; ``used`` holds the revisions whose confirmation was already consumed."""
    if answer == "uncertain":
        return Judgement(False, "confirmation_unclear")
    target = (proposal_id, revision)
    if question is None or target != (question.proposal_id, question.revision):
        return Judgement(False, _not_active(target, current_revisions, used),
                         keep_question=question is not None)
    if source == "speech" and turn_id == question.asked_turn_id:
        return Judgement(False, "confirmation_unclear")
    if source == "speech" and not last_heard:
        return Judgement(False, "different_question")
    if now >= question.expires_at:
        return Judgement(False, "authorization_expired", keep_question=False)
    if answer == "reject":
        return Judgement(True, keep_question=False)
    if not delivered:
        return Judgement(False, "required_delivery_missing")
    return Judgement(True, keep_question=False)


def _not_active(
    target: tuple[str, int], current_revisions: Mapping[str, int], used: Set[tuple[str, int]]
) -> str:
    proposal_id, revision = target
    if target in used:
        return "confirmation_used"
    current = current_revisions.get(proposal_id)
    if current is not None and revision < current:
        return "proposal_changed"
    return "no_active_question"
