"""``vocero bench turns``: the real VAD on corpus clips, and the policy replayed over them."""

from __future__ import annotations

import functools

import anyio
import pytest

from vocero.bench import turns as bt
from vocero.bench.command import _registry
from vocero.bench.turn_corpus import Clip, load_corpus
from vocero.contracts.domain import TurnTaking
from vocero.contracts.ports import Transcription, TurnVerdict
from vocero.inference.sim.turn import SimTurnJudge

pytestmark = pytest.mark.anyio


class FakeTranscriber:
    def __init__(self, text: str) -> None:
        self.said = text
        self.calls = 0

    def heard(self, pcm16: bytes) -> Transcription:
        self.calls += 1
        return Transcription(text=self.said)


@functools.cache
def _clip(clip_id: str) -> Clip:
    return next(c for c in load_corpus() if c.id == clip_id)


def test_the_bench_is_registered() -> None:
    assert "turns" in _registry()


def test_a_commit_before_the_last_word_is_premature_and_has_no_latency() -> None:
    clip = _clip("p24_piper_slow")
    early = bt.Outcome(clip, clip.speech_end_ms - 500.0, "hangover")
    late = bt.Outcome(clip, clip.speech_end_ms + 300.0, "judged", judgements=2)
    assert early.premature and early.latency_ms is None
    assert not late.premature and late.latency_ms == 300.0
    facts = bt.summary([early, late])
    assert facts["premature_cut_off_rate_paused"] == 0.5
    assert facts["premature_cut_offs"] == ["p24_piper_slow"]
    assert facts["endpointing_ms_paused"]["p50"] == 300.0
    assert facts["judgements_per_utterance"] == 1.0


@pytest.mark.model
def test_today_s_hangover_cuts_a_long_pause_and_waits_480_ms_after_a_finished_caller(
    silero: str,
) -> None:
    paused = bt.hear(_clip("p24_piper_slow"), silero)  # a 682 ms pause
    assert paused.clip.pause is not None and paused.hangover_commit_ms is not None
    assert paused.clip.pause[0] < paused.hangover_commit_ms < paused.clip.pause[1]
    finished = bt.hear(_clip("c00_piper_slow"), silero)
    assert finished.hangover_commit_ms is not None
    assert 480 <= finished.hangover_commit_ms - finished.clip.speech_end_ms <= 640
    assert abs(finished.speech_started_ms - finished.clip.speech_start_ms) <= 100


@pytest.mark.model
async def test_the_policy_commits_on_a_sure_verdict_and_waits_out_a_doubtful_one(
    silero: str,
) -> None:
    heard = bt.hear(_clip("c00_piper_slow"), silero)
    sure = bt.Oracle(SimTurnJudge(default=1.0), None)
    outcome = await bt.Replay(heard, TurnTaking(), sure, words=False).run()
    assert outcome.reason == "judged" and outcome.judgements == 1
    # Without words the judge is asked at judge_pause_ms; the VAD's own lag comes on top.
    pause = TurnTaking().judge_pause_ms
    assert outcome.latency_ms is not None and pause <= outcome.latency_ms <= pause + 150
    doubtful = bt.Oracle(SimTurnJudge(default=0.3), None)
    waited = await bt.Replay(heard, TurnTaking(), doubtful, words=False).run()
    assert waited.reason == "max_silence"
    assert waited.latency_ms is not None and 1600 <= waited.latency_ms <= 1750


@pytest.mark.model
async def test_the_early_transcript_reaches_the_judge_at_the_pause(silero: str) -> None:
    heard = bt.hear(_clip("c00_piper_slow"), silero)
    judge = SimTurnJudge([[0.9]])  # sure with the words
    transcriber = FakeTranscriber("Where is my order?")
    oracle = bt.Oracle(judge, transcriber)
    outcome = await bt.Replay(heard, TurnTaking(), oracle, words=True).run()
    assert outcome.reason == "judged"
    # Transcribed at the 160 ms pause and judged at once, before judge_pause_ms: one judgement.
    assert [c.transcript for c in judge.calls] == ["Where is my order?"]
    assert transcriber.calls == 1
    again = await bt.Replay(heard, TurnTaking(), oracle, words=True).run()
    assert again == outcome and transcriber.calls == 1, "a replay reuses every model answer"


class SlowJudge(SimTurnJudge):
    async def judge(self, pcm16: bytes, **kwargs: object) -> TurnVerdict:  # type: ignore[override]
        await anyio.sleep(0.05)
        return await super().judge(pcm16, **kwargs)  # type: ignore[arg-type]


@pytest.mark.model
async def test_a_timed_replay_charges_the_judge_s_time_an_instant_one_does_not(
    silero: str,
) -> None:
    heard = bt.hear(_clip("c00_piper_slow"), silero)
    oracle = bt.Oracle(SlowJudge(default=1.0), None)
    timed = await bt.Replay(heard, TurnTaking(), oracle, words=False).run()
    instant = await bt.Replay(heard, TurnTaking(), oracle, words=False, timed=False).run()
    assert timed.commit_ms is not None and instant.commit_ms is not None
    assert timed.commit_ms - instant.commit_ms >= 50
    assert len(oracle.judge_ms) == 1, "the instant replay reused the timed run's answer"
