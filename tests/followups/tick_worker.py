"""A real process for the follow-up crash tests: ``tick`` runs one pass of the queue on the
database and (test-only hooks) SIGKILLs itself right after one durable step commits - a step of
the queue (``attempt_recorded``, ``submitted``) or of the outbox worker (``authorized``,
``dispatch_pending``, ``in_flight``, ``sent``, ``committed``); ``crash_at: ""`` lets it finish.
It prints one JSON line: where it died, or the pass's outcomes and the follow-up as stored.

Run as ``python tests/followups/tick_worker.py '<json config>'`` with the repository and this
folder on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from datetime import datetime
from typing import Any

import anyio
import msgspec
from followup_support import People, plant, queue_profile

from vocero.app.adapters.followups import OffsetClock
from vocero.contracts.domain import Caller


def killer(step: str) -> Any:
    def hook(name: str, subject: str) -> None:
        if name == step:
            print(json.dumps({"killed_at": name, "subject": subject}), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


class _Server:
    def __init__(self, url: str) -> None:
        self.url = url


async def tick(config: dict[str, Any]) -> dict[str, Any]:
    who = Caller(**config["caller"])
    start = datetime.fromisoformat(config["now"])
    hook = killer(config["crash_at"])
    async with plant(config["db"], _Server(config["url"]),  # type: ignore[arg-type]
                     profile=queue_profile(config["url"]), people=People(who),
                     clock=OffsetClock(start.timestamp()), hook=hook, step_hook=hook,
                     node=True) as p:
        outcomes = await p.tick()
        stored = await p.get(config["followup_id"])
        operations = await p.plane.repo.operations(stored.session_id)
    return {"outcomes": [msgspec.to_builtins(o) for o in outcomes],
            "followup": msgspec.to_builtins(stored),
            "operations": [op.public() for op in operations]}


def main() -> None:
    config = json.loads(sys.argv[1])
    print(json.dumps(anyio.run(tick, config), default=str), flush=True)


if __name__ == "__main__":
    main()
