"""Admission of spoken units (docs/grounding.md "Admission").

Sans-IO: :class:`Admission` holds what the decision needs (the current generation, the canceled
ones, the current question revision, each generation's ordering history) and answers, for a unit
and a time, ``ready``, ``stale``, ``canceled`` or ``expired``. It never awaits and never acts;
the speaker calls it at every boundary (after planning, after synthesis, before each audio chunk
is submitted, after every await) and acts on the answer.

Rules, in the order they are checked:

1. ``canceled``: the unit's generation was canceled. Terminal: no retry, cached plan or later
   ``begin`` of the same id ever admits anything of it again.
2. ``stale``: another generation is current (``generation_superseded``); the question was
   revised since the unit was planned (``question_revised``); or the unit is older in its
   generation than one already admitted (``out_of_order``). The ordering history belongs to the
   generation, not to a queue: it survives the queue draining.
3. ``expired``: not admitted yet and older than ``unit_max_age_ms`` (``max_age``). Once a unit's
   first audio was admitted, its later chunks are not aged (a long unit is not cut by its own
   length), but rules 1 and 2 still apply to every chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

Disposition = Literal["ready", "stale", "canceled", "expired"]


class Admissible(Protocol):
    """What admission reads of a unit (a :class:`~vocero.speech.model.PlannedUnit`)."""

    @property
    def unit_id(self) -> str: ...

    @property
    def index(self) -> int: ...

    @property
    def generation_id(self) -> str: ...

    @property
    def question_revision(self) -> int: ...

    @property
    def planned_mono(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Decision:
    disposition: Disposition
    reason_code: str = ""

    @property
    def ready(self) -> bool:
        return self.disposition == "ready"


READY = Decision("ready")
CANCELED = Decision("canceled", "generation_canceled")
SUPERSEDED = Decision("stale", "generation_superseded")
REVISED = Decision("stale", "question_revised")
OUT_OF_ORDER = Decision("stale", "out_of_order")
EXPIRED = Decision("expired", "max_age")


@dataclass(slots=True)
class _History:
    """What one generation has admitted: the highest index, and which units started."""

    highest: int = -1
    started: set[str] = field(default_factory=set)


class Admission:
    """One per session. ``max_age_ms`` is the profile's ``unit_max_age_ms``; times are the
    monotonic seconds of the clock the planner stamped units with."""

    def __init__(self, *, max_age_ms: int = 4000) -> None:
        if max_age_ms <= 0:
            raise ValueError("max_age_ms must be positive")
        self._max_age_s = max_age_ms / 1000.0
        self._current = ""
        self._revision = 0
        self._canceled: set[str] = set()
        self._history: dict[str, _History] = {}

    # ------------------------------------------------------------------------ events

    @property
    def current(self) -> str:
        return self._current

    @property
    def question_revision(self) -> int:
        return self._revision

    def begin(self, generation_id: str) -> None:
        """``generation_id`` is now the generation whose units may play."""
        self._current = generation_id

    def cancel(self, generation_id: str) -> None:
        """Cancel a generation for good."""
        self._canceled.add(generation_id)
        if generation_id == self._current:
            self._current = ""

    def revise_question(self) -> int:
        """The caller changed the question: every unit planned before is stale."""
        self._revision += 1
        return self._revision

    def canceled(self, generation_id: str) -> bool:
        return generation_id in self._canceled

    # ------------------------------------------------------------------------ decisions

    def check(self, unit: Admissible, now: float) -> Decision:
        """The decision for ``unit`` at ``now``, changing nothing."""
        if unit.generation_id in self._canceled:
            return CANCELED
        if unit.generation_id != self._current:
            return SUPERSEDED
        if unit.question_revision != self._revision:
            return REVISED
        history = self._history.get(unit.generation_id)
        started = history is not None and unit.unit_id in history.started
        if history is not None and not started and unit.index <= history.highest:
            return OUT_OF_ORDER
        if not started and now - unit.planned_mono > self._max_age_s:
            return EXPIRED
        return READY

    def admit(self, unit: Admissible, now: float) -> Decision:
        """:meth:`check`, and on ``ready`` remember the unit in its generation's history (so an
        older unit arriving later is refused, and this one's later chunks are not aged)."""
        decision = self.check(unit, now)
        if decision.ready:
            history = self._history.setdefault(unit.generation_id, _History())
            if unit.unit_id not in history.started:
                history.started.add(unit.unit_id)
                history.highest = max(history.highest, unit.index)
        return decision
