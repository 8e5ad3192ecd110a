"""What every runner shell around a blocking engine shares: admission, health and warm-up.

A runner is ``starting`` until its warm-up steps (load the weights, run one job the way real
traffic will) have all succeeded, then ``ready``; a failing step marks it ``unavailable`` with
the reason and raises the port's own error code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from vocero.contracts.errors import ErrorCode, VoceroError
from vocero.contracts.ports import Health, RunnerStatus
from vocero.inference.admission import Admission
from vocero.inference.toolkit.settings import QueueSettings

log = structlog.get_logger(__name__)


class RunnerShell:
    def __init__(self, name: str, queue: QueueSettings) -> None:
        self.name = name
        self._queue = queue
        self._admission = Admission(name, capacity=queue.capacity, max_queue=queue.max_queue)
        self._health: Health = "starting"
        self._detail = ""

    def status(self) -> RunnerStatus:
        return self._admission.status(self._health, self._detail)

    async def _warm(self, code: ErrorCode, *steps: Callable[[], Awaitable[object]]) -> None:
        try:
            for step in steps:
                await step()
        except Exception as exc:
            self._health, self._detail = "unavailable", f"{type(exc).__name__}: {exc}"
            log.error("runner.warm_up_failed", runner=self.name, error=self._detail)
            raise VoceroError(self._detail, code=code) from exc
        self._health, self._detail = "ready", ""
