"""Admission at every boundary: ready / stale / canceled / expired, the seed's fixtures (a
correction after approval, a held unit that expires while output is blocked), and properties
over any interleaving of cancel, synthesis completion, pacing and queue draining."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tests.speech.support import RETURNS, planner, spoken
from vocero.contracts.clock import VirtualClock
from vocero.speech.admission import Admission, Decision
from vocero.speech.model import GenerationRef, PlannedUnit

pytestmark = pytest.mark.anyio

MAX_AGE_MS = 4000


def unit(generation: str = "gen_1", index: int = 0, *, revision: int = 0, planned: float = 0.0,
         unit_id: str = "") -> PlannedUnit:
    return PlannedUnit(
        unit_id=unit_id or f"{generation}:{index}", index=index, kind="conversational",
        text="Hello there.", speech="Hello there.", claim_keys=(), evidence=(),
        generation_id=generation, turn_id="turn", question_revision=revision,
        planned_at=1_000.0 + planned, planned_mono=planned,
    )


def admission(current: str = "gen_1") -> Admission:
    gate = Admission(max_age_ms=MAX_AGE_MS)
    gate.begin(current)
    return gate


# ------------------------------------------------------------------------- the decisions


def test_a_unit_of_the_current_generation_and_revision_is_ready() -> None:
    assert admission().admit(unit(), 0.5) == Decision("ready")


def test_a_canceled_generation_stays_canceled_on_every_retry() -> None:
    gate = admission()
    first = unit()
    assert gate.admit(first, 0.1).ready
    gate.cancel("gen_1")
    for now in (0.2, 0.3, 10.0):
        assert gate.admit(first, now) == Decision("canceled", "generation_canceled")
        assert gate.check(unit(index=1), now).disposition == "canceled"
    gate.begin("gen_1")  # a cached plan that tries to restart it
    assert gate.admit(unit(index=2), 0.4).disposition == "canceled"


def test_a_unit_of_a_superseded_generation_is_stale() -> None:
    gate = admission()
    gate.begin("gen_2")
    assert gate.admit(unit("gen_1"), 0.1) == Decision("stale", "generation_superseded")
    assert gate.admit(unit("gen_2"), 0.1).ready


def test_a_correction_after_approval_makes_every_earlier_unit_stale() -> None:
    """Seed fixture: the answer about an opened item was approved and ready; the caller
    corrects to unopened; every unit planned for the earlier question keeps its stale
    disposition, and the next plan answers the corrected question."""
    clock = VirtualClock()
    gate = Admission(max_age_ms=MAX_AGE_MS)
    gate.begin("gen_1")
    before = planner(clock=clock, generation=GenerationRef("gen_1", "turn_1", 0))
    approved = before.claims(["returns.opened"])[0]
    assert gate.check(approved, clock.monotonic()).ready
    revision = gate.revise_question()
    after = planner(clock=clock, generation=GenerationRef("gen_1", "turn_2", revision))
    corrected = after.claims(["returns.unopened"])[0]
    assert gate.admit(approved, clock.monotonic()) == Decision("stale", "question_revised")
    assert gate.admit(corrected, clock.monotonic()).ready
    assert gate.admit(approved, clock.monotonic()).disposition == "stale"  # stays stale
    assert spoken([corrected]) == [RETURNS[0].text]


def test_a_unit_older_than_the_max_age_is_expired_when_its_turn_comes() -> None:
    gate = admission()
    held = unit(planned=0.0)
    assert gate.check(held, 3.9).ready
    assert gate.admit(held, 4.1) == Decision("expired", "max_age")


def test_a_started_unit_is_not_aged_by_its_own_length_but_is_still_canceled() -> None:
    gate = admission()
    long_unit = unit(planned=0.0)
    assert gate.admit(long_unit, 1.0).ready
    assert gate.admit(long_unit, 30.0).ready  # its fortieth chunk
    gate.cancel("gen_1")
    assert gate.admit(long_unit, 30.1).disposition == "canceled"


def test_an_older_unit_arriving_after_the_queue_drained_is_refused() -> None:
    gate = admission()
    assert gate.admit(unit(index=0), 0.1).ready
    assert gate.admit(unit(index=2), 0.2).ready
    # the queue is empty now; the history belongs to the generation and survives it
    assert gate.admit(unit(index=1), 0.3) == Decision("stale", "out_of_order")
    assert gate.admit(unit(index=2, unit_id="other"), 0.3).disposition == "stale"
    assert gate.admit(unit(index=3), 0.4).ready


def test_a_newer_generation_does_not_reset_an_older_ones_history() -> None:
    gate = admission()
    assert gate.admit(unit("gen_1", 5), 0.1).ready
    gate.begin("gen_2")
    gate.begin("gen_1")  # the same generation again (a resumed plan)
    assert gate.admit(unit("gen_1", 4), 0.2).disposition == "stale"


# ------------------------------------------------------------------------- held unit


@dataclass
class Output:
    """A blocked output lane: ``submit`` waits until ``release`` while the clock moves on."""

    clock: VirtualClock
    released: anyio.Event = field(default_factory=anyio.Event)
    sent: list[str] = field(default_factory=list)

    async def wait_for_room(self) -> None:
        await self.released.wait()


async def speak(unit_: PlannedUnit, gate: Admission, out: Output, *, recheck: bool) -> Decision:
    """A minimal speaker: check, wait for the output lane, (re)check, submit."""
    decision = gate.check(unit_, out.clock.monotonic())
    if not decision.ready:
        return decision
    await out.wait_for_room()
    if recheck:
        decision = gate.admit(unit_, out.clock.monotonic())
        if not decision.ready:
            return decision
    out.sent.append(unit_.text)
    return decision


async def blocked_then_released(recheck: bool) -> tuple[Decision, list[str]]:
    clock = VirtualClock()
    gate = admission()
    out = Output(clock)
    held = unit(planned=clock.monotonic())
    result: list[Decision] = []

    async def run() -> None:
        result.append(await speak(held, gate, out, recheck=recheck))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        clock.advance(MAX_AGE_MS / 1000 + 1.0)  # the output stays blocked past the max age
        out.released.set()
    return result[0], out.sent


async def test_a_held_unit_that_expires_while_output_is_blocked_is_never_sent() -> None:
    decision, sent = await blocked_then_released(recheck=True)
    assert decision == Decision("expired", "max_age")
    assert sent == []


async def test_the_held_unit_fixture_fails_a_speaker_that_checks_only_before_the_wait() -> None:
    """The failing-before evidence: the same fixture catches the broken adapter."""
    decision, sent = await blocked_then_released(recheck=False)
    assert decision.ready and sent == ["Hello there."]


# ------------------------------------------------------------------------- properties


class AdmissionTraces(RuleBasedStateMachine):
    """Any interleaving of new generations, corrections, cancels, planning, synthesis
    completions, pacing delays and drained queues, against a reference model."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = Admission(max_age_ms=MAX_AGE_MS)
        self.now = 0.0
        self.generation = 0
        self.gate.begin("g0")
        self.canceled: set[str] = set()
        self.revision = 0
        self.units: list[PlannedUnit] = []
        self.seen: list[PlannedUnit] = []
        self.next_index: dict[str, int] = {}
        self.started: set[str] = set()
        self.highest: dict[str, int] = {}
        self.ever_canceled_admitted: list[str] = []

    @property
    def current(self) -> str:
        return f"g{self.generation}"

    @rule()
    def new_generation(self) -> None:
        self.generation += 1
        self.gate.begin(self.current)

    @rule()
    def correct_the_question(self) -> None:
        self.revision = self.gate.revise_question()

    @rule(which=st.integers(0, 5))
    def cancel(self, which: int) -> None:
        target = f"g{max(0, self.generation - which)}"
        self.gate.cancel(target)
        self.canceled.add(target)

    @rule(back=st.integers(0, 2))
    def plan(self, back: int) -> None:
        generation = f"g{max(0, self.generation - back)}"
        index = self.next_index.get(generation, 0)
        self.next_index[generation] = index + 1
        planned = unit(generation, index, revision=self.revision, planned=self.now,
                       unit_id=f"{generation}:{index}:{len(self.seen)}")
        self.units.append(planned)
        self.seen.append(planned)

    @precondition(lambda self: bool(self.seen))
    @rule(pick=st.integers(0, 1_000))
    def late_arrival(self, pick: int) -> None:
        """A unit planned earlier reaches the queue again (a retry, a slow synthesis)."""
        self.units.append(self.seen[pick % len(self.seen)])

    @rule(seconds=st.sampled_from([0.0, 0.05, 0.4, 1.5, 3.0, 5.0]))
    def pace(self, seconds: float) -> None:
        self.now += seconds

    @precondition(lambda self: bool(self.units))
    @rule(pick=st.integers(0, 1_000), first_chunk=st.booleans())
    def synthesis_done_or_chunk(self, pick: int, first_chunk: bool) -> None:
        target = self.units[pick % len(self.units)]
        expected = self.expected(target)
        decision = self.gate.admit(target, self.now) if first_chunk else self.gate.check(
            target, self.now)
        assert decision.disposition == expected, (target, decision, expected)
        if decision.ready:
            assert target.generation_id not in self.canceled
            assert target.generation_id == self.current
            assert target.question_revision == self.revision
            if first_chunk and target.unit_id not in self.started:
                self.started.add(target.unit_id)
                self.highest[target.generation_id] = max(
                    self.highest.get(target.generation_id, -1), target.index)

    @rule()
    def drain_the_queue(self) -> None:
        self.units = [u for u in self.units if u.generation_id == self.current][-2:]

    def expected(self, u: PlannedUnit) -> str:
        if u.generation_id in self.canceled:
            return "canceled"
        if u.generation_id != self.current or u.question_revision != self.revision:
            return "stale"
        started = u.unit_id in self.started
        if not started and u.index <= self.highest.get(u.generation_id, -1):
            return "stale"
        if not started and self.now - u.planned_mono > MAX_AGE_MS / 1000:
            return "expired"
        return "ready"

    @invariant()
    def canceled_generations_are_never_current(self) -> None:
        assert all(self.gate.canceled(g) for g in self.canceled)


TestAdmissionTraces = AdmissionTraces.TestCase
TestAdmissionTraces.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


@settings(max_examples=200, deadline=None)
@given(
    events=st.lists(
        st.tuples(st.sampled_from(["cancel", "synthesis_done", "pace", "chunk", "revise"]),
                  st.floats(0, 3)),
        max_size=30,
    )
)
def test_nothing_of_a_canceled_generation_or_old_revision_is_ever_admitted(
    events: list[tuple[str, float]],
) -> None:
    """One generation's units through a trace: once canceled or revised, nothing more."""
    gate = admission("gen_1")
    now, revision = 0.0, 0
    units = [unit(index=i, planned=0.0) for i in range(4)]
    dead = False
    for event, amount in events:
        if event == "cancel":
            gate.cancel("gen_1")
            dead = True
        elif event == "revise":
            revision = gate.revise_question()
            dead = True
        elif event == "pace":
            now += amount
        else:
            for candidate in units:
                decision = gate.admit(candidate, now)
                if dead:
                    assert not decision.ready
    assert revision >= 0
