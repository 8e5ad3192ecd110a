"""``vocero bench grounding``: what grounded speech costs per spoken unit (docs/grounding.md
"Cost").

Goal: p95 ≤ 0.5 ms per unit for the planner and for one admission check, so grounding never
shows in time to first sound. The planner is timed on the work a real turn gives it, each case
per unit planned: approved claims of the demo catalog, a model sentence checked against a tool
result (supported and invented), an assisted paraphrase checked against its claims, and the
read-out of an appointments list. Admission is timed per check of a planned unit. Pure CPU, no
I/O: the figures are the planner's and the check's own cost.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vocero.bench.stats import percentiles
from vocero.contracts.clock import SystemClock
from vocero.contracts.domain import AgentProfile
from vocero.contracts.ports import ClaimAnswer
from vocero.identity.profiles import load_profiles
from vocero.speech import (
    Admission,
    ClaimCatalog,
    GenerationRef,
    PlannedUnit,
    PlannerSettings,
    ToolEvidence,
    UnitPlanner,
)

GOAL_P95_MS = 0.5
PROFILES = Path(__file__).resolve().parents[2] / "fixtures" / "profiles"
LIST = ToolEvidence(
    tool_call_id="call_list", tool="appointments.list",
    result={"appointments": [
        {"appointment_id": "APT-1001", "date": "2026-12-03", "time": "10:00",
         "timezone": "Europe/Madrid", "service": "Boiler inspection", "status": "scheduled",
         "version": 1},
        {"appointment_id": "APT-1002", "date": "2026-12-10", "time": "16:30",
         "timezone": "Europe/Madrid", "service": "Window repair", "status": "scheduled",
         "version": 1},
    ]},
)
ORDER = ToolEvidence(
    tool_call_id="call_order", tool="orders.status", arguments={"order_id": "A123"},
    result={"order_id": "A123", "status": "shipped", "eta": "2026-12-02"},
)
PARAPHRASE = (
    "Opened items? You can only send them back within 14 days for store credit, unless they "
    "arrived damaged."
)


def _demo() -> AgentProfile:
    demo = load_profiles(PROFILES).get("demo")
    if demo is None:
        raise LookupError("the demo profile is missing from fixtures/profiles")
    return demo


class _Cases:
    def __init__(self, demo: AgentProfile) -> None:
        self.demo = demo
        self.catalog = ClaimCatalog.of(demo.claims)
        self.tools = {t.name: t for t in demo.tools}
        self.clock = SystemClock()
        self.count = 0

    def planner(self, grounding: str = "strict") -> UnitPlanner:
        self.count += 1
        settings = PlannerSettings(grounding=grounding, word_budget=60,  # type: ignore[arg-type]
                                   locale="en-US", timezone="Europe/Madrid")
        return UnitPlanner(
            GenerationRef(f"gen_{self.count}", "turn_1"), catalog=self.catalog,
            settings=settings, clock=self.clock, tools=self.tools,
            caller_lines=["when will order A123 arrive", "and can I return an opened blender"],
        )

    def claims(self) -> list[PlannedUnit]:
        return self.planner().answer(ClaimAnswer(claim_keys=["returns.opened", "hours.saturday"]))

    def checked_sentences(self) -> list[PlannedUnit]:
        p = self.planner()
        p.add_tool_result(ORDER)
        return [*p.feed("Order A123 should arrive tomorrow, December 2. "),
                *p.feed("It left our warehouse on Friday. "), *p.flush()]

    def paraphrase(self) -> list[PlannedUnit]:
        return self.planner("assisted").claims(["returns.opened"], paraphrase=PARAPHRASE)

    def readout(self) -> list[PlannedUnit]:
        return self.planner().tool_result(LIST)


def _per_unit(case: Callable[[], list[PlannedUnit]], iterations: int) -> list[float]:
    samples: list[float] = []
    for _ in range(iterations):
        started = time.perf_counter()
        units = case()
        elapsed = (time.perf_counter() - started) * 1000.0
        samples.append(elapsed / max(1, len(units)))
    return samples


def _admission(cases: _Cases, iterations: int) -> list[float]:
    units = cases.claims() + cases.checked_sentences()
    gate = Admission(max_age_ms=cases.demo.unit_max_age_ms)
    samples: list[float] = []
    for i in range(iterations):
        unit = units[i % len(units)]
        gate.begin(unit.generation_id)
        now = cases.clock.monotonic()
        started = time.perf_counter()
        gate.admit(unit, now)
        samples.append((time.perf_counter() - started) * 1000.0)
    return samples


async def grounding(args: argparse.Namespace) -> dict[str, Any]:
    iterations = max(int(args.iterations), 1) * 10
    cases = _Cases(_demo())
    for case in (cases.claims, cases.checked_sentences, cases.paraphrase, cases.readout):
        _per_unit(case, 20)  # warm caches (Babel's locale data, compiled patterns)
    planner: dict[str, Any] = {}
    every: list[float] = []
    for name, case in (("claims", cases.claims), ("checked_model_text", cases.checked_sentences),
                       ("assisted_paraphrase", cases.paraphrase), ("readout", cases.readout)):
        samples = _per_unit(case, iterations)
        planner[name] = percentiles(samples)
        every += samples
    admission = percentiles(_admission(cases, iterations * 4))
    overall = percentiles(every)
    return {
        "bench": "grounding",
        "unit": "ms per spoken unit",
        "goal_p95_ms": GOAL_P95_MS,
        "planner": {"all": overall, **planner},
        "admission_check": admission,
        "within_goal": overall["p95"] <= GOAL_P95_MS and admission["p95"] <= GOAL_P95_MS,
    }
