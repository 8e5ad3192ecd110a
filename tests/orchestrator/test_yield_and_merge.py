"""Yield and merge (ADR-0037): a caller cut off at a pause takes the turn back and keeps it.

The first part is committed at a pause (the sim VAD ends speech after 400 ms of silence), the
agent begins to answer it, and the caller goes on speaking: the barge-in stops the answer, and
the continuation is joined to the first part and answered once, as one request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from tests.orchestrator.action_support import call
from tests.support.audio import silence_frames, tone_frames
from tests.support.fakes import FakeStt, FakeTts, fake_runners
from tests.support.harness import Harness, running
from vocero.contracts.domain import VoiceRef
from vocero.contracts.ports import Transcription, VadEvent
from vocero.inference.sim import EnergyVad
from vocero.inference.sim.script import Rule, TtsScript
from vocero.inference.sim.turn import SimTurnJudge
from vocero.orchestrator.listening import Listener

pytestmark = pytest.mark.anyio

HALF = "I need a table"
REST = "for four people on the terrace"
WHOLE = f"{HALF} {REST}"
HALF_REPLY = "Sure thing. How many people will be coming along with you?"
WHOLE_REPLY = "A table for four on the terrace it is."
RULES = [
    Rule(match=rf"^{HALF}$", reply=HALF_REPLY),
    Rule(match=rf"^{WHOLE}$", reply=WHOLE_REPLY),
    Rule(match=".*", reply="Tell me more."),
]


async def push(h: Harness, frames: list[bytes]) -> None:
    for frame in frames:
        h.session.on_audio(frame)
        await anyio.wait_all_tasks_blocked()


def finals(h: Harness) -> list[str]:
    return [f.text for f in h.received.of("transcript.final.v1")]


async def say_half_then_resume(h: Harness, after_s: float, heard_ms: int) -> str:
    """The first part, committed at its pause; ``after_s`` into the answer, with ``heard_ms``
    of it played, the caller goes on. Returns the first answer's generation."""
    h.auto_ack = False
    await push(h, tone_frames(600) + silence_frames(420))
    assert finals(h) == [HALF]
    first = await h.until_frame("AudioOut")
    if heard_ms:
        h.session.on_playout(first.generation_id, heard_ms)
    await h.advance(after_s)
    await push(h, tone_frames(400))  # past min_interruption_ms: a barge-in
    return str(first.generation_id)


async def test_a_caller_who_resumes_within_the_window_is_answered_once_for_the_whole() -> None:
    runners, *_ = fake_runners(stt=[HALF, REST], rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        first = await say_half_then_resume(h, 0.3, heard_ms=400)
        stop = await h.until_frame("StopAndFlush")
        assert stop.generation_id == first
        cut = await h.until_frame("ResponseCompleted")
        assert cut.status == "interrupted"
        assert cut.heard_text and HALF_REPLY.startswith(cut.heard_text)
        assert cut.heard_text != HALF_REPLY
        h.auto_ack = True
        await push(h, silence_frames(420))
        whole = await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, WHOLE], "the continuation is joined to the first part"
        assert whole.status == "completed" and whole.heard_text == WHOLE_REPLY
        assert [(m.role, m.content) for m in h.session.history] == [
            ("assistant", cut.heard_text),  # only what was heard of the cut-off answer
            ("user", WHOLE),
            ("assistant", WHOLE_REPLY),
        ]
        await anyio.wait_all_tasks_blocked()
        completed = h.received.of("ResponseCompleted")
        assert [c.status for c in completed] == ["interrupted", "completed"]
        assert "Sorry" not in " ".join(c.heard_text for c in completed)
        drafts = h.session.drafts
        assert drafts is not None and drafts.counts.used == 2, "the whole was prepared too"


