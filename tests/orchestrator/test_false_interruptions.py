"""False interruptions (ADR-0038): a sound with no words that stopped the agent lets it resume.

The real orchestrator on scripted runners and a virtual clock: the caller's "cough" is a tone
the energy VAD hears as speech; what the recogniser makes of it is scripted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.orchestrator.action_support import call
from tests.orchestrator.test_conversation_core import asked, settled
from tests.support.audio import silence_frames, tone_frames
from tests.support.fakes import fake_runners
from tests.support.harness import Harness, profile, running
from vocero.contracts import events as ev
from vocero.contracts.events import SessionState
from vocero.inference.sim.script import Rule
from vocero.orchestrator.false_interruptions import ResumeSettings, unheard_rest
from vocero.orchestrator.machine import Event, SessionMachine
from vocero.speech import PlannedUnit

pytestmark = pytest.mark.anyio

FIRST = "Your parcel left the depot this morning."
SECOND = "It is on the van with the driver now."
THIRD = "The driver will ring the bell."
ANSWER = f"{FIRST} {SECOND} {THIRD}"
RULES = [Rule(match="parcel", reply=ANSWER), Rule(match=".*", reply="Sorry, go on.")]
FIRST_MS = len(FIRST) * 20  # the fake voice speaks 20 ms a character


def generations(h: Harness) -> list[ev.ResponseCreated]:
    return list(h.received.of("ResponseCreated"))


async def cough_over_the_answer(h: Harness, *, more_ms: int = 0) -> ev.ResponseCompleted:
    """The agent is answering: the caller hears its first sentence and a little more, then a
    300 ms sound stops it; it goes on ``more_ms`` after the stop, then silence ends it."""
    h.auto_ack = False
    h.session.on_text("where is my parcel")
    first = await h.until_frame("AudioOut", 1)
    track = h.out.playout_of(first.generation_id)

    def heard_into_the_second_unit() -> bool:  # the client plays what it gets, up to there
        h.session.on_playout(first.generation_id, int(min(track.sent_ms, FIRST_MS + 200)))
        return track.sent_ms >= FIRST_MS + 200 and len(h.received.of("TextDelta")) >= 2

    await h.until(heard_into_the_second_unit)
    for frame in tone_frames(300):
        h.session.on_audio(frame)
    stopped = await h.until_frame("ResponseCompleted")
    for frame in tone_frames(more_ms):
        h.session.on_audio(frame)
    h.auto_ack = True
    for frame in silence_frames(600):
        h.session.on_audio(frame)
    return stopped  # type: ignore[no-any-return]


async def settle(h: Harness, stt: Any, finals: int) -> None:
    """Until the recogniser gave ``finals`` transcripts and everything after them has run."""
    await h.until(lambda: stt._next >= finals)
    await h.until(lambda: h.session.machine.state in ("LISTENING", "AWAITING_CONFIRMATION"))
    await anyio.wait_all_tasks_blocked()


@pytest.mark.parametrize("heard_as", ["", "[coughs]", "Um.", "Uh, um."])
async def test_a_sound_without_words_resumes_the_answer_from_the_cut_unit(heard_as: str) -> None:
    runners, stt, *_ = fake_runners(stt=[heard_as], rules=RULES, ms_per_char=20)
    async with running(runners, prof=profile(min_interruption_ms=200)) as h:
        stopped = await cough_over_the_answer(h)
        assert stopped.status == "interrupted"
        assert stopped.heard_text.startswith(FIRST + " ") and SECOND not in stopped.heard_text
        resumed = await h.until_frame("ResponseCompleted", 2)
        first, again = generations(h)
        assert again.turn_id == first.turn_id, "the same turn's answer, resumed"
        assert resumed.status == "completed"
        assert resumed.heard_text == f"{SECOND} {THIRD}", "the cut unit again, then the rest"
        assert [(m.role, m.content) for m in h.session.history] == [
            ("user", "where is my parcel"),
            ("assistant", stopped.heard_text),
            ("assistant", resumed.heard_text),
        ]
        finals = [t.text for t in h.received.of("transcript.final.v1")]
        assert finals == ["where is my parcel"], "the sound was no turn"
        await settle(h, stt, 1)
        assert len(generations(h)) == 2


async def test_words_are_a_real_interruption_and_nothing_resumes() -> None:
    runners, stt, *_ = fake_runners(stt=["hang on"], rules=RULES, ms_per_char=20)
    async with running(runners, prof=profile(min_interruption_ms=200)) as h:
        await cough_over_the_answer(h)
        final = await h.until_frame("transcript.final.v1", 2)
        assert final.text == "hang on"
        answer = await h.until_frame("ResponseCompleted", 2)
        assert answer.heard_text == "Sorry, go on."
        assert generations(h)[1].turn_id != generations(h)[0].turn_id
        await settle(h, stt, 1)
        assert SECOND not in " ".join(m.content for m in h.session.history)


@pytest.mark.parametrize(("more_ms", "resumed"), [(1200, True), (1600, False)])
async def test_a_sound_that_outlasts_the_window_is_the_callers(more_ms: int, resumed: bool) -> None:
    """The window is the sound's own audio after the stop, not the silence that ends it."""
    runners, stt, *_ = fake_runners(stt=[""], rules=RULES, ms_per_char=20)
    async with running(runners, prof=profile(min_interruption_ms=200)) as h:
        await cough_over_the_answer(h, more_ms=more_ms)  # 1.5 s: the window
        await settle(h, stt, 1)
        if resumed:
            await h.until_frame("ResponseCompleted", 2)
        assert len(generations(h)) == (2 if resumed else 1)


