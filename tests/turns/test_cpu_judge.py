"""The CPU end-of-turn judge: its shell (admission, warm-up, input) and Smart Turn on the corpus."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import numpy as np
import pytest

from vocero.app.turn_corpus import Clip, load_corpus
from vocero.contracts.errors import CapacityError, ErrorCode, VoceroError
from vocero.inference.cpu import CpuSettings, build_cpu_runners
from vocero.inference.cpu.audio import Float32
from vocero.inference.cpu.settings import ModelNotFoundError, QueueSettings
from vocero.inference.cpu.turn import EndOfTurnJudge, SmartTurnEngine, turn_model_path
from vocero.inference.turn import GOING_ON_CAP

pytestmark = pytest.mark.anyio
JUDGED_SILENCE_MS = 200


class FakeEngine:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that."""Records what it was given; ``gate`` holds a call until the test releases it."""

 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.name = "turn.fake"

 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.def __init__(self, probability: float = 0.8, fail_load: bool = False) -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    self.probability_value = probability
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    self.fail_load = fail_load
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    self.heard: list[int] = []
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    self.gate: threading.Event | None = None
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    self.entered = threading.Event()

 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.def load(self) -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    if self.fail_load:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.        raise OSError("model file unreadable")

 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.def probability(self, audio: Float32) -> float:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    self.heard.append(audio.size)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    self.entered.set()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    if self.gate is not None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.        self.gate.wait(10)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    return self.probability_value


# ------------------------------------------------------------------------------ the shell


async def test_a_judgement_hears_the_last_8_s_at_16_khz_and_weighs_the_words() -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.engine = FakeEngine(probability=0.8)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.judge = EndOfTurnJudge(engine)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.await judge.warm_up()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert judge.status().health == "ready"
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.ten_seconds_8k = bytes(8_000 * 2 * 10)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.verdict = await judge.judge(ten_seconds_8k, sample_rate=8_000)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert engine.heard[-1] == 16_000 * 8
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert (verdict.probability, verdict.heard_words) == (0.8, False)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert verdict.model_ms >= 0
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.going_on = await judge.judge(bytes(3200), sample_rate=16_000, transcript="my order is")
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert (going_on.probability, going_on.heard_words) == (GOING_ON_CAP, True)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.finished = await judge.judge(bytes(3200), sample_rate=16_000, transcript="Where is it?")
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert finished.probability == 0.8


async def test_the_verdict_says_when_the_words_read_as_finished() -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.judge = EndOfTurnJudge(FakeEngine(probability=0.3))
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.await judge.warm_up()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.asked = "Do I have any appointments coming up?"
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.finished = await judge.judge(bytes(3200), sample_rate=16_000, transcript=asked)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert (finished.probability, finished.words_finished) == (0.3, True)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.open_ = await judge.judge(bytes(3200), sample_rate=16_000, transcript="Can you help?")
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert not open_.words_finished
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert not (await judge.judge(bytes(3200), sample_rate=16_000)).words_finished


async def test_words_that_do_not_vouch_for_an_end_leave_it_to_the_audio() -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.judge = EndOfTurnJudge(FakeEngine(probability=0.93))
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.await judge.warm_up()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.audio = bytes(3200)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.for words, confidence in (("send it first", 0.9), ("It was supposed to rhyme one.", 0.5)):
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    verdict = await judge.judge(
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.        audio, sample_rate=16_000, transcript=words, confidence=confidence
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    )
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    assert (verdict.probability, verdict.heard_words, verdict.words_finished) == (
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.        0.93,
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.        False,
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.        False,
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    ), words
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.statement = await judge.judge(
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    audio, sample_rate=16_000, transcript="I'd like to cancel.", confidence=0.9
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert (statement.words_finished, statement.words_question) == (True, False)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.question = await judge.judge(audio, sample_rate=16_000, transcript="Can I pay by card?")
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert (question.words_finished, question.words_question) == (True, True)


async def test_the_same_audio_of_the_same_utterance_is_heard_once() -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.engine = FakeEngine(probability=0.6)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.judge = EndOfTurnJudge(engine)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.await judge.warm_up()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.warm_calls = len(engine.heard)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.audio = bytes(6400)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.first = await judge.judge(audio, sample_rate=16_000, utterance_id="u1")
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.words = await judge.judge(
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    audio, sample_rate=16_000, transcript="Where is it?", utterance_id="u1"
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert len(engine.heard) == warm_calls + 1, "the words alone changed: no second model run"
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert (first.probability, words.probability, words.model_ms) == (0.6, 0.6, 0.0)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.await judge.judge(audio + bytes(640), sample_rate=16_000, utterance_id="u1")  # more audio
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.await judge.judge(audio, sample_rate=16_000, utterance_id="u2")  # another utterance
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.await judge.judge(audio, sample_rate=16_000)  # no utterance: never cached
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.await judge.judge(audio, sample_rate=16_000)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert len(engine.heard) == warm_calls + 5


async def test_a_full_queue_answers_busy_at_once() -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.engine = FakeEngine()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.judge = EndOfTurnJudge(engine, QueueSettings(capacity=1, max_queue=0, deadline_s=1.0))
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.engine.gate = threading.Event()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.results: list[float] = []

 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.async def first() -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    results.append((await judge.judge(bytes(3200), sample_rate=16_000)).probability)

 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.async with anyio.create_task_group() as tg:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    tg.start_soon(first)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    await anyio.to_thread.run_sync(engine.entered.wait, 10)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    with pytest.raises(CapacityError):
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.        await judge.judge(bytes(3200), sample_rate=16_000)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    engine.gate.set()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert results == [0.8]
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert judge.status().detail.endswith("rejected 1, expired 0")


async def test_a_judge_that_cannot_load_is_unavailable_with_the_speech_input_code() -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.judge = EndOfTurnJudge(FakeEngine(fail_load=True))
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.with pytest.raises(VoceroError) as caught:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    await judge.warm_up()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert caught.value.code is ErrorCode.STT_UNAVAILABLE
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.status = judge.status()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert status.health == "unavailable" and "model file unreadable" in status.detail


def test_the_model_path_comes_from_the_environment_or_the_pipecat_wheel(tmp_path: Path) -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.with pytest.raises(ModelNotFoundError, match="VOCERO_TURN_MODEL=/nowhere"):
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    turn_model_path({"VOCERO_TURN_MODEL": "/nowhere/model.onnx"})
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.model = tmp_path / "turn.onnx"
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.model.write_bytes(b"onnx")
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert turn_model_path({"VOCERO_TURN_MODEL": str(model)}) == str(model)


# ------------------------------------------------------------------------------ the model


def _pause_audio(clip: Clip) -> bytes:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that."""The utterance as the judge hears it at a pause: from 300 ms before speech to 200 ms into
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.the silence after the last word before it (the pause of a paused clip, else the end)."""
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.end = (clip.pause[0] if clip.pause else clip.speech_end_ms) + JUDGED_SILENCE_MS
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.start = clip.speech_start_ms - 300
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.return clip.pcm16()[start * 32 : end * 32]


@pytest.mark.models
def test_the_bundled_model_is_smart_turn_v3_cpu(smart_turn: SmartTurnEngine) -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert Path(smart_turn.model_path).name.startswith("smart-turn-v3")
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert smart_turn.model_path.endswith("-cpu.onnx")
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert smart_turn.model_path == turn_model_path({})


@pytest.mark.models
async def test_smart_turn_tells_finished_callers_from_paused_ones(
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.turn_judge: EndOfTurnJudge,
) -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.clips = load_corpus()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.scores: dict[str, list[float]] = {"complete": [], "paused": []}
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.for clip in clips:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    verdict = await turn_judge.judge(_pause_audio(clip), sample_rate=16_000)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    assert 0.0 <= verdict.probability <= 1.0 and not verdict.heard_words
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.    scores[clip.label.kind].append(verdict.probability)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.complete, paused = np.array(scores["complete"]), np.array(scores["paused"])
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.# The chance that a finished caller scores above a paused one (ROC AUC); chance is 0.5.
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.auc = float(np.mean(complete[:, None] > paused[None, :]))
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert auc >= 0.75, (auc, complete.round(2).tolist(), paused.round(2).tolist())
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert float(np.median(complete)) >= 0.8
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.# Its calibration is not what it tells apart: on the packages installed 2026-12-02 (numpy
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.# 2.4, onnxruntime 1.32, av 18) paused callers score a median 0.82 (0.5 or less before), while
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.# finished ones still score higher (AUC above). The policy never takes the audio alone for a
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.# paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert float(np.median(complete)) > float(np.median(paused))


@pytest.mark.models
def test_the_model_s_threads_spin_only_while_it_runs(smart_turn: SmartTurnEngine) -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that."""Spinning between the model's operators, stopped when a judgement returns: the cores are
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.the recogniser's again the moment the verdict is out."""
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.smart_turn.load()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.options = smart_turn._session.get_session_options()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert options.get_session_config_entry("session.intra_op.allow_spinning") == "1"
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert options.get_session_config_entry("session.force_spinning_stop") == "1"
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert options.intra_op_num_threads == CpuSettings.from_env().cpu_threads()


@pytest.mark.models
async def test_the_cpu_set_carries_the_judge_and_warms_it(smart_turn: SmartTurnEngine) -> None:
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.runners = build_cpu_runners(CpuSettings.from_env({}))
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert isinstance(runners.turn, EndOfTurnJudge)
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert runners.statuses()["turn"].health == "starting"
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.await runners.turn.warm_up()
 paused caller (the words decide); tests/turns/test_turn_policy*.py hold that.assert runners.statuses()["turn"].health == "ready"
