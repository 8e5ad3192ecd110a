"""A speakerphone without a headset: the agent's own voice comes back as caller audio.

The client below plays the agent's audio in real time (20 ms a step, reporting playout) and
its microphone hears it back at -20 dB and 60 ms late, mixed with whatever the caller says.
The VAD is sensitive enough to hear that echo as speech (it would interrupt the agent with no
echo gate: the control case); the adaptive barge-in threshold keeps it from doing so, and a
caller talking over the echo still stops the agent.
"""

from __future__ import annotations

from dataclasses import replace

import anyio
import numpy as np
import pytest

from tests.support.audio import tone_frames
from tests.support.fakes import fake_runners
from tests.support.harness import Harness, profile, running
from vocero.contracts import events as ev
from vocero.contracts.domain import AgentProfile, TurnTaking
from vocero.inference.sim.script import Rule
from vocero.inference.sim.vad import EnergyVad
from vocero.orchestrator.echo import EchoGate, rms

pytestmark = pytest.mark.anyio

STORY = "Once upon a time there was a very long story that went on and on for a long while."
RULES = [Rule(match="story", reply=STORY), Rule(match=".*", reply="All right.")]
FRAME = 640  # 20 ms of 16 kHz PCM16
SENSITIVE = EnergyVad(threshold=0.005)
"""Speech above -46 dBFS: the agent's tone (-23 dBFS) at -20 dB is heard as speech."""