async def test_turned_off_the_stopped_answer_is_dropped_as_before() -> None:
    runners, stt, *_ = fake_runners(stt=[""], rules=RULES, ms_per_char=20)
    off = ResumeSettings(enabled=False)
    async with running(runners, prof=profile(min_interruption_ms=200),
                       false_interruptions=off) as h:
        await cough_over_the_answer(h)
        await settle(h, stt, 1)
        assert len(generations(h)) == 1


async def test_an_interrupted_read_back_is_read_again_whole(db_path: Path) -> None:
    """A cough over the read-back: it is read again whole, and only then does a yes bind."""
    async with call(db_path, stt=["[cough]"], ms_per_char=20) as c:
        h = c.h
        h.auto_ack = False
        question = await asked(c, "move APT-1001 to friday at 3pm", 1)
        audio = await h.until_frame("AudioOut", 1)
        h.session.on_playout(audio.generation_id, 300)
        for frame in tone_frames(300):
            h.session.on_audio(frame)
        stopped = await h.until_frame("ResponseCompleted")
        assert stopped.status == "interrupted" and stopped.heard_text
        h.auto_ack = True
        for frame in silence_frames(600):
            h.session.on_audio(frame)
        reread = await h.until_frame("ResponseCompleted", 2)
        assert reread.status == "completed"
        assert reread.heard_text == question.summary
        assert stopped.heard_text != question.summary
        assert question.summary.startswith(stopped.heard_text)
        await h.until(lambda: h.session.machine.state == "AWAITING_CONFIRMATION")
        assert c.reschedules() == [] and len(c.questions()) == 1
        h.session.on_text("yes")
        await settled(c)
        [sent] = c.reschedules()
        assert (sent.meta.proposal_id, sent.meta.revision) == (question.proposal_id, 1)


# ------------------------------------------------------------------------------ sans-IO


def _unit(index: int, text: str, kind: str = "conversational") -> PlannedUnit:
    return PlannedUnit(
        unit_id=f"u{index}", index=index, kind=kind, text=text, speech=text,  # type: ignore[arg-type]
        claim_keys=(), evidence=(), generation_id="g", turn_id="t", question_revision=0,
        planned_at=0.0, planned_mono=0.0,
    )


UNITS = [_unit(0, FIRST), _unit(1, SECOND), _unit(2, THIRD)]


@pytest.mark.parametrize(
    ("heard", "rest"),
    [
        ("", 0),
        ("Your parcel", 0),
        (FIRST, 1),
        (f"{FIRST} It should", 1),
        (f"{FIRST} {SECOND}", 2),
        (ANSWER, 3),
    ],
)
def test_the_rest_starts_at_the_first_unit_not_heard_whole(heard: str, rest: int) -> None:
    assert unheard_rest(UNITS, heard) == UNITS[rest:]


def test_a_false_interruption_resumes_only_from_an_idle_session() -> None:
    machine = SessionMachine("TRANSCRIBING")
    assert machine.process(Event.FALSE_INTERRUPTION).effects == ()
    idle: SessionState
    for idle in ("LISTENING", "AWAITING_CONFIRMATION"):
        step = SessionMachine(idle).process(Event.FALSE_INTERRUPTION)
        assert step.state == "THINKING"