async def test_nothing_heard_leaves_nothing_of_the_cut_off_answer() -> None:
    runners, *_ = fake_runners(stt=[HALF, REST], rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        await say_half_then_resume(h, 0.3, heard_ms=0)
        cut = await h.until_frame("ResponseCompleted")
        assert cut.status == "interrupted" and cut.heard_text == ""
        h.auto_ack = True
        await push(h, silence_frames(420))
        await h.until_frame("ResponseCompleted", 2)
        assert [(m.role, m.content) for m in h.session.history] == [
            ("user", WHOLE), ("assistant", WHOLE_REPLY)
        ]


async def test_a_caller_who_resumes_after_the_window_starts_a_turn_of_their_own() -> None:
    runners, *_ = fake_runners(stt=[HALF, REST], rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        await say_half_then_resume(h, 1.6, heard_ms=400)  # the window is 1.5 s
        await h.until_frame("ResponseCompleted")
        h.auto_ack = True
        await push(h, silence_frames(420))
        await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, REST]
        assert [m.content for m in h.session.history if m.role == "user"] == [HALF, REST]


async def test_a_caller_who_heard_more_than_a_second_interrupts_the_answer() -> None:
    """Inside the window, but after more than a second of the answer played: the caller reacted
    to it ("stop please" over its second sentence), so the barge-in is a turn of its own."""
    runners, *_ = fake_runners(stt=[HALF, REST], rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(420))
        first = await h.until_frame("AudioOut")
        for played in (200, 400, 600, 800, 1_000, 1_100):  # playout reports, as it plays
            await h.advance(0.2)
            h.session.on_playout(first.generation_id, played)
        assert h.session.core.out.acknowledged_ms(first.generation_id) == 1_100
        assert not h.received.of("ResponseCompleted"), "the answer (1.2 s) is still playing"
        await push(h, tone_frames(400))  # 1.2 s after the commit: inside the window
        await h.until_frame("ResponseCompleted")
        h.auto_ack = True
        await push(h, silence_frames(420))
        await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, REST]
        assert [m.content for m in h.session.history if m.role == "user"] == [HALF, REST]



# ------------------------------------ a resume the barge-in path never saw (issue 45, item 2)

SHORT_RULES = [
    Rule(match=rf"^{HALF}$", reply="Okay."),
    Rule(match=rf"^{WHOLE}$", reply=WHOLE_REPLY),
    Rule(match=".*", reply="Tell me more."),
]


async def play_to(h: Harness, generation_id: str, played_ms: int) -> None:
    """The client plays the answer up to ``played_ms``, reporting as the audio arrives."""
    out = h.session.core.out
    while out.acknowledged_ms(generation_id) < played_ms:
        sent = int(h.out.playout_of(generation_id).sent_ms)
        assert sent > out.acknowledged_ms(generation_id), "the answer is longer than that"
        h.session.on_playout(generation_id, min(played_ms, sent))
        await anyio.wait_all_tasks_blocked()


