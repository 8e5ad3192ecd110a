"""End-of-turn judge: a runner shell (admission, health, warm-up) around an audio turn model.

Here the model is Smart Turn v3.2 (Pipecat/Daily, BSD-2-Clause): a Whisper-tiny encoder with a
classifier, int8 ONNX, 8.7 MB, shipped in the ``pipecat-ai`` wheel, which ``scripts/install.sh``
installs without its dependencies: only the ``.onnx`` file is loaded, with onnxruntime; its
input, Whisper's log-mel features of the last 8 s, is computed in :mod:`.mel`. The model hears
audio only; a transcript, when the orchestrator has one, caps the probability of a sentence that
visibly goes on, and the verdict says when it reads as finished
(:func:`vocero.inference.turn.words_kind`).

A judgement costs tens of ms of CPU and is worth nothing late: the queue is short and its
deadline a quarter of a second; past it the caller gets ``CapacityError`` and the turn policy
falls back to a fixed silence.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import structlog

from vocero.contracts.errors import CapacityError, ErrorCode
from vocero.contracts.ports import TurnVerdict
from vocero.inference import threads
from vocero.inference.toolkit import mel
from vocero.inference.toolkit.audio import Float32, pcm16_to_float, resample
from vocero.inference.toolkit.settings import ModelNotFoundError, QueueSettings
from vocero.inference.toolkit.shell import RunnerShell
from vocero.inference.toolkit.turn_words import WordsEngine
from vocero.inference.turn import reading

log = structlog.get_logger(__name__)
TURN_QUEUE = QueueSettings(capacity=1, max_queue=8, deadline_s=0.25)
_MODEL_GLOB = "smart-turn-v3*-cpu.onnx"


class TurnEngine(Protocol):
    """One blocking audio turn model of 16 kHz float32 mono audio."""

    name: str

    def load(self) -> None: ...

    def probability(self, audio: Float32) -> float: ...


class EndOfTurnJudge(RunnerShell):
    """The :class:`~vocero.contracts.ports.TurnJudge` port over any :class:`TurnEngine`."""

    def __init__(
        self,
        engine: TurnEngine,
        queue: QueueSettings = TURN_QUEUE,
        *,
        words: WordsEngine | None = None,
    ) -> None:
        super().__init__(engine.name, queue)
        self._engine = engine
        self._words = words
        self._last: tuple[str, int, float] | None = None
        """(utterance, audio bytes, probability) of the last judgement: the policy asks again
        about the same audio when the pause's transcript arrives, and only the words changed."""
        self._last_words: tuple[tuple[str, str], float] | None = None
        """((transcript, agent's line), probability) of the words model's last reading: a pause
        is judged again about new audio with the same words."""

    async def warm_up(self) -> None:
        # Turn detection is part of hearing the caller: a judge that cannot start is reported
        # with the speech-input code.
        await self._warm(
            ErrorCode.STT_UNAVAILABLE,
            lambda: threads.run(self._engine.load),
            lambda: threads.run(lambda: self._engine.probability(_murmur(1.5))),
            lambda: threads.run(self._warm_words),
        )

    def _warm_words(self) -> None:
        """Load the words model; one that cannot load leaves the judge to the audio and the
        lexicon (a turn is still judged), and says so."""
        if self._words is None:
            return
        try:
            self._words.load()
            self._words.end_probability("I would like to check my order")
        except Exception as exc:
            log.error("turn.words_model_unavailable", error=f"{type(exc).__name__}: {exc}")
            self._words = None

    async def judge(
        self,
        pcm16: bytes,
        *,
        sample_rate: int,
        transcript: str = "",
        locale: str = "en-US",
        utterance_id: str = "",
        confidence: float | None = None,
        agent_said: str = "",
    ) -> TurnVerdict:
        probability, model_ms = await self._probability(pcm16, sample_rate, utterance_id)
        words_probability, words_ms = await self._words_probability(
            transcript, locale, agent_said
        )
        return reading(
            probability,
            transcript,
            locale=locale,
            confidence=confidence,
            words_probability=words_probability,
            model_ms=model_ms + words_ms,
        )

    async def prepare(self, *, agent_said: str, locale: str = "en-US") -> None:
        """Evaluate the agent's line for the words model while the caller speaks; skipped when
        the judge is busy (the first judgement then evaluates it)."""
        words = self._words
        if words is None or not locale.lower().startswith("en"):
            return
        try:
            async with self._admission.slot(wait=False):
                await threads.run(lambda: words.prepare(agent_said))
        except CapacityError:
            return

    async def _words_probability(
        self, transcript: str, locale: str, agent_said: str
    ) -> tuple[float | None, float]:
        words = self._words
        if words is None or not transcript.strip() or not locale.lower().startswith("en"):
            return None, 0.0
        key = (transcript, agent_said)
        last = self._last_words
        if last is not None and last[0] == key:
            return last[1], 0.0
        async with self._admission.slot(self._queue.deadline_s):
            started = time.perf_counter()
            probability = await threads.run(lambda: words.end_probability(transcript, agent_said))
            words_ms = (time.perf_counter() - started) * 1000.0
        self._last_words = (key, probability)
        return probability, words_ms

    async def _probability(
        self, pcm16: bytes, sample_rate: int, utterance_id: str
    ) -> tuple[float, float]:
        last = self._last
        if utterance_id and last is not None and last[:2] == (utterance_id, len(pcm16)):
            return last[2], 0.0  # the same audio of the same utterance: the same answer
        keep = mel.WINDOW_S * sample_rate * 2  # only the last 8 s are heard
        audio = resample(pcm16_to_float(pcm16[-keep:]), sample_rate, mel.SAMPLE_RATE)
        async with self._admission.slot(self._queue.deadline_s):
            started = time.perf_counter()
            probability = await threads.run(lambda: self._engine.probability(audio))
            model_ms = (time.perf_counter() - started) * 1000.0
        if utterance_id:
            self._last = (utterance_id, len(pcm16), probability)
        return probability, model_ms


