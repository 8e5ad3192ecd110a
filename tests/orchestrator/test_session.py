"""The real orchestrator on scripted runners: turns, barge-in, history, degradation."""

from __future__ import annotations

from dataclasses import replace

import anyio
import anyio.lowlevel
import pytest

from tests.support.audio import silence_frames, tone_frames, utterance
from tests.support.fakes import RecordingRecorder, fake_runners
from tests.support.harness import profile, running
from vocero.contracts import events as ev
from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import ToolIntent
from vocero.inference.sim.script import Rule
from vocero.orchestrator.hearing import SPECULATE_AFTER_MS

pytestmark = pytest.mark.anyio

STORY = (
    "Once upon a time there was a very long story. It went on for quite a while, "
    "with many words in it. And then, at last, it ended."
)
RULES = [
    Rule(match="story", reply=STORY),
    Rule(match="what did you say", reply="I said: {last_assistant}"),
    Rule(match=".*", reply="I can help with orders and appointments."),
]


def completed(h, generation_id: str) -> ev.ResponseCompleted:  # type: ignore[no-untyped-def]
    return next(p for p in h.received.of("ResponseCompleted") if p.generation_id == generation_id)


async def test_text_turn_is_answered_by_voice_and_remembered() -> None:
    runners, *_ = fake_runners(rules=RULES)
    async with running(runners) as h:
        h.session.on_text("hello")
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "completed"
        assert done.heard_text == "I can help with orders and appointments."
        names = h.received.names()
        assert names.index("ResponseCreated") < names.index("TextDelta") < names.index("AudioOut")
        await h.until_frame("StateChanged", 4)
        states = [p.state for p in h.received.of("StateChanged")]
        assert states == ["LISTENING", "THINKING", "SPEAKING", "LISTENING"]
        assert [(m.role, m.content) for m in h.session.history] == [
            ("user", "hello"),
            ("assistant", "I can help with orders and appointments."),
        ]


async def test_the_model_prepares_for_the_sessions_tools_before_the_first_turn() -> None:
    """A runner that learns from the profile (the CPU intent model) does so at session start."""
    runners, _, llm, _ = fake_runners(rules=RULES)
    tool = ToolDefinition(name="visits.find", description="Find a visit.", input_schema={})
    async with running(runners, tools=(tool,)) as h:
        await anyio.lowlevel.checkpoint()
        assert llm.prepared == [(["visits.find"], [])]
        assert llm.calls == 0, "before any turn"
        h.session.on_text("hello")
        await h.until_frame("ResponseCompleted")
        assert len(llm.prepared) == 1


