"""One session's delivery evidence: which generation is speaking which read-back, and what
playout reported about it (the async shell around :mod:`vocero.policy.evidence`).

The in-memory step answers the conversation at once; every change is also written to
``evidence_steps`` (with its audit event), which is what the final gate reads. A generation that
was canceled or interrupted is remembered, so its late "completed" report is ignored and audited.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import structlog

from vocero.policy.evidence import Ev, Step, apply, supersede
from vocero.policy.repository import ActionRepository

log = structlog.get_logger("vocero.policy")

Key = tuple[str, int]
Audit = Callable[[str, dict[str, Any]], Awaitable[None]]


class DeliveryEvidence:
    def __init__(self, repo: ActionRepository, session_id: str, audit: Audit) -> None:
        self._repo = repo
        self._session_id = session_id
        self._audit = audit
        self._steps: dict[Key, Step] = {}
        self._by_generation: dict[str, Key] = {}
        self._canceled: set[str] = set()
        self._lock = anyio.Lock()
        """Held while a change is applied and stored: readers see stored evidence only."""

    async def satisfied(self, key: Key) -> bool:
        """Whether the read-back of ``key`` was delivered, once every evidence write that was
        already under way has committed (the final gate reads the stored evidence)."""
        async with self._lock:
            step = self._steps.get(key)
            return step is not None and step.satisfied

    def supersede(self, key: Key) -> None:
        if key in self._steps:
            self._steps[key] = supersede(self._steps[key])

    async def asked(self, key: Key, generation_id: str, *, first: bool = False) -> None:
        """The read-back of ``key`` is being spoken in ``generation_id``."""
        if first:
            self._steps.setdefault(key, Step(*key))
        if key in self._steps and generation_id:
            self._by_generation[generation_id] = key
            await self._apply(key, Ev.SPOKEN, generation_id)

    async def delivered(
        self, generation_id: str, delivered: bool, *, observable: bool = True
    ) -> None:
        if delivered and not observable:
            key = self._by_generation.get(generation_id)
            if key is not None:
                await self._apply(key, Ev.UNOBSERVED, generation_id)
            return
        if not delivered:
            self._canceled.add(generation_id)
        key = self._by_generation.get(generation_id)
        if key is None:
            return
        if delivered and generation_id in self._canceled:
            await self._audit(
                "evidence.stale_delivery_ignored",
                {"proposal_id": key[0], "revision": key[1], "generation_id": generation_id},
            )
            return
        await self._apply(key, Ev.DELIVERED if delivered else Ev.NOT_DELIVERED, generation_id)

    async def _apply(self, key: Key, event: Ev, generation_id: str) -> None:
        async with self._lock:
            step = self._steps[key]
            new = apply(step, event, generation_id)
            if new == step and event is not Ev.SPOKEN:
                return
            self._steps[key] = new
            try:
                await self._repo.record_evidence(self._session_id, new, cause=event.value)
            except Exception:  # the final gate reads storage: a missing write denies
                log.exception("policy.evidence_write_failed")