async def test_a_caller_who_resumes_while_the_first_part_is_still_transcribed_is_merged() -> None:
    """The caller goes on before the first part is even committed (its transcription is slow):
    their speech began while the session was transcribing, where a new utterance is no
    barge-in candidate. Nothing was committed or answered yet: the first part is carried and
    said with the rest, one final and one answer, no answer to the half begun."""
    runners, stt, *_ = fake_runners(stt=[HALF, REST], rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        stt.held = anyio.Event()  # a slow recogniser: the half waits for its final
        await push(h, tone_frames(600) + silence_frames(420))
        await push(h, tone_frames(200))  # they go on before the half is committed
        assert finals(h) == []
        held, stt.held = stt.held, None
        held.set()
        await anyio.wait_all_tasks_blocked()
        assert finals(h) == [] and not h.received.of("ResponseCreated")
        await push(h, tone_frames(400) + silence_frames(420))
        whole = await h.until_frame("ResponseCompleted")
        assert finals(h) == [WHOLE], "the first part is said with the rest"
        assert whole.status == "completed" and whole.heard_text == WHOLE_REPLY
        assert len(h.received.of("ResponseCreated")) == 1
        assert [(m.role, m.content) for m in h.session.history] == [
            ("user", WHOLE), ("assistant", WHOLE_REPLY)
        ]


async def test_a_carried_first_part_whose_continuation_was_over_before_its_final() -> None:
    """The caller's whole continuation was said before the first part's final came (the
    recogniser is that slow): once the continuation is over nothing would stop an answer to the
    half, so none is begun; the whole request is answered once."""
    runners, stt, *_ = fake_runners(stt=[HALF, REST], rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        stt.held = anyio.Event()
        await push(h, tone_frames(600) + silence_frames(420))
        await push(h, tone_frames(400) + silence_frames(420))  # over, queued behind the half
        held, stt.held = stt.held, None
        held.set()
        whole = await h.until_frame("ResponseCompleted")
        assert finals(h) == [WHOLE]
        assert whole.status == "completed" and whole.heard_text == WHOLE_REPLY


async def test_a_carried_first_part_is_said_alone_if_what_followed_held_no_words() -> None:
    """What followed the first part's pause was a sound with no words: the first part is
    committed and answered on its own after all, nothing lost."""
    runners, stt, *_ = fake_runners(stt=[HALF, ""], rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        stt.held = anyio.Event()
        await push(h, tone_frames(600) + silence_frames(420))
        await push(h, tone_frames(200) + silence_frames(420))
        held, stt.held = stt.held, None
        held.set()
        done = await h.until_frame("ResponseCompleted")
        assert finals(h) == [HALF]
        assert done.heard_text == HALF_REPLY


async def test_with_push_to_talk_the_clients_commit_is_never_taken_back() -> None:
    """With push-to-talk the client ended the turn, not a pause: the next one, begun while the
    first is still being transcribed, is a turn of its own."""
    runners, stt, *_ = fake_runners(stt=[HALF, REST], rules=RULES, ms_per_char=20)
    async with running(runners, turn_mode="push_to_talk") as h:
        stt.held = anyio.Event()
        await push(h, tone_frames(600))
        h.session.on_commit()
        await push(h, tone_frames(200))
        held, stt.held = stt.held, None
        held.set()
        await h.until_frame("ResponseCreated")
        await push(h, tone_frames(200))
        h.session.on_commit()
        await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, REST]
        assert [c.status for c in h.received.of("ResponseCompleted")] == ["completed"] * 2


async def test_a_caller_who_began_while_a_short_answer_played_stops_it_at_once() -> None:
    """The caller went on while the answer to the half ("Okay.") was playing. Until issue 45's
    third round it played out before their speech was long enough to be judged a barge-in (the
    history kept the "Okay." they heard); now their onset stops it. Either way they were cut off:
    the continuation is joined."""
    runners, *_ = fake_runners(stt=[HALF, REST], rules=SHORT_RULES, ms_per_char=20)
    async with running(runners) as h:
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(420))
        first = await h.until_frame("AudioOut")
        await push(h, tone_frames(100))  # they go on while it plays
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "interrupted" and done.heard_text == ""
        h.auto_ack = True
        await push(h, tone_frames(300) + silence_frames(420))
        whole = await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, WHOLE]
        assert whole.heard_text == WHOLE_REPLY
        assert [(m.role, m.content) for m in h.session.history] == [
            ("user", WHOLE), ("assistant", WHOLE_REPLY)
        ]
        assert first.generation_id == done.generation_id


async def test_a_cut_off_caller_stops_the_answer_at_their_onset() -> None:
    """Issue 45 (heard before a yield): the caller goes on 20 ms into the answer to the half.
    The answer stops at the onset of their speech (the sim VAD's 60 ms), not after
    ``min_interruption_ms`` (200 ms) of it nor after a partial transcription: they hear only
    what had played by then. The continuation is joined and answered once."""
    runners, *_ = fake_runners(rules=RULES, ms_per_char=20)
    runners = replace(runners, stt=BusyPartials([HALF, REST]))
    async with running(runners) as h:
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(420))
        first = await h.until_frame("AudioOut")
        await play_to(h, first.generation_id, 20)
        await push(h, tone_frames(80))  # 80 ms of speech: its onset, well short of 200 ms
        stops = h.received.of("StopAndFlush")
        assert [s.generation_id for s in stops] == [first.generation_id], "stopped at the onset"
        out = h.session.core.out
        assert out.acknowledged_ms(first.generation_id) == 20, "nothing more played"
        cut = await h.until_frame("ResponseCompleted")
        assert cut.status == "interrupted"
        h.auto_ack = True
        await push(h, tone_frames(300) + silence_frames(420))
        whole = await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, WHOLE]
        assert whole.status == "completed" and whole.heard_text == WHOLE_REPLY


