"""Reason codes of the action path and what the conversation may say about each.

A code names the check that failed (ADR-0009: the record says which check denied execution), so a
spike of ``required_delivery_missing`` reads differently from one of ``authorization_expired``.
Codes label the ``vocero_denials_total`` counter; the explanations are user-safe and never
reveal internal detail (that stays in the audit log under opaque references).
"""

from __future__ import annotations

from typing import Final, Literal

Reason = Literal[
    "tool_not_allowed",
    "prohibited",
    "scope_missing",
    "cross_tenant_target",
    "arguments_unresolved",
    "tool_unavailable",
    "tool_pending",
    "confirmation_missing",
    "confirmation_unclear",
    "confirmation_used",
    "no_active_question",
    "proposal_changed",
    "authorization_expired",
    "required_delivery_missing",
    "disclosure_not_heard",
    "identity_not_verified",
    "authorization_unavailable",
    "not_authorized",
]

EXPLANATIONS: Final[dict[str, str]] = {
    "tool_not_allowed": "I can't do that here.",
    "prohibited": "I'm not able to do that over the phone.",
    "scope_missing": "Your account doesn't allow me to do that.",
    "cross_tenant_target": "I can't act on that record from your account.",
    "arguments_unresolved": "I need a little more detail before I can do that.",
    "tool_unavailable": "That service isn't available right now, so I haven't changed anything.",
    "tool_pending": (
        "I can't use that service yet: it is waiting for a check by our team, so I haven't done "
        "anything."
    ),
    "confirmation_missing": "I need your confirmation before I do that.",
    "confirmation_unclear": "Sorry, I need a clear yes or no.",
    "confirmation_used": "That request has already been handled.",
    "no_active_question": "There is nothing waiting for your confirmation right now.",
    "proposal_changed": (
        "The details changed since you confirmed, so I haven't done it. Let me confirm the new "
        "details with you."
    ),
    "authorization_expired": (
        "That confirmation has expired, so I haven't made the change. Tell me again if you still "
        "want it."
    ),
    "required_delivery_missing": "I need to read you the full details before you confirm.",
    "disclosure_not_heard": (
        "I have to finish an important notice before I can do that, so I haven't changed "
        "anything."
    ),
    "identity_not_verified": (
        "I couldn't verify your identity, so I haven't made that change."
    ),
    "authorization_unavailable": (
        "I can't verify that right now, so I haven't made any change."
    ),
    "not_authorized": "I can't do that without your confirmation.",
}


def explain(reason: str) -> str:
    return EXPLANATIONS.get(reason, "I can't do that right now.")