class SmartTurnEngine:
    """Smart Turn v3.x (ONNX): the probability that the last 8 s end a turn."""

    def __init__(self, model_path: str, *, threads: int = 1) -> None:
        self.name = "turn.smart_turn"
        self.model_path = model_path
        self._threads = threads
        self._session: Any = None

    def load(self) -> None:
        self._session = threads.load_once(
            ("smart-turn", self.model_path, self._threads), self._create
        )

    def _create(self) -> Any:
        import onnxruntime

        log.info("turn.model_loading", model=self.model_path)
        options = onnxruntime.SessionOptions()
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = self._threads
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # The pool's threads spin between the model's ~200 operators while a judgement runs
        # (woken from sleep for each, a judgement after a quiet moment took ~44 ms, not ~32),
        # and stop the moment it returns: left spinning, they took the recogniser's cores
        # (Whisper right after a judgement: ~167 ms, not ~134).
        options.add_session_config_entry("session.intra_op.allow_spinning", "1")
        options.add_session_config_entry("session.force_spinning_stop", "1")
        options.log_severity_level = 4
        return onnxruntime.InferenceSession(
            self.model_path, providers=["CPUExecutionProvider"], sess_options=options
        )

    def probability(self, audio: Float32) -> float:
        if self._session is None:
            self.load()
        (scores,) = self._session.run(None, {"input_features": mel.turn_features(audio)})
        return float(np.clip(np.asarray(scores).reshape(-1)[0], 0.0, 1.0))


def turn_model_path(environ: Mapping[str, str] = os.environ) -> str:
    """``VOCERO_TURN_MODEL``, else the Smart Turn CPU model shipped in ``pipecat-ai``."""
    configured = environ.get("VOCERO_TURN_MODEL", "")
    if configured:
        if not Path(configured).exists():
            raise ModelNotFoundError(f"VOCERO_TURN_MODEL={configured}: no such file")
        return configured
    spec = importlib.util.find_spec("pipecat")  # finds the package without importing it
    if spec is None or spec.origin is None:
        raise ModelNotFoundError("pip install --no-deps pipecat-ai, or set VOCERO_TURN_MODEL")
    data = Path(spec.origin).parent / "audio" / "turn" / "smart_turn" / "data"
    found = sorted(data.glob(_MODEL_GLOB))
    if not found:
        raise ModelNotFoundError(f"no Smart Turn CPU model under {data}; set VOCERO_TURN_MODEL")
    return str(found[-1])


def _murmur(seconds: float) -> Float32:
    """Quiet noise, amplitude-modulated like syllables, then silence: a pause to judge."""
    t = np.arange(int(mel.SAMPLE_RATE * seconds), dtype=np.float32) / mel.SAMPLE_RATE
    noise = np.random.default_rng(0).normal(0.0, 0.05, t.size).astype(np.float32)
    speech = noise * (0.5 + 0.5 * np.sin(2 * np.pi * 4.0 * t)).astype(np.float32)
    return np.concatenate([speech, np.zeros(mel.SAMPLE_RATE // 5, dtype=np.float32)])