class HeldTts(FakeTts):
    """A synthesis that waits until it is released (a busy CPU voice)."""

    def __init__(self) -> None:
        super().__init__(TtsScript(ms_per_char=20))
        self.release = anyio.Event()

    async def synthesize(self, text: str, voice: VoiceRef) -> AsyncIterator[bytes]:
        await self.release.wait()
        async for chunk in super().synthesize(text, voice):
            yield chunk


async def test_a_quiet_caller_who_went_on_before_the_answer_was_sent_stops_it_at_once() -> None:
    """Issue 45: a continuation quieter than the agent's voice could come back (on the tuning
    half, a caller at -12 to -18 dB over an answer at full scale) never counted over the echo
    gate: the answer to the half played out and the continuation was dropped as a blip. Its
    speech began before the answer's first audio was handed over, so it cannot be that
    answer's echo: it stops the answer at its onset, and is joined."""
    runners, *_ = fake_runners(stt=[HALF, REST], rules=RULES, ms_per_char=20)
    tts = HeldTts()
    runners = replace(runners, tts=tts, vad=EnergyVad(threshold=0.005))
    async with running(runners) as h:
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(420))
        await h.until_frame("ResponseCreated")
        quiet = tone_frames(1_000, amplitude=0.01)  # -43 dBFS: under the gate of the answer
        await push(h, quiet[:2])  # they go on: 40 ms, not yet an onset for the VAD
        tts.release.set()
        first = await h.until_frame("AudioOut")  # the answer's first audio is handed over
        await push(h, quiet[2:4])  # the onset, while the gate is up
        stops = h.received.of("StopAndFlush")
        assert [s.generation_id for s in stops] == [first.generation_id], "stopped at once"
        h.auto_ack = True
        await push(h, quiet[4:] + silence_frames(420))
        whole = await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, WHOLE]
        assert whole.status == "completed" and whole.heard_text == WHOLE_REPLY


async def test_a_quiet_caller_who_went_on_over_the_answer_is_joined_by_their_words() -> None:
    """Issue 45: a continuation under the echo gate that began after the answer's audio could
    be back (so it might be that audio) never counted as a barge-in, and was dropped as a blip
    with the rest of the request. It is transcribed: its words are not the agent's, so it is
    the caller's, and it is joined once the answer to the half (heard whole) is over."""
    runners, *_ = fake_runners(stt=[HALF, REST], rules=SHORT_RULES, ms_per_char=20)
    runners = replace(runners, vad=EnergyVad(threshold=0.005))
    async with running(runners) as h:
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(420))
        first = await h.until_frame("AudioOut")
        await push(h, silence_frames(60))  # the answer's audio could be back by now
        await push(h, tone_frames(400, amplitude=0.01) + silence_frames(420))
        assert not h.received.of("StopAndFlush"), "under the gate: nothing stopped"
        assert finals(h) == [HALF], "the continuation waits for the answer to the half"
        h.auto_ack = True
        await play_to(h, first.generation_id, 100)  # "Okay." plays out
        whole = await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, WHOLE]
        assert whole.heard_text == WHOLE_REPLY
        assert [(m.role, m.content) for m in h.session.history] == [
            ("assistant", "Okay."), ("user", WHOLE), ("assistant", WHOLE_REPLY)
        ]


