"""Seed 001's interruption and revision cases against the real orchestrator and action path.

A caller who corrects a value during the read-back gets a new revision; a "yes" binds once every
consequential value was heard (even cutting off "Shall I go ahead?"), not before; a "yes" after
another answer binds nothing; a question without a clear answer is asked again briefly, then
dropped, never looped; a confirmed action not yet sent can be withdrawn. Effects are asserted on
what reached the (fake) tool server and on the stored operations.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from zoneinfo import ZoneInfo

import anyio
import msgspec
import pytest

from tests.orchestrator.action_support import Call, call
from vocero.contracts import events as ev
from vocero.contracts.clock import VirtualClock
from vocero.policy import CoordinatorSettings

pytestmark = pytest.mark.anyio


def next_weekday(name: str) -> str:
    today = dt.datetime.now(ZoneInfo("Europe/Madrid")).date()
    target = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
              "sunday"].index(name)
    return (today + dt.timedelta(days=(target - today.weekday()) % 7 or 7)).isoformat()


def ack_all(c: Call) -> None:
    current = c.h.session.generations.current
    if current is not None:
        c.h.session.on_playout(current.generation_id,
                               int(c.h.out.playout_of(current.generation_id).sent_ms) + 1)


async def asked(c: Call, text: str, count: int) -> ev.ConfirmationRequired:
    c.h.session.on_text(text)
    question: ev.ConfirmationRequired = await c.h.until_frame("ConfirmationRequired", count)
    return question


async def read_back_heard(c: Call, text: str, count: int = 1) -> ev.ConfirmationRequired:
    """Ask for a change and let the caller hear the whole read-back."""
    c.h.auto_ack = True
    question = await asked(c, text, count)
    await c.h.until(lambda: c.h.session.machine.state == "AWAITING_CONFIRMATION")
    return question


async def settled(c: Call, count: int = 1) -> None:
    await c.h.until(lambda: len([s for s in c.h.received.of("ToolStatusChanged")
                                 if s.status == "committed" and s.proposal_id]) >= count)


async def test_a_correction_during_the_read_back_makes_a_new_revision(db_path: Path) -> None:
    async with call(db_path) as c:
        c.h.auto_ack = False
        first = await asked(c, "move APT-1001 to sunday at 3pm", 1)
        await c.h.until_frame("AudioOut", 1)  # the read-back is being spoken
        c.h.auto_ack = True
        c.h.session.on_text("no wait, move APT-1001 to friday at 3pm")
        second = await c.h.until_frame("ConfirmationRequired", 2)
        assert (second.proposal_id, second.revision) == (first.proposal_id, first.revision + 1)
        assert (first.fields["new_date"], second.fields["new_date"]) == (
            next_weekday("sunday"), next_weekday("friday"))
        assert "Friday" in second.summary and "Sunday" not in second.summary
        stops = c.h.received.of("StopAndFlush")
        assert stops and stops[0].reason == "new_input", "the correction cut the read-back"
        await c.h.until(lambda: c.h.session.machine.state == "AWAITING_CONFIRMATION")
        c.h.session.on_confirmation(first.proposal_id, first.revision, "confirm")
        error = await c.h.until_frame("Error")
        assert error.code == "PROPOSAL_CHANGED", "the old revision can no longer be confirmed"
        c.h.session.on_text("yes")
        await settled(c)
        [sent] = c.reschedules()
        assert sent.arguments["new_date"] == next_weekday("friday")
        assert (sent.meta.proposal_id, sent.meta.revision) == (second.proposal_id, 2)


async def test_a_yes_that_cuts_off_the_question_binds_once_the_values_were_heard(
    db_path: Path,
) -> None:
    async with call(db_path) as c:
        question = await asked(c, "move APT-1001 to friday at 3pm", 1)
        generation = c.h.session.generations.current
        assert generation is not None
        gen = generation.generation_id
        # The caller hears "To confirm: ... Madrid time." and the first of "Shall I go ahead?"
        await c.h.until(lambda: len({p.unit_id for p in c.h.received.of("AudioOut")
                                     if p.generation_id == gen}) >= 2)
        c.h.auto_ack = False
        c.h.session.on_text("yes")  # as "Shall I go ahead?" begins
        await settled(c)
        [done] = [p for p in c.h.received.of("ResponseCompleted") if p.generation_id == gen]
        assert done.status == "interrupted" and "Shall I go ahead" not in done.heard_text
        assert "Madrid time" in done.heard_text
        [sent] = c.reschedules()
        assert (sent.meta.proposal_id, sent.meta.revision) == (question.proposal_id, 1)


async def test_a_yes_before_the_values_were_heard_is_asked_again_briefly(db_path: Path) -> None:
    async with call(db_path) as c:
        c.h.auto_ack = False
        await asked(c, "move APT-1001 to friday at 3pm", 1)
        generation = c.h.session.generations.current
        assert generation is not None
        await c.h.until_frame("AudioOut", 1)
        c.h.session.on_playout(generation.generation_id, 200)  # "To confirm: move..." only
        c.h.auto_ack = True
        mark = len(c.h.received.frames)
        c.h.session.on_text("yes")
        await c.h.until(lambda: "Let me finish first." in c.spoken_since(mark))
        await c.h.until(lambda: c.h.session.machine.state == "AWAITING_CONFIRMATION")
        assert c.reschedules() == [], "a yes before the values were heard is not consent"
        assert "Friday, " in c.spoken_since(mark), "the re-ask says the values again"
        c.h.session.on_text("yes")
        await settled(c)
        assert len(c.reschedules()) == 1


async def test_a_yes_after_another_answer_binds_nothing(db_path: Path) -> None:
    async with call(db_path) as c:
        await read_back_heard(c, "move APT-1001 to friday at 3pm")
        c.h.session.on_text("what are your opening hours")
        await c.h.until(lambda: "We open at nine." in c.spoken_since(0))
        await c.h.until(lambda: c.h.session.machine.state == "AWAITING_CONFIRMATION")
        mark = len(c.h.received.frames)
        c.h.session.on_text("yes")
        await c.h.until(lambda: "Just to be sure." in c.spoken_since(mark))
        await c.h.until(lambda: c.h.session.machine.state == "AWAITING_CONFIRMATION")
        assert c.reschedules() == [], "that yes may have answered the other question"
        c.h.session.on_text("yes")
        await settled(c)
        assert len(c.reschedules()) == 1


async def test_unclear_answers_are_asked_again_then_dropped_never_looped(db_path: Path) -> None:
    async with call(db_path) as c:
        await read_back_heard(c, "move APT-1001 to friday at 3pm")
        for attempt in range(3):
            mark = len(c.h.received.frames)
            c.h.session.on_text("I think so")
            await c.h.until(lambda m=mark: c.h.received.of("ResponseCompleted")
                            and c.spoken_since(m) != "")
            await c.h.until(lambda: c.h.session.machine.state in ("AWAITING_CONFIRMATION",
                                                                  "LISTENING"))
            spoken = c.spoken_since(mark)
            if attempt < 2:
                assert spoken.startswith("Sorry, I didn't catch that. To confirm:")
            else:
                assert spoken == "I'll leave that for now; nothing has been changed."
        assert c.h.session.machine.state == "LISTENING"
        c.h.session.on_text("yes")
        await c.h.until(lambda: c.h.session.machine.state == "LISTENING"
                        and len(c.h.received.of("ResponseCompleted")) == 5)
        assert c.reschedules() == [], "a dropped question binds nothing"


async def test_a_confirmed_action_not_yet_sent_can_be_withdrawn(db_path: Path) -> None:
    settings = CoordinatorSettings(settle_wait_s=5.0)
    async with call(db_path, run_worker=False, settings=settings) as c:
        await read_back_heard(c, "move APT-1001 to friday at 3pm")
        c.h.session.on_text("yes")
        await c.h.until(lambda: any(s.status == "authorized"
                                    for s in c.h.received.of("ToolStatusChanged")))
        clock = c.plane.clock
        assert isinstance(clock, VirtualClock)
        with anyio.fail_after(5):
            await clock.waited_on()  # the coordinator waits for a receipt...
        clock.advance(5.0)  # ...that does not come in 5 s: the worker is down
        await c.h.until(lambda: "still being processed" in c.spoken_since(0))
        await c.h.until(lambda: c.h.session.machine.state == "LISTENING")
        mark = len(c.h.received.frames)
        c.h.session.on_text("no, don't do it")
        await c.h.until(lambda: "withdrawn" in c.spoken_since(mark))
        [op] = await c.operations()
        assert (op["status"], op["reason_code"]) == ("rejected", "withdrawn")
        async with anyio.create_task_group() as tg:
            await tg.start(c.plane.run)
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
        assert c.reschedules() == [], "nothing is sent after the caller withdrew"


async def test_other_requests_while_asked_are_served_not_refused(db_path: Path) -> None:
    """The loop the issue found: every turn after a read-back got 'I need a clear yes or no'."""
    async with call(db_path) as c:
        await read_back_heard(c, "move APT-1001 to friday at 3pm")
        mark = len(c.h.received.frames)
        c.h.session.on_text("what are your opening hours")
        await c.h.until(lambda: "We open at nine." in c.spoken_since(mark))
        assert "yes or no" not in c.spoken_since(0)


async def test_a_tool_call_is_read_in_the_sessions_effective_locale(db_path: Path) -> None:
    """A ``session.update`` that changed the locale changes what the coordinator reads values
    in (the call-back rule asks again, never guesses, in a language it does not cover)."""
    async with call(db_path) as c:
        coordinator = c.h.session.core.coordinator
        assert coordinator is not None
        seen: list[str] = []
        original = coordinator.propose

        async def spy(*args: object, **kwargs: object) -> object:
            seen.append(str(kwargs.get("locale")))
            return await original(*args, **kwargs)  # type: ignore[arg-type]

        coordinator.propose = spy  # type: ignore[method-assign,assignment]
        c.h.session.ctx = dataclasses.replace(
            c.h.session.ctx,
            effective=msgspec.structs.replace(c.h.session.ctx.effective, locale="en-GB"),
        )
        await asked(c, "move APT-1001 to friday at 3pm", 1)
    assert seen == ["en-GB"]
