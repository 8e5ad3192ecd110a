"""False interruptions (ADR-0038): a sound with no words that stopped the agent lets it resume.

The real orchestrator on scripted runners and a virtual clock: the caller's "cough" is a tone
the energy VAD hears as speech; what the recogniser makes of it is scripted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.orchestrator.action_support import call
from tests.orchestrator.test_conversation_core import asked, settled
from tests.support.audio import silence_frames, tone_frames
from tests.support.fakes import FakeStt, fake_runners
from tests.support.harness import Harness, profile, running
from vocero.contracts import events as ev
from vocero.contracts.events import SessionState
from vocero.contracts.ports import Transcription
from vocero.inference.runner_set import RunnerSet
from vocero.inference.sim.script import Rule
from vocero.inference.sim.turn import SimTurnJudge
from vocero.orchestrator.false_interruptions import (
    FalseInterruptions,
    ResumeSettings,
    unheard_rest,
)
from vocero.orchestrator.generation import Generation
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


async def cough_over_the_answer(
    h: Harness, *, more_ms: int = 0, silence_ms: int = 600
) -> ev.ResponseCompleted:
    """The agent is answering: the caller hears its first sentence and a little more, then a
    300 ms sound stops it; it goes on ``more_ms`` after the stop, then ``silence_ms`` of
    silence follows."""
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
    for frame in silence_frames(silence_ms):
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


# ------------------------------------- decided a grace after the sound, not at the turn's end


GOING_ON = [[0.1]]
"""The judge reads the sound's utterance as going on (a filler, "Um.", is no finished turn)."""


def judged(
    stt: FakeStt | list[str], script: list[list[float]] | None = None
) -> tuple[RunnerSet, FakeStt]:
    """The scripted runners with an end-of-turn judge (unscripted, it calls every pause the
    end). As with the CPU set's, a sound too short to judge by its audio alone, with no words
    or with words it reads as going on, is ended only at ``max_silence_ms`` (1.6 s)."""
    runners, scripted, *_ = fake_runners(stt=stt if isinstance(stt, list) else [],
                                         rules=RULES, ms_per_char=20)
    recogniser = scripted if isinstance(stt, list) else stt
    return replace(runners, turn=SimTurnJudge(script or []), stt=recogniser), recogniser


async def silence_until_answered(h: Harness, most_ms: int) -> int | None:
    """Silence, frame by frame, until the client is sent a second answer (the resumed one, or
    the answer to a turn): how much of it."""
    for index, frame in enumerate(silence_frames(most_ms)):
        h.session.on_audio(frame)
        await anyio.wait_all_tasks_blocked()
        if len(generations(h)) == 2:
            return (index + 1) * 20
    return None


@pytest.mark.parametrize("heard_as", ["", "Um."])
@pytest.mark.parametrize(
    ("settings", "decided_ms"),
    [(ResumeSettings(), 300), (ResumeSettings(grace_ms=500), 500),
     (ResumeSettings(grace_ms=0), 1600)],  # 0: at the utterance's end, as before
)
async def test_with_the_judge_a_cough_resumes_a_grace_after_it_not_at_the_turns_end(
    heard_as: str, settings: ResumeSettings, decided_ms: int,
) -> None:
    """The sound's speech ended, its transcription (started at 160 ms of its pause) holds no
    words: the answer resumes ``grace_ms`` (300) after the sound, not after the 1.6 s of
    silence the judge leaves it. Silence on the audio's own clock."""
    runners, _ = judged([heard_as], GOING_ON)
    async with running(runners, prof=profile(min_interruption_ms=200),
                       false_interruptions=settings) as h:
        stopped = await cough_over_the_answer(h, silence_ms=0)
        assert await silence_until_answered(h, 2000) == decided_ms
        first, again = generations(h)
        assert again.turn_id == first.turn_id, "the stopped answer, resumed"
        resumed = await h.until_frame("ResponseCompleted", 2)
        assert resumed.heard_text == f"{SECOND} {THIRD}"
        assert stopped.heard_text.startswith(FIRST)
        assert [t.text for t in h.received.of("transcript.final.v1")] == ["where is my parcel"]


async def test_with_the_judge_words_are_a_real_interruption_and_nothing_resumes() -> None:
    runners, _ = judged(["hang on"])
    async with running(runners, prof=profile(min_interruption_ms=200)) as h:
        await cough_over_the_answer(h, silence_ms=0)
        assert await silence_until_answered(h, 2000) == 160, "the judge ends the words' turn"
        final = await h.until_frame("transcript.final.v1", 2)
        assert final.text == "hang on"
        answer = await h.until_frame("ResponseCompleted", 2)
        assert answer.heard_text == "Sorry, go on."
        first, second = generations(h)
        assert second.turn_id != first.turn_id
        assert SECOND not in " ".join(m.content for m in h.session.history)