async def test_a_cough_that_stopped_the_answer_at_its_onset_resumes_it() -> None:
    """Stopping at the onset decides nothing about words: a cough inside the window stops the
    answer to a turn just committed, its final holds no words, nothing is joined, and the
    answer resumes from what was heard (ADR-0038)."""
    runners, *_ = fake_runners(stt=[HALF, ""], rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(420))
        first = await h.until_frame("AudioOut")
        await push(h, tone_frames(80))
        cut = await h.until_frame("ResponseCompleted")
        assert cut.status == "interrupted" and cut.generation_id == first.generation_id
        h.auto_ack = True
        await push(h, silence_frames(600))
        resumed = await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF], "no turn of the cough, nothing joined"
        assert resumed.status == "completed"
        heard = f"{cut.heard_text} {resumed.heard_text}".strip()
        assert heard.endswith(HALF_REPLY.split(". ")[-1])
        assert [m.content for m in h.session.history if m.role == "user"] == [HALF]


async def test_a_caller_who_speaks_after_the_answer_ended_starts_a_turn_of_their_own() -> None:
    """Inside the window, but the answer ("Okay.") had played out before they spoke: they heard
    it out, and what they say now answers it."""
    runners, *_ = fake_runners(stt=[HALF, REST], rules=SHORT_RULES, ms_per_char=20)
    async with running(runners) as h:
        await push(h, tone_frames(600) + silence_frames(420))
        await h.until_frame("ResponseCompleted")
        await h.advance(0.3)
        await push(h, tone_frames(400) + silence_frames(420))
        await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, REST]


class BusyPartials(FakeStt):
    """A recogniser too busy to give a partial transcription (the cpu runner under load)."""

    async def partial(self, pcm16: bytes, *, sample_rate: int, locale: str) -> Transcription:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_cut_off_caller_stops_the_answer_without_waiting_for_a_transcription() -> None:
    """A barge-in waits for a partial transcription (is it only an "mm-hmm"?). A caller who
    was cut off and goes on inside the window is finishing their sentence: the answer to the
    half stops once their speech has lasted ``min_interruption_ms``, however busy the
    recogniser is."""
    runners, *_ = fake_runners(rules=RULES, ms_per_char=20)
    runners = replace(runners, stt=BusyPartials([HALF, REST]))
    async with running(runners) as h:
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(420))
        first = await h.until_frame("AudioOut")
        await push(h, tone_frames(400))
        stop = await h.until_frame("StopAndFlush")
        assert stop.generation_id == first.generation_id
        h.auto_ack = True
        await push(h, silence_frames(420))
        await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, WHOLE]


async def test_an_mm_hmm_inside_the_window_stops_the_answer_and_it_resumes() -> None:
    """The cost of not waiting for a partial: an "mm-hmm" early in the answer to a turn just
    committed stops it like a continuation would. Its final holds no words, so nothing is
    joined and the answer resumes from what was heard (ADR-0038): nothing of it is lost."""
    runners, *_ = fake_runners(stt=[HALF, "mm-hmm"], rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(420))
        first = await h.until_frame("AudioOut")
        await push(h, tone_frames(300))
        cut = await h.until_frame("ResponseCompleted")
        assert cut.status == "interrupted" and cut.generation_id == first.generation_id
        h.auto_ack = True
        await push(h, silence_frames(600))
        resumed = await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF], "no turn of the mm-hmm, nothing joined"
        assert resumed.status == "completed"
        assert f"{cut.heard_text} {resumed.heard_text}".strip().endswith(
            HALF_REPLY.split(". ")[-1])


async def test_what_was_heard_is_judged_when_the_caller_began_not_when_the_stop_came() -> None:
    """The caller went on 800 ms into the answer; it went on playing while their speech was
    judged a barge-in, past a second. The answer they reacted to is what they had heard when
    they began: 800 ms, the rest of their own sentence."""
    runners, *_ = fake_runners(stt=[HALF, REST], rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(420))
        first = await h.until_frame("AudioOut")
        await play_to(h, first.generation_id, 800)
        await push(h, tone_frames(100))  # their speech has begun
        await play_to(h, first.generation_id, 1_100)  # judging it, the answer plays on
        await push(h, tone_frames(300))
        cut = await h.until_frame("ResponseCompleted")
        assert cut.status == "interrupted"
        h.auto_ack = True
        await push(h, silence_frames(420))
        await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, WHOLE]

