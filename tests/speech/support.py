"""Builders for speech-plane tests: claims, catalogs, planners on a virtual clock."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import Claim, ClaimSource, ToolSpec
from vocero.speech.catalog import ClaimCatalog
from vocero.speech.model import GenerationRef, PlannedUnit, ToolEvidence
from vocero.speech.planner import PlannerSettings, UnitPlanner

DECEMBER_1 = 1_796_115_600.0
"""2026-12-01 09:00 UTC, a Tuesday."""


def claim(key: str, text: str, *, conditions: Sequence[str] = (), **extra: Any) -> Claim:
    sources = [ClaimSource(id=f"{key}-policy", version="3", passage=f"Evidence for {key}.")]
    return Claim(key=key, text=text, sources=sources, conditions=list(conditions), **extra)


RETURNS = [
    claim("returns.unopened",
          "Unopened items can be returned within 30 days of delivery for a full refund.",
          conditions=["Unopened", "within 30 days of delivery"]),
    claim("returns.opened",
          "Opened items can only be returned within 14 days for store credit, unless they "
          "arrived damaged.",
          conditions=["Opened", "only", "within 14 days", "for store credit",
                      "unless they arrived damaged"]),
    claim("hours.saturday", "On Saturdays our stores are open from 10 AM to 2 PM."),
]


_IDS = itertools.count(1)


class Ids:
    """Readable unit ids, unique across every planner of a test run."""

    def __init__(self, prefix: str = "unt") -> None:
        self._prefix = prefix

    def __call__(self) -> str:
        return f"{self._prefix}_{next(_IDS)}"


def planner(
    *,
    claims: Iterable[Claim] = RETURNS,
    grounding: str = "strict",
    word_budget: int = 60,
    clock: VirtualClock | None = None,
    generation: GenerationRef | None = None,
    caller: Sequence[str] = (),
    session_tools: Sequence[ToolEvidence] = (),
    tools: dict[str, ToolSpec] | None = None,
    timezone: str = "Europe/Madrid",
) -> UnitPlanner:
    settings = PlannerSettings(
        grounding=grounding,  # type: ignore[arg-type]
        word_budget=word_budget, locale="en-US", timezone=timezone,
    )
    return UnitPlanner(
        generation or GenerationRef(generation_id="gen_1", turn_id="turn_1"),
        catalog=ClaimCatalog(list(claims)), settings=settings,
        clock=clock or VirtualClock(start=DECEMBER_1), tools=tools, caller_lines=caller,
        session_tools=session_tools, new_id=Ids(),
    )


def spoken(units: Iterable[PlannedUnit]) -> list[str]:
    return [u.text for u in units if u.speakable]


def refused(units: Iterable[PlannedUnit]) -> list[tuple[str, str]]:
    return [(u.text, u.refusal) for u in units if not u.speakable]


def stream(p: UnitPlanner, text: str) -> list[PlannedUnit]:
    """Feed ``text`` a few characters at a time, as a model streams, then flush."""
    units: list[PlannedUnit] = []
    for start in range(0, len(text), 7):
        units += p.feed(text[start : start + 7])
    return units + p.flush()
