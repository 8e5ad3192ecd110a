"""A real process for the follow-up crash tests: ``tick`` runs one pass of the queue on the
database and (test-only hooks) SIGKILLs itself right after one durable step commits - a step of
the queue (``attempt_recorded``, ``submitted``) or of the outbox worker (``authorized``,
``dispatch_pending``, ``in_flight``, ``sent``, ``committed``); ``crash_at: ""`` lets it finish.
It prints one JSON line: where it died, or the pass's outcomes and the follow-up as stored.
With ``twilio`` in the config (``api``, ``account``, ``token``, ``public``, ``from``) the profile's
call tool is the built-in ``carrier.call`` at that (fake) Twilio REST API.

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

from vocero.app.adapters.callbacks import carrier_call_tools
from vocero.app.adapters.followups import OffsetClock
from vocero.app.settings import Settings
from vocero.contracts.domain import AgentProfile, Caller, ToolSpec


def killer(step: str) -> Any:
    def hook(name: str, subject: str) -> None:
        if name == step:
            print(json.dumps({"killed_at": name, "subject": subject}), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


class _Server:
    def __init__(self, url: str) -> None:
        self.url = url


def carrier(config: dict[str, Any]) -> tuple[AgentProfile, Any]:
    """The profile ringing through the built-in ``carrier.call``, and its tool."""
    twilio = config["twilio"]
    base = queue_profile(config["url"])
    profile = msgspec.structs.replace(
        base, tools=[*base.tools, ToolSpec(name="callbacks.ring", server="vocero",
                                           resolves_to="carrier.call",
                                           action_class="reversible_write")],
        followups=msgspec.structs.replace(base.followups, call_tool="callbacks.ring",
                                          from_number=twilio["from"]))
    settings = Settings(twilio_auth_token=twilio["token"], twilio_account_sid=twilio["account"],
                        public_url=twilio["public"], twilio_api_base=twilio["api"])
    return profile, lambda services: [carrier_call_tools(
        settings, services.store, profiles=lambda _i, _v: profile, audit=_NoAudit())]


class _NoAudit:
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        return None


async def tick(config: dict[str, Any]) -> dict[str, Any]:
    who = Caller(**config["caller"])
    start = datetime.fromisoformat(config["now"])
    hook = killer(config["crash_at"])
    profile, builtins = carrier(config) if config.get("twilio") else (
        queue_profile(config["url"]), lambda _s: ())
    async with plant(config["db"], _Server(config["url"]),  # type: ignore[arg-type]
                     profile=profile, people=People(who), builtins=builtins,
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