MOVE = "move APT-1 to friday at 3pm"
MOVE_REST = "for my daughter not for me"
MOVE_RULES = [
    Rule(match=r"^move (?P<apt>APT-\d+) to (?P<day>\w+) at (?P<at>\d+ ?[ap]m)$",
         tool="appointments.reschedule",
         arguments={"appointment_id": "{apt}", "new_date": "{day}", "new_time": "{at}"},
         reply="{result.summary}"),
    Rule(match=r"^(yes|yeah|go ahead)\b", intent="confirm"),
    Rule(match=r"^(no|nope)\b", intent="reject"),
    Rule(match=r"daughter", reply="Which appointment of your daughter's should I move?"),
    Rule(match=r".*", reply="I can help with appointments."),
]


async def test_a_read_back_of_the_cut_off_half_is_withdrawn_before_a_yes(db_path: Path) -> None:
    async with call(db_path, rules=MOVE_RULES, ms_per_char=20) as c:
        h = c.h
        h.session.core.runners = replace(h.session.core.runners,
                                         stt=FakeStt([MOVE, MOVE_REST, "yes", "yes"]))
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(420))
        question = await h.until_frame("ConfirmationRequired")
        readback = await h.until_frame("AudioOut")
        h.session.on_playout(readback.generation_id, 2_000)  # every field of it heard
        await h.advance(0.3)
        await push(h, tone_frames(400))  # the caller goes on over the read-back
        cut = await h.until_frame("ResponseCompleted")
        assert cut.status == "interrupted"
        h.auto_ack = True
        await push(h, silence_frames(420))
        await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [MOVE, f"{MOVE} {MOVE_REST}"]
        assert c.h.session.core.coordinator is not None
        assert c.h.session.core.coordinator.active_question() is None, "withdrawn"
        for answered in (3, 4):  # "yes", and "yes" again (a question asked again binds)
            await push(h, tone_frames(300) + silence_frames(420))
            await h.until_frame("ResponseCompleted", answered)
        await anyio.wait_all_tasks_blocked()
        assert finals(h)[2:] == ["yes", "yes"]
        assert question.proposal_id
        assert c.reschedules() == [], "the half's proposal never reached the server"
        assert not any(s.status in ("authorized", "committed")
                       for s in h.received.of("ToolStatusChanged"))


# ------------------------------------------- the merged pause is learnt (ADR-0038 pace)

LINE = "I would like it by the window"


async def paused_line(h: Harness) -> None:
    """The caller's request, paused 700 ms in the middle, then silence."""
    await push(h, tone_frames(600) + silence_frames(700) + tone_frames(600) + silence_frames(1000))


def judged(stt: list[str]):  # type: ignore[no-untyped-def]
    """The scripted runners with an end-of-turn judge that calls every pause it is asked about
    the end (the judge that cuts a paused caller off): only the caller's floor holds a pause."""
    runners, *_ = fake_runners(stt=stt, rules=RULES, ms_per_char=20)
    return replace(runners, turn=SimTurnJudge())


async def test_without_a_merge_the_judge_cuts_the_paused_line_off() -> None:
    """The control: a new session's caller is cut off at the 700 ms pause of this line."""
    async with running(judged([LINE, REST])) as h:
        h.auto_ack = False
        await paused_line(h)
        assert finals(h) == [LINE, f"{LINE} {REST}"], "cut off at the pause, then merged"
        assert len(h.received.of("ResponseCreated")) == 2


