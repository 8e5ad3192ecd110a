"""Start-up recovery of sessions a crash interrupted (docs/protocol.md "Session lifecycle").

A process killed while sessions were live leaves their rows open (no ``closed_at``, a state such
as ``SPEAKING``) and no ``session.closed`` audit event. Before the restarted server accepts a
connection, each is closed in the store as ended by the crash (state ``FAILED``) and audited
``session.closed`` with reason ``server_crash``. It stays resumable with its ``resume_token``, like
a dropped connection, for the resume window counted from the restart, unless it had been idle
for longer than the window already. What the caller heard before the crash is reviewed like any
ended session's (``on_closed``: a call-back promised and never booked becomes a finding,
docs/followups.md "`promised_unbooked`").
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from vocero.store.audit import AuditLog
from vocero.store.repositories import CRASH_STATE, Conversations

log = structlog.get_logger("vocero.recovery")

CRASH_REASON = "server_crash"


async def recover_interrupted_sessions(
    conversations: Conversations,
    audit: AuditLog,
    *,
    window_s: float,
    on_closed: Callable[[str], None] | None = None,
) -> int:
    """Close and audit every session the last process left open, then hand each to
    ``on_closed``; returns how many."""
    recovered = await conversations.recover_interrupted(window_s=window_s)
    for session in recovered:
        await audit.record(
            "session.closed",
            {
                "state": CRASH_STATE,
                "previous_state": session.previous_state,
                "reason": CRASH_REASON,
                "resumable": session.resumable,
            },
            session_id=session.session_id,
        )
        if on_closed is not None:
            on_closed(session.session_id)
    if recovered:
        log.warning("sessions.crash_recovered", count=len(recovered))
    return len(recovered)
