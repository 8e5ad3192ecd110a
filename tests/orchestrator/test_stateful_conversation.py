"""A Hypothesis stateful test of the real orchestrator and action path under interruptions.

Rules speak for the caller (requests, corrections, "yes", "no", clicks on current and stale
revisions, other questions), barge in, stop and resume playout, and hold a tool so its result
arrives late. After every step the invariants hold: nothing of a stopped generation reaches the
client after its stop, every generation completes once, the history holds only heard text, no
operation reaches the tool server without a confirming answer given after its exact revision
was asked and before any newer revision was, no operation is sent twice, and a correction while
a question is open always yields the next revision.

The session runs in an event loop of its own (an anyio blocking portal); a step ends once every
task waits and no database transaction is open, so nothing is waited for by the wall clock.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from tests.orchestrator.action_support import Call, call
from tests.support.db import migrated_copy

DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
TOOL = "appointments.reschedule"


class Interruptions(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._folder = Path(tempfile.mkdtemp(prefix="vocero-stateful-run-"))
        migrated_copy(self._folder / "vocero.db")
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._call_cm = self.portal.wrap_async_context_manager(
            call(self._folder / "vocero.db", ms_per_char=4)
        )
        self.c: Call = self._call_cm.__enter__()
        self.answers: list[int] = []
        """Frame count when each confirming answer (spoken or clicked) was given."""
        self.held = False

    def teardown(self) -> None:
        try:
            if self.held:
                self.c.gateway.release(TOOL)
            self._call_cm.__exit__(None, None, None)
        finally:
            self._portal_cm.__exit__(None, None, None)
            shutil.rmtree(self._folder, ignore_errors=True)

    # ------------------------------------------------------------------------ plumbing

    async def _settle(self) -> None:
        """Until every task waits and no database transaction is open."""
        with anyio.fail_after(20):
            while True:
                await anyio.wait_all_tasks_blocked()
                if not self.c.store.busy:
                    await anyio.wait_all_tasks_blocked()
                    if not self.c.store.busy:
                        return
                await self.c.store.quiet()

    def settle(self) -> None:
        self.portal.call(self._settle)

    def say(self, text: str) -> None:
        self.portal.call(lambda: self.c.h.session.on_text(text))  # type: ignore[arg-type,return-value]
        self.settle()

    def frames(self) -> list[tuple[str, Any]]:
        return self.c.h.received.frames

    def questions(self) -> list[tuple[int, Any]]:
        return [(i, p) for i, (n, p) in enumerate(self.frames()) if n == "ConfirmationRequired"]

    # --------------------------------------------------------------------------- rules

    @rule(day=st.sampled_from(DAYS))
    def ask_or_correct(self, day: str) -> None:
        coordinator = self.c.h.session.core.coordinator
        assert coordinator is not None
        open_before = coordinator.active_question()
        count = len(self.questions())
        self.say(f"move APT-1001 to {day} at 3pm")
        asked = self.questions()
        if open_before is not None:
            assert len(asked) > count, "a request while asked is served: it is asked again"
            newest = asked[-1][1]
            if newest.proposal_id == open_before.proposal_id:
                changed = newest.fields["new_date"] != open_before.fields["new_date"]
                expected = open_before.revision + 1 if changed else open_before.revision
                assert newest.revision == expected, "a changed value is the next revision"

    @rule()
    def yes(self) -> None:
        self.answers.append(len(self.frames()))
        self.say("yes")

    @rule()
    def no(self) -> None:
        self.say("no")

    @rule()
    def unclear(self) -> None:
        self.say("I think so")

    @rule()
    def other_question(self) -> None:
        self.say("what are your opening hours")

    @rule(offset=st.sampled_from([-1, 0, 1]))
    def click(self, offset: int) -> None:
        asked = self.questions()
        if not asked:
            return
        latest = asked[-1][1]
        self.answers.append(len(self.frames()))
        session = self.c.h.session
        self.portal.call(lambda: session.on_confirmation(  # type: ignore[arg-type,return-value]
            latest.proposal_id, latest.revision + offset, "confirm"))
        self.settle()

    @rule()
    def barge_in(self) -> None:
        self.portal.call(self.c.h.session.on_speech_hint)
        self.settle()

    @rule(paused=st.booleans())
    def playout(self, paused: bool) -> None:
        self.c.h.auto_ack = not paused
        current = self.c.h.session.generations.current
        if not paused and current is not None:
            sent = self.c.h.out.playout_of(current.generation_id).sent_ms
            self.portal.call(self.c.h.session.on_playout, current.generation_id, int(sent) + 1)
        self.settle()

    @rule()
    def hold_tool(self) -> None:
        if not self.held:
            self.held = True
            self.c.gateway.hold(TOOL)

    @rule()
    def release_tool(self) -> None:
        if self.held:
            self.held = False
            self.portal.call(lambda: self.c.gateway.release(TOOL))  # type: ignore[arg-type,return-value]
            self.settle()

    # ---------------------------------------------------------------------- invariants

    @invariant()
    def nothing_after_a_stop_and_one_completion_each(self) -> None:
        stopped: set[str] = set()
        completed: set[str] = set()
        for name, payload in self.frames():
            gen = getattr(payload, "generation_id", "")
            if name in ("AudioOut", "TextDelta"):
                assert gen not in stopped, f"{name} of {gen} after its stop"
                assert gen not in completed, f"{name} of {gen} after its completion"
            if name == "StopAndFlush":
                stopped.add(gen)
            if name == "ResponseCompleted":
                assert gen not in completed, f"second completion of {gen}"
                completed.add(gen)

    @invariant()
    def history_holds_only_heard_text(self) -> None:
        heard = {p.heard_text for n, p in self.frames() if n == "ResponseCompleted"}
        for message in self.c.h.session.history:
            if message.role == "assistant":
                assert message.content in heard

    @invariant()
    def every_operation_was_confirmed_at_its_exact_revision(self) -> None:
        asked = self.questions()
        sent = [r.meta.operation_id for r in self.c.reschedules()]
        assert len(sent) == len(set(sent)), "an operation reached the server twice"
        for request in self.c.reschedules():
            key = (request.meta.proposal_id, request.meta.revision)
            at = [i for i, q in asked if (q.proposal_id, q.revision) == key]
            assert at, f"{key} was never asked"
            newer = [i for i, q in asked
                     if q.proposal_id == key[0] and q.revision > key[1]]
            assert any(
                answer > at[0] and all(answer < i for i in newer) for answer in self.answers
            ), f"{key} ran without a confirming answer to that exact revision"


Interruptions.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestInterruptions = Interruptions.TestCase