async def test_a_merged_pause_lengthens_the_callers_floor_so_the_next_line_is_not_cut() -> None:
    """The caller was cut off at a 700 ms pause and took the turn back (merged). That pause was
    inside their turn: it is learnt, and their next line with the same pause is heard whole:
    one final, and no answer begun before it."""
    async with running(judged([HALF, REST, LINE, "unused"])) as h:
        h.auto_ack = False
        await push(h, tone_frames(600) + silence_frames(700))
        assert finals(h) == [HALF], "cut off at the pause"
        await h.until_frame("AudioOut")
        await push(h, tone_frames(400))  # they go on: a barge-in, inside the window
        assert (await h.until_frame("ResponseCompleted")).status == "interrupted"
        h.auto_ack = True
        await push(h, silence_frames(600))
        whole = await h.until_frame("ResponseCompleted", 2)
        assert finals(h) == [HALF, WHOLE] and whole.heard_text == WHOLE_REPLY
        before = len(h.received.frames)
        await paused_line(h)
        assert finals(h) == [HALF, WHOLE, LINE], "the 700 ms pause must not end the line"
        line = h.received.names()[before:]
        assert line.index("transcript.final.v1") < line.index("ResponseCreated")
        assert line.count("ResponseCreated") == 1 and "StopAndFlush" not in line
        last = await h.until_frame("ResponseCompleted", 3)
        assert last.status == "completed" and last.heard_text == "Tell me more."


def test_the_continuations_speech_starts_where_its_first_voiced_frame_began() -> None:
    """A pause inside an utterance ends at the first voiced frame (the VAD's count grows there);
    a continuation is a new utterance the VAD confirms 60 ms later, its pre-roll before it. Its
    speech is placed where the VAD says it began, so a pause across a commit measures the same
    as one inside a turn: 700 ms here, not 760."""
    listener = Listener(EnergyVad().open())
    for frame in tone_frames(600) + silence_frames(200):
        listener.push(frame)
    first = listener.commit()  # the turn, committed at 200 ms of its pause
    assert first is not None and first.last_voiced_at_ms == 600
    continuation = None
    for frame in silence_frames(500) + tone_frames(100):
        continuation = listener.push(frame).started
        if continuation is not None:
            break
    assert continuation is not None and continuation.duration_ms == 300, "pre-roll, 60 ms voiced"
    assert continuation.speech_from_ms == 240
    heard_ms = 600 + 200 + 500 + 60  # the session's clock when the VAD confirmed it
    speech_from = heard_ms - continuation.duration_ms + continuation.speech_from_ms
    assert speech_from - first.last_voiced_at_ms == 700


class OpenClockVad:
    """The sim VAD with Silero's clock: its events' ``at_ms`` count from ``open()``, also after
    a ``reset()`` (vocero/inference/toolkit/vad.py)."""

    def __init__(self) -> None:
        self._vad = EnergyVad().open()
        self._opened_ms = 0
        self._reset_at_ms = 0

    @property
    def voiced_ms(self) -> int:
        return self._vad.voiced_ms

    def push(self, pcm16: bytes) -> list[VadEvent]:
        self._opened_ms += len(pcm16) // 32
        return [VadEvent(kind=e.kind, at_ms=e.at_ms + self._reset_at_ms)
                for e in self._vad.push(pcm16)]

    def reset(self) -> None:
        self._vad.reset()
        self._reset_at_ms = self._opened_ms


def test_a_continuation_is_placed_alike_on_a_vad_whose_clock_runs_from_its_opening() -> None:
    """Silero's clock is not restarted by the reset at a commit: the continuation's speech must
    still begin where it did (the pause a join teaches the caller's pace is 700 ms, not 700 ms
    plus everything heard before the commit)."""
    listener = Listener(OpenClockVad())
    for frame in silence_frames(2_000) + tone_frames(600) + silence_frames(200):
        listener.push(frame)
    first = listener.commit()
    assert first is not None
    heard_ms = 2_000 + 600 + 200
    first.clock_ms = heard_ms - first.duration_ms
    continuation = None
    for frame in silence_frames(500) + tone_frames(100):
        heard_ms += 20
        continuation = listener.push(frame).started
        if continuation is not None:
            break
    assert continuation is not None
    speech_from = heard_ms - continuation.duration_ms + continuation.speech_from_ms
    assert speech_from - first.spoken_to_ms == 700
