"""The turn policy in a live session: the end-of-turn judge ends turns, on the audio's clock.

Every frame is pushed and then every task is let run until it waits, so each verdict comes back
at the frame it was asked at (the scripted judge answers at once): the commit points below are
exact. The scripted runners' VAD would end speech after 400 ms of silence on its own; with a
judge in the runner set only the policy ends a turn.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

import anyio
import pytest

from tests.support.audio import silence_frames, tone_frames
from tests.support.fakes import fake_runners
from tests.support.harness import Harness, profile, running
from vocero.contracts.domain import TurnTaking
from vocero.contracts.errors import CapacityError
from vocero.contracts.ports import TurnVerdict
from vocero.inference.sim.runners import SIM_TURN_QUIET_MS
from vocero.inference.sim.script import Rule
from vocero.inference.sim.turn import JudgeCall, SimTurnJudge

pytestmark = pytest.mark.anyio

STORY = "Once upon a time there was a very long story that went on and on for a long while."
RULES = [Rule(match="story", reply=STORY), Rule(match=".*", reply="Let me check that.")]


@dataclass
class Observed:
    values: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def observe_ms(self, name: str, value: float, **labels: str) -> None:
        self.values[name].append(value)

    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        return None


class BrokenJudge(SimTurnJudge):
    async def judge(self, pcm16: bytes, **kwargs: object) -> TurnVerdict:
        await anyio.lowlevel.checkpoint()
        raise CapacityError("turn judge queue is full")


class SilentJudge(SimTurnJudge):
    """Never answers (until the session ends): a judge far slower than the audio."""

    async def judge(self, pcm16: bytes, **kwargs: object) -> TurnVerdict:
        self.calls.append(JudgeCall("", 0.0, ""))
        await anyio.sleep_forever()
        raise AssertionError


class AnswersOnce(SimTurnJudge):
    """Says "going on" at once the first time; never answers after that."""

    async def judge(self, pcm16: bytes, **kwargs: object) -> TurnVerdict:
        self.calls.append(JudgeCall("", 0.0, ""))
        if len(self.calls) == 1:
            return TurnVerdict(probability=0.1)
        await anyio.sleep_forever()
        raise AssertionError


async def speak(h: Harness, frames: list[bytes]) -> None:
    for frame in frames:
        h.session.on_audio(frame)
        await anyio.wait_all_tasks_blocked()


def finals(h: Harness) -> list[str]:
    return [p.text for p in h.received.of("transcript.final.v1")]


def with_judge(judge: SimTurnJudge, stt: list[str]):  # type: ignore[no-untyped-def]
    runners, fake_stt, *_ = fake_runners(stt=stt, rules=RULES)
    return replace(runners, turn=judge), fake_stt


async def test_a_pause_judged_complete_ends_the_turn_long_before_the_hangover() -> None:
    judge = SimTurnJudge([[1.0]])
    runners, stt = with_judge(judge, ["what is my order status"])
    async with running(runners) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(700) + silence_frames(140))
        assert finals(h) == [] and judge.calls == []  # 140 ms: not a pause worth judging yet
        await speak(h, silence_frames(20))  # 160 ms: transcribed (at once here), then judged
        assert await h.until_frame("transcript.final.v1") is not None
        assert finals(h) == ["what is my order status"]
        assert [c.transcript for c in judge.calls] == ["what is my order status"]
        assert metrics.values["turn_endpointing_ms"] == [160.0]
        assert len(stt.calls) == 1, "the final reuses the transcription started at the pause"


async def test_a_pause_judged_unfinished_keeps_listening_until_the_caller_goes_on() -> None:
    judge = SimTurnJudge([[0.1]])  # "going on", every time it is asked
    runners, stt = with_judge(judge, ["my order number is C nineteen"])
    async with running(runners) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(400) + silence_frames(700))  # past the VAD's 400 ms hangover
        assert finals(h) == [], "a pause the judge calls unfinished is not the end of the turn"
        asked = len(judge.calls)
        assert asked >= 2  # at the pause, and again once its transcription was ready
        resumed = TurnTaking().resumed_silence_ms
        await speak(h, tone_frames(300) + silence_frames(resumed - 20))
        assert finals(h) == []
        assert len({c.utterance_id for c in judge.calls}) == 1, "one utterance, both parts"
        # The caller went on after a pause and stopped again, and the words judged at this
        # pause do not go on: resumed_silence_ms ends the turn, not max_silence_ms.
        await speak(h, silence_frames(20))
        await h.until_frame("transcript.final.v1")
        assert finals(h) == ["my order number is C nineteen"]
        assert metrics.values["turn_endpointing_ms"] == [float(resumed)]
        assert len(set(stt.calls)) == 1


async def test_the_judge_weighs_the_early_transcription_of_the_pause() -> None:
    # A recogniser slower than words_wait_ms: the audio alone is judged first (0.5, not
    # enough); with the words (0.95 >= complete_probability 0.9) it is: the second judgement
    # must have been asked with the pause's transcript, as soon as it was ready.
    judge = SimTurnJudge([[0.5, 0.95]])
    runners, stt = with_judge(judge, ["cancel my appointment"])
    stt.held = anyio.Event()
    async with running(runners) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(400) + silence_frames(380))
        assert judge.calls == [], "the words are on their way: the audio alone waits for them"
        await speak(h, silence_frames(40))
        assert [c.transcript for c in judge.calls] == [""]  # at words_wait_ms, 400 ms
        assert finals(h) == []
        stt.held.set()
        await h.until_frame("transcript.final.v1")
        assert [c.transcript for c in judge.calls] == ["", "cancel my appointment"]
        assert metrics.values["turn_endpointing_ms"] == [420.0]
        assert len(stt.calls) == 1


async def test_words_on_their_way_are_the_pause_s_only_judgement() -> None:
    # A recogniser slower than judge_pause_ms but in time for words_wait_ms: no judgement of
    # the audio alone runs alongside it; the one judgement weighs the words.
    judge = SimTurnJudge([[0.95]])
    runners, stt = with_judge(judge, ["cancel my appointment"])
    stt.held = anyio.Event()
    async with running(runners) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(400) + silence_frames(340))
        assert judge.calls == [] and finals(h) == []
        stt.held.set()
        await anyio.wait_all_tasks_blocked()
        await speak(h, silence_frames(20))
        await h.until_frame("transcript.final.v1")
        assert [c.transcript for c in judge.calls] == ["cancel my appointment"]
        assert metrics.values["turn_endpointing_ms"] == [340.0]


async def test_the_judge_reads_each_utterance_after_what_the_caller_last_heard_the_agent_say(
) -> None:
    judge = SimTurnJudge([[1.0], [1.0]])
    runners, _ = with_judge(judge, ["what is my order status", "yes please"])
    async with running(runners) as h:
        await speak(h, tone_frames(700) + silence_frames(160))
        await h.until_frame("ResponseCompleted")
        heard = [m.content for m in h.session.core.history if m.role == "assistant"]
        assert heard == ["Let me check that."]
        await speak(h, tone_frames(400) + silence_frames(160))
        await h.until_frame("transcript.final.v1", 2)
        # Before the agent spoke there was nothing to read the words after; then its line, as
        # heard, was made ready when the caller began to speak, and the words read after it.
        assert judge.prepared == ["", "Let me check that."]
        assert [c.agent_said for c in judge.calls] == ["", "Let me check that."]


async def test_an_empty_early_transcript_lets_the_audio_be_judged_at_once() -> None:
    judge = SimTurnJudge([[0.99]])
    runners, stt = with_judge(judge, [""])
    async with running(runners) as h:
        await speak(h, tone_frames(800) + silence_frames(300))
        assert [c.transcript for c in judge.calls] == [""]  # judge_pause_ms, not words_wait_ms
        assert len(stt.calls) == 1


async def test_a_transcript_ready_before_judge_pause_ms_is_the_only_judgement() -> None:
    judge = SimTurnJudge([[0.95]])
    runners, stt = with_judge(judge, ["cancel my appointment"])
    async with running(runners) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(400) + silence_frames(200))
        await h.until_frame("transcript.final.v1")
        assert [c.transcript for c in judge.calls] == ["cancel my appointment"]
        assert metrics.values["turn_endpointing_ms"] == [160.0]
        assert len(stt.calls) == 1


async def test_profile_thresholds_decide_the_commit() -> None:
    judge = SimTurnJudge([[0.95]])  # below this profile's audio_probability of 0.99
    runners, _ = with_judge(judge, ["hello there"])
    prof = profile(turn_taking=TurnTaking(audio_probability=0.99, complete_probability=0.99))
    async with running(runners, prof=prof) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(400) + silence_frames(1000))
        assert finals(h) == []
        await speak(h, silence_frames(600))
        await h.until_frame("transcript.final.v1")
        assert metrics.values["turn_endpointing_ms"] == [1600.0]


async def test_a_failing_judge_falls_back_to_the_fixed_silence() -> None:
    runners, _ = with_judge(BrokenJudge(), ["is anyone there"])
    async with running(runners) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(400) + silence_frames(460))
        assert finals(h) == []
        await speak(h, silence_frames(20))
        await h.until_frame("transcript.final.v1")
        assert finals(h) == ["is anyone there"]
        assert metrics.values["turn_endpointing_ms"] == [480.0]


async def test_a_judge_that_has_not_answered_by_the_fixed_silence_is_late() -> None:
    # Audio in a burst (or a loaded machine): the turn waits no longer than the hangover would.
    judge = SilentJudge()
    runners, _ = with_judge(judge, ["what is my order status"])
    async with running(runners) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(400) + silence_frames(460))
        assert finals(h) == [] and len(judge.calls) == 1
        await speak(h, silence_frames(20))
        await h.until_frame("transcript.final.v1")
        assert metrics.values["turn_endpointing_ms"] == [480.0]


async def test_a_judgement_put_off_for_the_words_gets_the_same_time_before_it_is_late() -> None:
    # The words are late (the recogniser is held): the audio alone is asked at words_wait_ms
    # (400 ms), not 300; it is late only 180 ms later (480 - 300), not at 480 ms.
    judge = SilentJudge()
    runners, stt = with_judge(judge, ["I was wondering if you could help me"])
    stt.held = anyio.Event()
    async with running(runners) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(400) + silence_frames(560))
        assert finals(h) == [] and len(judge.calls) == 1, "not late at the fixed silence"
        await speak(h, silence_frames(20))
        stt.held.set()
        await h.until_frame("transcript.final.v1")
        assert metrics.values["turn_endpointing_ms"] == [580.0]


async def test_a_judge_that_answered_in_the_pause_is_waited_for_again() -> None:
    # The first verdict ("going on") came in time; a later one still pending at 480 ms is not
    # late: the caller who paused mid-sentence is not cut off by the hangover rule.
    judge = AnswersOnce()
    runners, _ = with_judge(judge, ["my number is 4 4 7"])
    async with running(runners) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(400) + silence_frames(1000))
        assert finals(h) == [] and len(judge.calls) == 2  # the second one never answers
        await speak(h, silence_frames(600))
        await h.until_frame("transcript.final.v1")
        assert metrics.values["turn_endpointing_ms"] == [1600.0]


async def test_a_barge_in_still_stops_the_agent_and_becomes_a_judged_turn() -> None:
    judge = SimTurnJudge()
    runners, _ = with_judge(judge, ["stop please"])
    async with running(runners, prof=profile(min_interruption_ms=200)) as h:
        h.session.on_text("tell me a story")
        await h.until_frame("AudioOut", 2)
        for frame in tone_frames(400):  # at once, while the answer is still playing
            h.session.on_audio(frame)
        first = await h.until_frame("ResponseCompleted")
        assert first.status == "interrupted"
        await speak(h, silence_frames(160))
        final = await h.until_frame("transcript.final.v1", 2)
        assert final.text == "stop please"
        # The words were read after the part of the story the caller had heard, not all of it.
        heard = next(m.content for m in h.session.core.history if m.role == "assistant")
        assert judge.calls[-1].agent_said == heard
        assert 0 < len(heard) < len(STORY)


async def test_push_to_talk_is_never_judged() -> None:
    judge = SimTurnJudge()
    runners, _ = with_judge(judge, ["book a table"])
    async with running(runners, turn_mode="push_to_talk") as h:
        await speak(h, tone_frames(400) + silence_frames(600))
        assert finals(h) == []
        h.session.on_commit()
        await h.until_frame("transcript.final.v1")
        assert judge.calls == []


async def test_the_simulators_judge_waits_for_quiet_not_for_a_gap_in_a_phrase() -> None:
    judge = SimTurnJudge(quiet_ms=SIM_TURN_QUIET_MS)  # what ``build_sim_runners`` uses
    runners, stt = with_judge(judge, ["hello there", "unused"])
    async with running(runners) as h:
        metrics = h.session.core.metrics = Observed()
        await speak(h, tone_frames(300) + silence_frames(240) + tone_frames(300))
        await speak(h, silence_frames(340))
        assert finals(h) == [], "a 240 ms gap is inside the phrase; 340 ms of quiet not yet"
        await speak(h, silence_frames(20))
        await h.until_frame("transcript.final.v1")
        assert finals(h) == ["hello there"]
        assert metrics.values["turn_endpointing_ms"] == [360.0]
        assert len(set(stt.calls)) == 1