class Speakerphone:
    def __init__(self, h: Harness, gain_db: float = -20.0, delay_ms: int = 60) -> None:
        self.h = h
        self.gain = 10 ** (gain_db / 20)
        self.delay_bytes = delay_ms * 32
        self.played = 0  # bytes of the agent's audio played so far

    def agent_audio(self) -> tuple[str, bytes]:
        frames: list[ev.AudioOut] = self.h.received.of("AudioOut")
        generation_id = frames[-1].generation_id
        audio = b"".join(f.audio for f in frames if f.generation_id == generation_id)
        return generation_id, audio

    async def step(self, caller: bytes | None = None) -> None:
        """20 ms pass: the client plays 20 ms more and its microphone sends what it heard."""
        generation_id, audio = self.agent_audio()
        self.played = min(len(audio), self.played + FRAME)
        self.h.session.on_playout(generation_id, self.played // 32)
        start = self.played - FRAME - self.delay_bytes
        echo = np.zeros(FRAME // 2, dtype=np.float64)
        if start >= 0:
            chunk = np.frombuffer(audio[start : start + FRAME], "<i2").astype(np.float64)
            echo[: chunk.size] = chunk * self.gain
        if caller is not None:
            echo += np.frombuffer(caller, "<i2").astype(np.float64)
        self.h.session.on_audio(np.clip(echo, -32768, 32767).astype("<i2").tobytes())
        await anyio.wait_all_tasks_blocked()

    async def until_done(self, limit: int = 400) -> ev.ResponseCompleted:
        for _ in range(limit):
            if self.h.received.of("ResponseCompleted"):
                return self.h.received.of("ResponseCompleted")[0]  # type: ignore[no-any-return]
            await self.step()
        raise AssertionError("the answer never completed")


async def story(prof: AgentProfile | None = None):  # type: ignore[no-untyped-def]
    runners, *_ = fake_runners(stt=["wait, stop"], rules=RULES, ms_per_char=20)
    return running(replace(runners, vad=SENSITIVE), prof=prof or profile(min_interruption_ms=200))


async def start_story(h: Harness) -> Speakerphone:
    h.auto_ack = False
    h.session.on_text("tell me a story")
    await h.until_frame("AudioOut", 1)
    return Speakerphone(h)


async def test_the_agents_own_voice_coming_back_does_not_interrupt_it() -> None:
    async with await story() as h:
        phone = await start_story(h)
        done = await phone.until_done()
        assert done.status == "completed"
        assert done.heard_text == STORY
        assert "StopAndFlush" not in h.received.names()
        assert h.session.core.barge_ins == 0
        for _ in range(30):  # the echo's last 60 ms, then the VAD's hangover of silence
            await phone.step()
        finals = [t.text for t in h.received.of("transcript.final.v1")]
        assert finals == ["tell me a story"], "the echo never became a turn"
        assert h.session.core.barge_ins == 0


async def test_without_the_echo_gate_the_same_echo_interrupts() -> None:
    """The control case: the scenario above is a real self-interruption."""
    prof = profile(min_interruption_ms=200, turn_taking=TurnTaking(echo_window_ms=0))
    async with await story(prof) as h:
        phone = await start_story(h)
        done = await phone.until_done()
        assert done.status == "interrupted"
        assert "StopAndFlush" in h.received.names()


async def test_a_caller_talking_over_the_echo_still_interrupts() -> None:
    async with await story() as h:
        phone = await start_story(h)
        for _ in range(25):  # half a second of the agent's voice coming back
            await phone.step()
        assert "StopAndFlush" not in h.received.names()
        for frame in tone_frames(400, amplitude=0.3):
            await phone.step(caller=frame)
        done = await phone.until_done()
        assert done.status == "interrupted"
        assert "StopAndFlush" in h.received.names()
        assert h.session.core.barge_ins == 1
        assert 0 < len(done.heard_text) < len(STORY)


async def test_the_echo_of_an_answer_to_a_spoken_turn_does_not_stop_it_at_its_onset() -> None:
    """Issue 45: inside the merge window a caller who goes on stops the answer at the onset of
    their speech (ADR-0037). The agent's own voice coming back is no caller: its onset is
    under the gate, so the answer plays on and the echo never becomes a turn."""
    runners, *_ = fake_runners(stt=["tell me a story"], rules=RULES, ms_per_char=20)
    async with running(replace(runners, vad=SENSITIVE), prof=profile(min_interruption_ms=200)) as h:
        h.auto_ack = False
        for frame in tone_frames(600) + [b"\x00" * FRAME] * 21:  # said, then 420 ms of silence
            h.session.on_audio(frame)
            await anyio.wait_all_tasks_blocked()
        await h.until_frame("AudioOut", 1)
        counted = h.session.core.metrics = Counted()
        phone = Speakerphone(h)
        done = await phone.until_done()
        assert done.status == "completed" and done.heard_text == STORY
        assert "StopAndFlush" not in h.received.names()
        assert h.session.core.barge_ins == 0
        assert ("turn_yields", "onset") in counted.seen, "the echo began inside the window"


async def test_an_echo_inside_the_window_transcribed_as_the_agents_words_is_no_turn() -> None:
    """A quiet utterance inside the merge window is transcribed to tell a caller going on from
    the agent's voice coming back (issue 45): the echo reads as the agent's own words, so it is
    no turn, and nothing is joined to the caller's request."""
    echo_words = "Once upon a time there was a very long story"
    runners, *_ = fake_runners(stt=["tell me a story", echo_words], rules=RULES, ms_per_char=20)
    async with running(replace(runners, vad=SENSITIVE), prof=profile(min_interruption_ms=200)) as h:
        h.auto_ack = False
        for frame in tone_frames(600) + [b"\x00" * FRAME] * 21:
            h.session.on_audio(frame)
            await anyio.wait_all_tasks_blocked()
        await h.until_frame("AudioOut", 1)
        phone = Speakerphone(h)
        done = await phone.until_done()
        assert done.status == "completed" and done.heard_text == STORY
        counted = h.session.core.metrics = Counted()
        for _ in range(30):  # the line goes quiet: the echo's utterance ends
            h.session.on_audio(b"\x00" * FRAME)
            await anyio.wait_all_tasks_blocked()
        await anyio.wait_all_tasks_blocked()
        assert ("false_barge_ins", "") in counted.seen, "transcribed, and judged an echo"
        finals = [t.text for t in h.received.of("transcript.final.v1")]
        assert finals == ["tell me a story"], "the echo never became a turn"
        assert len(h.received.of("ResponseCompleted")) == 1


class Counted:
    """A metrics port that keeps what was counted (with its ``at`` label)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def observe_ms(self, name: str, value: float, **labels: str) -> None:
        return None

    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        self.seen.append((name, labels.get("at", "")))


def test_the_gate_follows_the_agents_recent_output_level() -> None:
    gate = EchoGate(margin_db=-14.0, window_ms=1000)
    loud = tone_frames(100, amplitude=0.1)[0]
    assert gate.over_echo(tone_frames(20, amplitude=0.001)[0], 0.0), "agent quiet: all counts"
    gate.played(loud, 10.0)
    echo = (np.frombuffer(loud, "<i2") * 0.1).astype("<i2").tobytes()  # -20 dB
    assert not gate.over_echo(echo, 10.5)
    assert gate.over_echo(tone_frames(20, amplitude=0.3)[0], 10.5)
    assert gate.threshold(10.5) == pytest.approx(rms(loud) * 10 ** (-14 / 20))
    assert gate.over_echo(echo, 11.2), "a second after the agent's last audio the gate is open"


def test_the_output_level_is_measured_only_when_asked_and_gives_the_same_thresholds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 46 item 4: a chunk's level is computed when a caller frame asks for it, not for
    every chunk sent; the thresholds are those of measuring each chunk as it was sent."""
    import vocero.orchestrator.echo as echo

    measured: list[float] = []

    def counted(pcm16: bytes) -> float:
        measured.append(rms(pcm16))
        return measured[-1]

    monkeypatch.setattr(echo, "rms", counted)
    gate = EchoGate(margin_db=-14.0, window_ms=1000)
    sent: list[tuple[float, bytes]] = []

    def play(at: float, amplitude: float) -> None:
        chunk = tone_frames(20, amplitude=amplitude)[0]
        sent.append((at, chunk))
        gate.played(chunk, at)

    def eager(now: float) -> float:  # every chunk measured as it was sent, as before
        levels = [rms(chunk) for at, chunk in sent if at >= now - 1.0]
        return max(levels, default=0.0) * 10 ** (-14 / 20)

    play(10.0, 0.05)
    play(10.3, 0.2)
    play(10.6, 0.1)
    assert measured == [], "sending measures nothing"
    assert gate.threshold(10.7) == pytest.approx(eager(10.7))
    assert eager(10.7) > 0
    assert len(measured) == 3
    play(11.4, 0.02)
    play(11.9, 0.08)
    assert gate.threshold(12.0) == pytest.approx(eager(12.0))  # the 10.0 s chunk is out
    assert len(measured) == 5
    play(13.0, 0.3)
    play(14.5, 0.01)  # the 13.0 s chunk leaves the window unasked
    assert gate.threshold(14.6) == pytest.approx(eager(14.6))
    assert len(measured) == 6, "a chunk that left the window unasked is never measured"
    assert gate.threshold(16.0) == 0.0