class HeardByLength(FakeStt):
    """A recogniser whose text depends on how much audio it hears, as a real one's does: the
    sound alone is "Um."; the sound and the words after it are the words."""

    def __init__(self, sound: str, words: str, sound_ms: int) -> None:
        super().__init__([])
        self.sound, self.words, self._sound_bytes = sound, words, sound_ms * 32

    async def transcribe(
        self, pcm16: bytes, *, sample_rate: int, locale: str, utterance_id: str = "",
        vocabulary: Sequence[str] = (),
    ) -> Transcription:
        self.calls.append(utterance_id)
        async with self.one_at_a_time:
            if self.held is not None:
                await self.held.wait()
            return Transcription(text=self.sound if len(pcm16) <= self._sound_bytes
                                 else self.words)

    async def partial(self, pcm16: bytes, *, sample_rate: int, locale: str) -> Transcription:
        return Transcription(text=self.sound, final=False)


async def test_a_caller_who_goes_on_within_the_grace_is_heard_whole_and_nothing_resumes() -> None:
    """"Um." and, 200 ms later (inside the grace), their request: the filler heard at the pause
    decides nothing; the utterance goes on and its words are a turn."""
    runners, stt = judged(HeardByLength("Um.", "Um, cancel my order please", sound_ms=500),
                          GOING_ON)
    async with running(runners, prof=profile(min_interruption_ms=200)) as h:
        await cough_over_the_answer(h, silence_ms=0)
        for frame in silence_frames(200) + tone_frames(600) + silence_frames(700):
            h.session.on_audio(frame)
            await anyio.wait_all_tasks_blocked()
        final = await h.until_frame("transcript.final.v1", 2)
        assert final.text == "Um, cancel my order please"
        answer = await h.until_frame("ResponseCompleted", 2)
        assert answer.heard_text == "Sorry, go on."
        first, second = generations(h)
        assert second.turn_id != first.turn_id, "a turn of its own, no resumed answer"
        assert len(set(stt.calls)) == 1, "one utterance, the filler and the words"


async def test_a_recogniser_slower_than_the_grace_decides_when_its_result_comes() -> None:
    stt = HeardByLength("[cough]", "unused", sound_ms=5000)
    stt.held = anyio.Event()
    runners, _ = judged(stt, GOING_ON)
    async with running(runners, prof=profile(min_interruption_ms=200)) as h:
        await cough_over_the_answer(h, silence_ms=0)
        assert await silence_until_answered(h, 600) is None, "no words known yet"
        stt.held.set()  # its result, with no more audio: decided at once
        resumed = await h.until_frame("ResponseCompleted", 2)
        assert resumed.heard_text == f"{SECOND} {THIRD}"
        assert generations(h)[1].turn_id == generations(h)[0].turn_id


# ------------------------------------------------------------------------------ sans-IO


def _stopped_at(settings: ResumeSettings, stopped_ms: float = 500.0) -> FalseInterruptions:
    """A sound stopped an answer at ``stopped_ms`` of its audio (a generation holds a cancel
    scope: made inside the test's event loop)."""
    signal = FalseInterruptions(settings)
    signal.stopped("utt", Generation(generation_id="g", turn_id="t"), stopped_ms)
    return signal


@pytest.mark.parametrize(
    ("words", "silence_ms", "speech_end_ms", "over"),
    [
        ("", 300, 700, True),
        ("[cough]", 300, 700, True),
        ("Mm-hmm.", 400, 700, True),
        ("", 280, 700, False),  # the grace has not passed
        ("hang on", 300, 700, False),  # words: only the utterance's end decides
        ("Um, wait", 300, 700, False),
        ("", 300, 2100, False),  # the sound outlasted the window: the caller's
    ],
)
async def test_the_sound_is_over_after_its_grace_when_it_holds_no_words(
    words: str, silence_ms: float, speech_end_ms: float, over: bool,
) -> None:
    signal = _stopped_at(ResumeSettings())
    assert signal.sound_over("utt", words, speech_end_ms=speech_end_ms,
                             silence_ms=silence_ms) is over
    assert not signal.sound_over("other", "", speech_end_ms=700, silence_ms=300)


async def test_no_early_decision_turned_off_or_for_a_sound_that_stopped_nothing() -> None:
    for settings in (ResumeSettings(enabled=False), ResumeSettings(grace_ms=0)):
        assert not _stopped_at(settings).sound_over("utt", "", speech_end_ms=700,
                                                    silence_ms=1500)
    assert not FalseInterruptions().sound_over("utt", "", speech_end_ms=700, silence_ms=1500)


@pytest.mark.parametrize(("grace_ms", "held"), [(300, 300.0), (50, 160.0), (5000, 1000.0)])
def test_the_grace_is_bounded(grace_ms: int, held: float) -> None:
    assert ResumeSettings(grace_ms=grace_ms).grace == held


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
