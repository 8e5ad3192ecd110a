"""The scripted end-of-turn judge, and the runner sets that carry a judge."""

from __future__ import annotations

import pytest

from vocero.inference.sim import build_sim_runners
from vocero.inference.sim.script import SimScript
from vocero.inference.sim.turn import SimTurnJudge

pytestmark = pytest.mark.anyio
HALF_SECOND = bytes(16_000)


async def _probabilities(judge: SimTurnJudge, utterances: list[tuple[str, int]]) -> list[float]:
    out = []
    for utterance_id, calls in utterances:
        for _ in range(calls):
            verdict = await judge.judge(HALF_SECOND, sample_rate=16_000, utterance_id=utterance_id)
            out.append(verdict.probability)
    return out


async def test_each_utterance_gets_its_own_list_and_the_last_value_repeats() -> None:
    judge = SimTurnJudge([[0.1, 0.9], [0.2]], default=0.7)
    got = await _probabilities(judge, [("utt_a", 3), ("utt_b", 2), ("utt_c", 1)])
    assert got == [0.1, 0.9, 0.9, 0.2, 0.2, 0.7]


async def test_the_same_script_gives_the_same_verdicts() -> None:
    plan = [("utt_a", 2), ("utt_b", 2)]
    first = await _probabilities(SimTurnJudge([[0.3, 0.6], [0.8]]), plan)
    second = await _probabilities(SimTurnJudge([[0.3, 0.6], [0.8]]), plan)
    assert first == second == [0.3, 0.6, 0.8, 0.8]


async def test_calls_are_recorded_with_what_was_heard() -> None:
    judge = SimTurnJudge()
    verdict = await judge.judge(
        HALF_SECOND, sample_rate=16_000, transcript="my order is", utterance_id="utt_1"
    )
    assert verdict.probability == 1.0 and verdict.heard_words
    silent = await judge.judge(HALF_SECOND, sample_rate=8_000, utterance_id="utt_1")
    assert not silent.heard_words
    assert [(c.utterance_id, c.audio_ms, c.transcript) for c in judge.calls] == [
        ("utt_1", 500.0, "my order is"),
        ("utt_1", 1000.0, ""),
    ]


async def test_the_sim_set_has_a_judge_that_warms_and_reports() -> None:
    runners = build_sim_runners(SimScript())
    assert isinstance(runners.turn, SimTurnJudge)
    await runners.warm_up()
    assert runners.ready()
    assert set(runners.statuses()) == {"stt", "llm", "tts", "turn"}
