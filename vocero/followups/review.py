"""The end-of-session review: a promise heard with no follow-up record behind it is a finding.

When a session ends, :class:`SessionReviews` (one bounded queue per process) reads what the
caller heard and records a ``promised_unbooked`` finding for every promise sentence
(:mod:`.promises`) of a session that has no follow-up record. A session with fewer than two
caller lines *and* fewer than five caller words is never summarised (docs/followups.md: ten one-turn
rows once carried an invented afternoon). Reviewing a session twice (a resumed session ends again)
stores each finding once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import anyio
import structlog
from anyio.abc import TaskStatus

from vocero.contracts.ports import Clock
from vocero.followups.ports import FollowupStore
from vocero.followups.promises import promises
from vocero.followups.records import Finding, finding_id

log = structlog.get_logger("vocero.followups.review")

PROMISED_UNBOOKED = "promised_unbooked"
MIN_CALLER_LINES = 2
MIN_CALLER_WORDS = 5
QUEUE_SIZE = 256


@dataclass(frozen=True, slots=True)
class HeardLine:
    role: str
    """``user`` or ``assistant``."""
    text: str
    """What was said (assistant: as heard, by playout)."""
    generation_id: str = ""


History = Callable[[str], Awaitable[Sequence[HeardLine]]]
FindingCounter = Callable[[str], None]


def summarisable(lines: Sequence[HeardLine]) -> bool:
    """False for a call with fewer than two caller lines and fewer than five caller words."""
    caller = [line.text for line in lines if line.role == "user" and line.text.strip()]
    words = sum(len(text.split()) for text in caller)
    return not (len(caller) < MIN_CALLER_LINES and words < MIN_CALLER_WORDS)


def unbooked(session_id: str, lines: Sequence[HeardLine], now: datetime) -> list[Finding]:
    """The ``promised_unbooked`` findings of a session known to have no follow-up record."""
    found: list[Finding] = []
    for line in lines:
        if line.role != "assistant":
            continue
        for promise in promises(line.text):
            found.append(Finding(
                id=finding_id(PROMISED_UNBOOKED, session_id, line.generation_id, promise.text),
                kind=PROMISED_UNBOOKED, session_id=session_id,
                generation_id=line.generation_id, text=promise.text, at=now))
    return found


class SessionReviews:
    def __init__(
        self,
        store: FollowupStore,
        history: History,
        clock: Clock,
        *,
        on_finding: FindingCounter | None = None,
        queue_size: int = QUEUE_SIZE,
    ) -> None:
        self._store = store
        self._history = history
        self._clock = clock
        self._on_finding = on_finding
        self._send, self._receive = anyio.create_memory_object_stream[str](queue_size)
        self._pending = 0
        self._idle = anyio.Event()
        self._idle.set()

    def session_ended(self, session_id: str) -> None:
        """Queue the session for review; when the queue is full the review is skipped (logged),
        never waited for: a session's close must not block on it."""
        try:
            self._send.send_nowait(session_id)
        except anyio.WouldBlock:
            log.warning("followups.review_dropped", session_id=session_id)
            return
        self._pending += 1
        if self._idle.is_set():
            self._idle = anyio.Event()

    async def settled(self) -> None:
        """Until every queued review is done (tests, shutdown)."""
        await self._idle.wait()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        async with self._receive:
            async for session_id in self._receive:
                try:
                    await self.review(session_id)
                except Exception:  # one session's review never stops the others
                    log.exception("followups.review_failed", session_id=session_id)
                finally:
                    self._pending -= 1
                    if self._pending == 0:
                        self._idle.set()

    async def review(self, session_id: str) -> list[Finding]:
        lines = await self._history(session_id)
        if not summarisable(lines) or await self._store.session_has_followups(session_id):
            return []
        now = datetime.fromtimestamp(self._clock.now(), UTC)
        added = await self._store.add_findings(unbooked(session_id, lines, now))
        for finding in added:
            log.info("followups.finding", kind=finding.kind, session_id=session_id)
            if self._on_finding is not None:
                self._on_finding(finding.kind)
        return added
