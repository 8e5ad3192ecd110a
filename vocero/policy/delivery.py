"""One session's delivery evidence: which generation is speaking which read-back, and what
playout reported about it (the async shell around :mod:`vocero.policy.evidence`).

The in-memory step answers the conversation at once; every change is also written to
``evidence_steps`` (with its audit event), which is what the final gate reads. A generation that
was canceled or interrupted is remembered, so its late "completed" report is ignored and audited.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import structlog

from vocero.policy.evidence import Ev, Step, apply, supersede
from vocero.policy.repository import ActionRepository

log = structlog.get_logger("vocero.policy")

Key = tuple[str, int]
Audit = Callable[[str, dict[str, Any]], Awaitable[None]]


MAX_GENERATIONS = 64
"""Generations remembered (which read-back each spoke, whether it was cut): the last 64."""


class DeliveryEvidence:
    def __init__(self, repo: ActionRepository, session_id: str, audit: Audit) -> None:
        self._repo = repo
        self._session_id = session_id
        self._audit = audit
        self._steps: dict[Key, Step] = {}
        self._parts: dict[Key, tuple[str, ...]] = {}
        self._by_generation: OrderedDict[str, Key] = OrderedDict()
        self._canceled: OrderedDict[str, None] = OrderedDict()
        self._last_heard = ""
        self._lock = anyio.Lock()
        """Held while a change is applied and stored: readers see stored evidence only."""

    async def satisfied(self, key: Key) -> bool:
        """Whether the read-back of ``key`` was delivered, once every evidence write that was
        already under way has committed (the final gate reads the stored evidence)."""
        async with self._lock:
            step = self._steps.get(key)
            return step is not None and step.satisfied

    def last_heard_was(self, key: Key) -> bool:
        """Whether the last thing the caller heard from the agent was a read-back of ``key``
        (otherwise a "yes" may answer whatever came after it)."""
        return self._by_generation.get(self._last_heard) == key

    def supersede(self, key: Key) -> None:
        if key in self._steps:
            self._steps[key] = supersede(self._steps[key])

    async def asked(
        self, key: Key, generation_id: str, *, first: bool = False, parts: tuple[str, ...] = ()
    ) -> None:
        """The read-back of ``key`` is being spoken in ``generation_id``; ``parts`` are its
        consequential values as spoken."""
        if first:
            self._steps.setdefault(key, Step(*key))
            self._parts.setdefault(key, parts)
        if key in self._steps and generation_id:
            _bounded_put(self._by_generation, generation_id, key)
            await self._apply(key, Ev.SPOKEN, generation_id)

    async def delivered(
        self, generation_id: str, *, heard_text: str, complete: bool, observable: bool = True
    ) -> None:
        """Playout evidence of one generation: what the caller heard of it, whether it played to
        its end. A read-back counts as delivered once every consequential value was heard, even
        if the caller cut off the closing question. A generation that "completed" is no proof by
        itself: synthesis may have failed part-way (the rest sent as text only) or the network
        stalled, and the heard text says what actually reached the caller's ear."""
        key = self._by_generation.get(generation_id)
        if heard_text or key is not None:
            self._last_heard = generation_id
        if key is None:
            if not complete:
                _bounded_put(self._canceled, generation_id, None)
            return
        parts = self._parts.get(key, ())
        if parts and observable:
            delivered = _heard_in_order(parts, heard_text)
        else:  # nothing to look for, or no playout reports (which never counts: UNOBSERVED)
            delivered = complete or _heard_in_order(parts, heard_text)
        if delivered and not observable:
            await self._apply(key, Ev.UNOBSERVED, generation_id)
            return
        if not delivered:
            _bounded_put(self._canceled, generation_id, None)
        elif generation_id in self._canceled:
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


def _bounded_put(mapping: OrderedDict[str, Any], key: str, value: Any) -> None:
    mapping[key] = value
    mapping.move_to_end(key)
    while len(mapping) > MAX_GENERATIONS:
        mapping.popitem(last=False)


def _heard_in_order(parts: tuple[str, ...], heard: str) -> bool:
    """Every part appears in the heard text, in order (the heard text is a prefix of what was
    said, cut at the last played position)."""
    if not parts:
        return False
    position = 0
    for part in parts:
        found = heard.find(part, position)
        if found < 0:
            return False
        position = found + len(part)
    return True
