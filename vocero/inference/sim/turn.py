"""A scripted end-of-turn judge: deterministic verdicts for tests and the simulator set.

The script is one list of probabilities per utterance, in the order the utterances are first
judged (a new ``utterance_id`` starts the next list); within an utterance the n-th judgement
gets the n-th probability and the last one repeats. Utterances past the script get ``default``
(1.0: every pause ends the turn, as a fixed silence rule would once the policy asks).

With ``quiet_ms``, an unscripted utterance is judged by its silence instead: finished (1.0) once
the audio heard ends in at least that much quiet (20 ms frames below ``quiet_rms``), going on
(0.0) before. The simulator set uses it so that its turns end about where its VAD's hangover
ended them (a gap inside a phrase is not the end of a turn).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import anyio
import numpy as np

from vocero.contracts.ports import RunnerStatus, TurnVerdict


@dataclass(frozen=True, slots=True)
class JudgeCall:
    """What one judgement was asked about (tests assert on it)."""

    utterance_id: str
    audio_ms: float
    transcript: str
    agent_said: str = ""


class SimTurnJudge:
    name = "sim-turn"

    def __init__(
        self,
        script: Sequence[Sequence[float]] = (),
        *,
        default: float = 1.0,
        quiet_ms: int = 0,
        quiet_rms: float = 0.02,
    ) -> None:
        self._script = [list(probabilities) for probabilities in script]
        self._default = default
        self._quiet_ms = quiet_ms
        self._quiet_rms = quiet_rms
        self._utterance = -1
        self._utterance_id: str | None = None
        self._asked = 0
        self.calls: list[JudgeCall] = []
        self.prepared: list[str] = []
        """What the agent had said when each utterance began (:meth:`prepare`)."""

    async def warm_up(self) -> None:
        return None

    def status(self) -> RunnerStatus:
        return RunnerStatus(health="ready", capacity=1_000_000)

    async def prepare(self, *, agent_said: str, locale: str = "en-US") -> None:
        self.prepared.append(agent_said)

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
        await anyio.lowlevel.checkpoint()
        if utterance_id != self._utterance_id:
            self._utterance_id, self._utterance, self._asked = utterance_id, self._utterance + 1, 0
        audio_ms = len(pcm16) / 2 * 1000 / sample_rate
        self.calls.append(JudgeCall(utterance_id, audio_ms, transcript, agent_said))
        probability = self._next(pcm16, sample_rate)
        return TurnVerdict(probability=probability, heard_words=bool(transcript.strip()))

    def _next(self, pcm16: bytes, sample_rate: int) -> float:
        scripted = self._script[self._utterance] if self._utterance < len(self._script) else []
        index = min(self._asked, len(scripted) - 1)
        self._asked += 1
        if scripted:
            return scripted[index]
        if self._quiet_ms > 0:
            return 1.0 if self._trailing_quiet_ms(pcm16, sample_rate) >= self._quiet_ms else 0.0
        return self._default

    def _trailing_quiet_ms(self, pcm16: bytes, sample_rate: int) -> float:
        frame = sample_rate // 50  # 20 ms
        samples = np.frombuffer(pcm16, "<i2", len(pcm16) // 2).astype(np.float64) / 32768.0
        frames = samples[: samples.size // frame * frame].reshape(-1, frame)
        loud = np.flatnonzero(np.sqrt(np.mean(frames**2, axis=1)) >= self._quiet_rms)
        quiet_frames = frames.shape[0] - (int(loud[-1]) + 1 if loud.size else 0)
        return quiet_frames * 20.0
