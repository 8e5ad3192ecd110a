"""A complete set of runners the orchestrator drives: one per port."""

from __future__ import annotations

from dataclasses import dataclass

import anyio

from vocero.contracts.ports import Llm, RunnerStatus, Stt, Tts, Vad


@dataclass(frozen=True, slots=True)
class RunnerSet:
    kind: str
    vad: Vad
    stt: Stt
    llm: Llm
    tts: Tts

    async def warm_up(self) -> None:
        """Warm every runner concurrently; readiness waits for all of them."""
        async with anyio.create_task_group() as tg:
            for runner in (self.stt, self.llm, self.tts):
                tg.start_soon(runner.warm_up)

    def statuses(self) -> dict[str, RunnerStatus]:
        return {"stt": self.stt.status(), "llm": self.llm.status(), "tts": self.tts.status()}

    def ready(self) -> bool:
        return all(s.health in ("ready", "degraded") for s in self.statuses().values())
