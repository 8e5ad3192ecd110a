"""A complete set of runners the orchestrator drives: one per port."""

from __future__ import annotations

from dataclasses import dataclass

import anyio

from vocero.contracts.ports import Llm, Runner, RunnerStatus, Stt, Tts, TurnJudge, Vad


@dataclass(frozen=True, slots=True)
class RunnerSet:
    kind: str
    vad: Vad
    stt: Stt
    llm: Llm
    tts: Tts
    turn: TurnJudge | None = None
    """The end-of-turn judge; ``None``: turns end after a fixed silence (the VAD's hangover)."""

    async def warm_up(self) -> None:
        """Warm every runner concurrently; readiness waits for all of them."""
        async with anyio.create_task_group() as tg:
            for runner in self._runners().values():
                tg.start_soon(runner.warm_up)

    def statuses(self) -> dict[str, RunnerStatus]:
        return {name: runner.status() for name, runner in self._runners().items()}

    def _runners(self) -> dict[str, Runner]:
        runners: dict[str, Runner] = {"stt": self.stt, "llm": self.llm, "tts": self.tts}
        if self.turn is not None:
            runners["turn"] = self.turn
        return runners

    def remote_stages(self) -> list[str]:
        """The stages served by an endpoint (their runners' names end ``.remote``)."""
        return [stage for stage, r in self._runners().items() if r.name.endswith(".remote")]

    def ready(self) -> bool:
        return all(s.health in ("ready", "degraded") for s in self.statuses().values())