async def test_barge_in_stops_first_and_keeps_only_heard_text() -> None:
    runners, *_ = fake_runners(rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        h.auto_ack = False
        h.session.on_text("tell me a story")
        audio = await h.until_frame("AudioOut", 3)
        generation_id = audio.generation_id
        h.session.on_playout(generation_id, 1000)
        h.session.on_speech_hint()
        done = await h.until_frame("ResponseCompleted")
        names = h.received.names()
        stop_at = names.index("StopAndFlush")
        after = h.received.frames[stop_at + 1 :]
        assert not [
            p
            for n, p in after
            if n in ("AudioOut", "TextDelta") and p.generation_id == generation_id
        ]
        assert done.status == "interrupted"
        assert done.heard_text and STORY.startswith(done.heard_text) and done.heard_text != STORY
        assert len(done.heard_text) <= len(STORY) * 1000 / (len(STORY.split(". ")[0]) * 20) + 1
        assert h.session.history[-1].content == done.heard_text
        await h.until(lambda: h.received.of("StateChanged")[-1].state == "TRANSCRIBING")
        states = [p.state for p in h.received.of("StateChanged")]
        assert states[-3:] == ["INTERRUPTING", "LISTENING", "TRANSCRIBING"]
        assert h.received.names().index("StopAndFlush") < len(h.received.frames) - 3


async def test_heard_text_without_any_playout_report_is_empty() -> None:
    runners, *_ = fake_runners(rules=RULES)
    async with running(runners) as h:
        h.auto_ack = False
        h.session.on_text("tell me a story")
        await h.until_frame("AudioOut", 2)
        h.session.on_speech_hint()
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "interrupted"
        assert done.heard_text == ""
        assert [m.role for m in h.session.history] == ["user"]


async def test_history_the_model_sees_is_what_was_heard() -> None:
    runners, *_ = fake_runners(rules=RULES, ms_per_char=20)
    async with running(runners) as h:
        h.auto_ack = False
        h.session.on_text("tell me a story")
        first = await h.until_frame("AudioOut", 2)
        h.session.on_playout(first.generation_id, 1200)
        h.session.on_speech_hint()
        interrupted = await h.until_frame("ResponseCompleted")
        h.auto_ack = True
        h.session.on_text("what did you say")
        repeat = await h.until_frame("ResponseCompleted", 2)
        assert repeat.heard_text == f"I said: {interrupted.heard_text}"


async def test_server_vad_speech_longer_than_threshold_interrupts() -> None:
    runners, *_ = fake_runners(stt=["stop please"], rules=RULES)
    async with running(runners, prof=profile(min_interruption_ms=200)) as h:
        h.session.on_text("tell me a story")
        await h.until_frame("AudioOut", 2)
        for frame in tone_frames(400):
            h.session.on_audio(frame)
        first = await h.until_frame("ResponseCompleted")
        assert first.status == "interrupted"
        for frame in silence_frames(500):
            h.session.on_audio(frame)
        final = await h.until_frame("transcript.final.v1", 2)
        assert final.text == "stop please"


async def test_short_noise_while_speaking_is_not_a_barge_in() -> None:
    runners, stt, *_ = fake_runners(stt=["should not be used"], rules=RULES, ms_per_char=5)
    async with running(runners, prof=profile(min_interruption_ms=300)) as h:
        h.auto_ack = False
        h.session.on_text("tell me a story")
        audio = await h.until_frame("AudioOut", 1)
        for frame in tone_frames(120) + silence_frames(500):
            h.session.on_audio(frame)
        assert "StopAndFlush" not in h.received.names()
        assert h.session.core.false_barge_ins == 1
        h.auto_ack = True
        h.session.on_playout(audio.generation_id, 10**7)
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "completed"
        assert stt.calls == [], "a blip is not transcribed (not even early, at its pause)"


async def test_backchannel_while_speaking_does_not_cancel() -> None:
    runners, *_ = fake_runners(stt=["mm-hmm", "what did you say"], rules=RULES, ms_per_char=30)
    async with running(runners, prof=profile(min_interruption_ms=200)) as h:
        h.auto_ack = False
        h.session.on_text("tell me a story")
        audio = await h.until_frame("AudioOut", 1)
        for frame in utterance(400, 500):
            h.session.on_audio(frame)
        await h.until(lambda: runners.stt._next == 1)  # type: ignore[attr-defined]
        assert "StopAndFlush" not in h.received.names()
        assert not [t for t in h.received.of("transcript.final.v1") if t.text == "mm-hmm"]
        h.session.on_playout(audio.generation_id, 10**7)
        h.auto_ack = True
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "completed"


async def test_cancel_request_stops_with_canceled_status() -> None:
    runners, *_ = fake_runners(rules=RULES)
    async with running(runners) as h:
        h.auto_ack = False
        h.session.on_text("tell me a story")
        audio = await h.until_frame("AudioOut", 1)
        h.session.on_cancel(audio.generation_id)
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "canceled"
        assert h.received.of("StopAndFlush")[0].reason == "canceled"
        await h.until(lambda: h.received.of("StateChanged")[-1].state == "LISTENING")
        assert [p.state for p in h.received.of("StateChanged")][-2:] == [
            "INTERRUPTING",
            "LISTENING",
        ]


async def test_the_tool_intent_of_a_generation_stopped_while_the_model_ran_is_dropped() -> None:
    """The caller speaks up while the model is still deciding; the model hands over a tool
    intent in that very loop iteration (the stop's cancellation lands one iteration later).
    The stopped generation's intent is dropped: the session does not fail (it did, with
    ``no transition from INTERRUPTING on tool_intent`` and a 1011 close, found by
    ``vocero eval`` by voice), nothing is proposed, and the next turn is answered."""
    rules = [Rule(match="call off", tool="visits.call_off", arguments={"visit_ref": "VX-2042"}),
             *RULES]
    runners, _, llm, _ = fake_runners(rules=rules)
    tool = ToolDefinition(name="visits.call_off", description="Call off a visit.",
                          input_schema={"type": "object"})
    generate = llm.generate

    async with running(runners, tools=(tool,)) as h:

        async def interrupted(request):  # type: ignore[no-untyped-def]
            async for output in generate(request):
                if isinstance(output, ToolIntent):
                    h.session.on_speech_hint()  # the caller goes on speaking
                yield output

        llm.generate = interrupted  # type: ignore[method-assign]
        h.session.on_text("please call off visit VX-2042")
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "interrupted"
        await h.until(lambda: h.received.of("StateChanged")[-1].state == "LISTENING")
        states = [p.state for p in h.received.of("StateChanged")]
        assert "TOOL_PENDING" not in states and "FAILED" not in states
        assert not h.received.of("ConfirmationRequired")
        assert not h.received.of("ToolStatus")
        assert not [e for e in h.received.of("Error") if e.code == "INTERNAL"]
        llm.generate = generate  # type: ignore[method-assign]
        h.session.on_text("hello")
        later = await h.until_frame("ResponseCompleted", 2)
        assert later.status == "completed"
        assert later.heard_text == "I can help with orders and appointments."


async def test_push_to_talk_commit_makes_a_turn() -> None:
    runners, *_ = fake_runners(stt=["hello from the button"], rules=RULES)
    async with running(runners, turn_mode="push_to_talk") as h:
        for frame in tone_frames(300):
            h.session.on_audio(frame)
        h.session.on_commit()
        final = await h.until_frame("transcript.final.v1")
        assert final.text == "hello from the button"
        assert (await h.until_frame("ResponseCompleted")).status == "completed"


async def test_stt_failure_degrades_to_text_mode_and_text_still_works() -> None:
    runners, stt, _, _ = fake_runners(stt=["x"], rules=RULES)
    stt.fail = True
    async with running(runners) as h:
        for frame in utterance():
            h.session.on_audio(frame)
        error = await h.until_frame("Error")
        assert error.code == "STT_UNAVAILABLE"
        await h.until(lambda: h.session.machine.state == "DEGRADED")
        h.session.on_text("hello")
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "completed"
        assert h.session.machine.state == "DEGRADED"
        stt.fail, stt.health = False, "ready"
        h.session.on_audio(silence_frames(20)[0])
        assert h.session.machine.state == "LISTENING"


async def test_tts_failure_keeps_text_and_never_switches_voice() -> None:
    runners, _, _, tts = fake_runners(rules=RULES)
    tts.fail_after_chunks = 2
    async with running(runners) as h:
        h.session.on_text("tell me a story")
        done = await h.until_frame("ResponseCompleted")
        assert [e.code for e in h.received.of("Error")] == ["TTS_UNAVAILABLE"]
        texts = "".join(d.text for d in h.received.of("TextDelta"))
        assert texts == STORY
        assert len(h.received.of("AudioOut")) == 2
        assert {v.voice_profile_id for v in tts.voices} == {"builtin"}
        assert done.status == "completed"


async def test_llm_timeout_is_retried_once_without_side_effects() -> None:
    runners, _, llm, _ = fake_runners(rules=RULES)
    llm.hang_calls = 1
    async with running(runners) as h:
        h.session.on_text("hello")
        await h.advance(2.0)  # the model's timeout (virtual time: reached, not waited for)
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "completed"
        assert llm.calls == 2
        assert not h.received.of("Error")


async def test_llm_timeout_twice_fails_the_generation_clearly() -> None:
    runners, _, llm, _ = fake_runners(rules=RULES)
    llm.hang_calls = 5
    async with running(runners) as h:
        h.session.on_text("hello")
        await h.advance(2.0)
        assert not h.received.of("ResponseCompleted"), "one timeout is retried"
        await h.advance(2.0)
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "failed"
        assert [e.code for e in h.received.of("Error")] == ["LLM_TIMEOUT"]
        assert llm.calls == 2
        assert h.session.machine.state == "LISTENING"


async def test_model_capacity_full_is_rejected_early() -> None:
    runners, _, llm, _ = fake_runners(rules=RULES)
    llm.busy = True
    async with running(runners) as h:
        h.session.on_text("hello")
        done = await h.until_frame("ResponseCompleted")
        assert done.status == "failed"
        assert [e.code for e in h.received.of("Error")] == ["CAPACITY_EXHAUSTED"]
        assert h.received.of("Error")[0].user_message_key == "service.busy"


async def test_pacing_keeps_at_most_max_lead_ahead_of_playout() -> None:
    runners, *_ = fake_runners(rules=RULES, ms_per_char=20)
    async with running(runners, prof=profile(max_lead_ms=400)) as h:
        h.auto_ack = False
        h.session.on_text("tell me a story")
        first = await h.until_frame("AudioOut", 1)
        gen = first.generation_id
        for step in range(6):
            played = step * 200
            await h.until(lambda p=played: h.out.playout_of(gen).sent_ms - p >= 400, timeout=2)
            assert h.out.playout_of(gen).sent_ms - played <= 400 + 1e-6
            h.session.on_playout(gen, played + 200)


async def test_long_speech_gets_partial_transcripts_before_the_final() -> None:
    runners, *_ = fake_runners(stt=["what is the status of my order"], rules=RULES)
    async with running(runners) as h:
        for frame in tone_frames(1400):
            h.session.on_audio(frame)
        partial = await h.until_frame("transcript.partial.v1")
        assert partial.text == "what is the status of my order"
        for frame in silence_frames(500):
            h.session.on_audio(frame)
        final = await h.until_frame("transcript.final.v1")
        names = h.received.names()
        assert names.index("transcript.partial.v1") < names.index("transcript.final.v1")
        assert final.text == "what is the status of my order"


async def test_a_stale_early_transcription_does_not_hold_up_the_next() -> None:
    """The recogniser takes one job at a time; the first early transcription (at a pause the
    caller spoke on after) never finishes by itself. Going stale, it must leave the queue."""
    runners, stt, *_ = fake_runners(stt=["book it", "thanks"], rules=RULES)
    stt.hang_first = True
    async with running(runners) as h:
        await pause_then_speak_on(h, stt)
        final = await h.until_frame("transcript.final.v1")
        assert final.text == "book it"


async def test_a_runner_that_asks_for_no_partials_gets_only_finals() -> None:
    runners, stt, *_ = fake_runners(stt=["what is the status of my order"], rules=RULES)
    stt.partial_interval_ms = 0
    asked: list[int] = []
    original = stt.partial

    async def counting_partial(pcm16: bytes, *, sample_rate: int, locale: str):  # type: ignore[no-untyped-def]
        asked.append(len(pcm16))
        return await original(pcm16, sample_rate=sample_rate, locale=locale)

    stt.partial = counting_partial  # type: ignore[method-assign]
    async with running(runners) as h:
        for frame in tone_frames(2000) + silence_frames(500):
            h.session.on_audio(frame)
        final = await h.until_frame("transcript.final.v1")
        assert final.text == "what is the status of my order"
        assert asked == []
        assert h.received.of("transcript.partial.v1") == []


async def test_a_voice_revoked_mid_answer_is_not_used_for_the_next_unit() -> None:
    runners, *_ = fake_runners(rules=RULES, ms_per_char=5)
    usable = {"now": True}
    async with running(runners) as h:
        h.session.ctx = replace(h.session.ctx, voice_usable=lambda: usable["now"])
        h.auto_ack = False
        h.session.on_text("tell me a story")
        first = await h.until_frame("AudioOut", 1)
        usable["now"] = False
        h.auto_ack = True
        h.session.on_playout(first.generation_id, 10**7)
        done = await h.until_frame("ResponseCompleted")
        units_with_audio = {a.unit_id for a in h.received.of("AudioOut")}
        assert units_with_audio == {h.received.of("TextDelta")[0].unit_id}
        assert [e.code for e in h.received.of("Error")] == ["VOICE_UNAVAILABLE"]  # issue 41
        assert "".join(d.text for d in h.received.of("TextDelta")) == STORY
        assert done.status == "completed"


async def _stt_called(stt, count: int) -> None:  # type: ignore[no-untyped-def]
    await anyio.wait_all_tasks_blocked()
    assert len(stt.calls) >= count


async def pause_then_speak_on(h, stt) -> None:  # type: ignore[no-untyped-def]
    """Speech, a pause long enough to start an early transcription, then more speech and the end
    of the turn."""
    for frame in tone_frames(400) + silence_frames(SPECULATE_AFTER_MS + 40):
        h.session.on_audio(frame)
    await _stt_called(stt, 1)
    for frame in tone_frames(300) + silence_frames(500):
        h.session.on_audio(frame)


async def test_a_pause_starts_the_final_transcription_before_the_endpoint() -> None:
    runners, stt, *_ = fake_runners(stt=["what is my order status", "thanks"], rules=RULES)
    async with running(runners) as h:
        for frame in tone_frames(400) + silence_frames(SPECULATE_AFTER_MS + 40):
            h.session.on_audio(frame)
        await _stt_called(stt, 1)
        assert h.received.of("transcript.final.v1") == []  # the VAD still waits for the end
        for frame in silence_frames(500):
            h.session.on_audio(frame)
        final = await h.until_frame("transcript.final.v1")
        assert final.text == "what is my order status"
        assert len(stt.calls) == 1, "the final must reuse the transcription started at the pause"


async def test_speech_after_the_pause_makes_the_early_transcription_stale() -> None:
    runners, stt, *_ = fake_runners(stt=["check order A123", "thanks"], rules=RULES)
    async with running(runners) as h:
        await pause_then_speak_on(h, stt)
        final = await h.until_frame("transcript.final.v1")
        assert final.text == "check order A123"
        assert len(stt.calls) == 2 and stt.calls[0] == stt.calls[1]  # one utterance, twice
        await h.until_frame("ResponseCompleted")
        for frame in utterance():
            h.session.on_audio(frame)
        second = await h.until_frame("transcript.final.v1", 2)
        assert second.text == "thanks", "a script line is consumed once per audio turn"
        assert len(set(stt.calls)) == 2


TWO = "The first sentence is short. The second sentence waits for its turn to play."


async def test_a_held_unit_expires_while_output_is_blocked() -> None:
    """Seed 000: the caller says nothing, output is blocked (no playout progress) and a unit
    planned in time grows too old while it waits: it is dropped when its turn comes, not
    played late. Fails if the age were checked only before the wait."""
    recorder = RecordingRecorder()
    # 40 ms a character: the first unit (1.1 s of audio) is longer than the 400 ms the client
    # may be ahead, so the second waits in the queue while nothing is played.
    runners, *_ = fake_runners(rules=[Rule(match=".*", reply=TWO)], ms_per_char=40)
    async with running(runners, prof=profile(unit_max_age_ms=1000), recorder=recorder) as h:
        h.auto_ack = False
        h.session.on_text("hello")
        first = await h.until_frame("AudioOut", 1)
        await h.advance(3.0)  # blocked: nothing is played for 3 s
        h.auto_ack = True
        h.session.on_playout(first.generation_id, 10**7)
        done = await h.until_frame("ResponseCompleted")
        decided = recorder.final()
        first_unit, second_unit = [e for e in recorder.entries if e.disposition == "planned"]
        assert decided[first_unit.unit_id].disposition == "admitted"
        assert (decided[second_unit.unit_id].disposition,
                decided[second_unit.unit_id].reason_code) == ("expired", "max_age")
        assert "second sentence" not in "".join(p.text for p in h.received.of("TextDelta"))
        # Blocked for 3 s, the first unit's synthesis hit the 2 s TTS timeout before all of it
        # was sent: the caller heard only the part that was sent and played (issue #25).
        sent_ms = h.out.playout_of(first.generation_id).sent_ms
        assert sent_ms < len("The first sentence is short.") * 40
        assert done.heard_text and "The first sentence is short.".startswith(done.heard_text)
        assert len(done.heard_text) <= len("The first sentence is short.") * sent_ms / (
            len("The first sentence is short.") * 40)


async def test_waiting_for_the_earlier_audio_of_the_answer_is_not_age() -> None:
    recorder = RecordingRecorder()
    runners, *_ = fake_runners(rules=[Rule(match=".*", reply=TWO)], ms_per_char=40)
    async with running(runners, prof=profile(unit_max_age_ms=500), recorder=recorder) as h:
        h.auto_ack = False
        h.session.on_text("hello")
        first = await h.until_frame("AudioOut", 1)
        played = 0
        while not h.received.of("ResponseCompleted"):  # the caller hears it in real time
            played += 100
            h.session.on_playout(first.generation_id, played)
            await h.advance(0.1)
        assert {e.disposition for e in recorder.final().values()} == {"admitted"}
        assert h.received.of("ResponseCompleted")[0].heard_text == TWO
