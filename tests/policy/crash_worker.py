"""A real Vocero process for the crash tests: ``act`` runs a confirmed reschedule through the
outbox and (test-only hook) SIGKILLs itself right after one durable step commits; ``recover``
starts the worker on the same database, lets crash recovery finish and reports the operations.

Run as ``python tests/policy/crash_worker.py '<json config>'`` with the repository on
``PYTHONPATH``. The config names the database, the fixture servers' URLs, the caller's subject,
the session id and, for ``act``, the step to die at.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

import anyio
import msgspec
from policy_support import (
    ALL_SCOPES,
    DEMO_PROFILE,
    SCRIPTS,
    Talk,
    connected,
    open_session_row,
)
from sqlalchemy import select

from vocero.contracts.domain import AgentProfile, Caller, McpServerSpec
from vocero.identity.profiles import load_profile
from vocero.mcp_gateway import McpGateway
from vocero.policy import ActionPlane, ExecutorSettings
from vocero.policy.operations import settled
from vocero.policy.ports import StepHook
from vocero.store import Store
from vocero.store.leases import NodeLease
from vocero.store.models import ProposalRow


def profile_of(urls: dict[str, str]) -> AgentProfile:
    profile = load_profile(DEMO_PROFILE)
    servers = {name: McpServerSpec(url=urls[name]) for name in SCRIPTS}
    return msgspec.structs.replace(profile, mcp_servers=servers)


def kill_at(step: str) -> StepHook:
    """Test-only: die without any cleanup the moment ``step`` is durable."""

    def hook(name: str, operation_id: str) -> None:
        if name == step:
            print(json.dumps({"killed_at": name, "operation_id": operation_id}), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


async def act(config: dict[str, Any]) -> dict[str, Any]:
    profile = profile_of(config["urls"])
    store = Store.open(config["db"])
    who = Caller(token="crash", subject=config["subject"], tenant="acme", roles=["customer"],
                 scopes=ALL_SCOPES, timezone="Europe/Madrid")
    node = NodeLease(store, role="test")  # killed, its holds are taken over at once
    await node.register()
    async with connected(profile) as connections, anyio.create_task_group() as tg:
        plane = ActionPlane(store, hook=kill_at(config["crash_at"]), owner=node.id,
                            executor_settings=ExecutorSettings(poll_interval_s=30))
        await tg.start(plane.run)
        session_id = config["session_id"]
        await open_session_row(store, session_id, who, profile)
        talk = Talk(plane.coordinator(session_id=session_id, caller=who, profile=profile,
                                      gateway=McpGateway(connections, profile)))
        listing, _ = await talk.propose("appointments.list")
        await talk.execute(listing)
        # asked but never answered: must never take effect
        unanswered, _ = await talk.propose("appointments.reschedule", appointment_id="APT-1002",
                                           new_date="monday", new_time="09:00")
        assert unanswered.kind == "confirm"
        _, generation = await talk.propose("appointments.reschedule",
                                               appointment_id="APT-1001", new_date="friday",
                                               new_time="16:00")
        await talk.heard(generation)
        verdict = await talk.answer("confirm")
        assert verdict.binds
        assert verdict.plan is not None
        outcome = await talk.execute(verdict.plan)
        tg.cancel_scope.cancel()
    await store.close()
    return {"finished": outcome.status}


async def recover(config: dict[str, Any]) -> dict[str, Any]:
    profile = profile_of(config["urls"])
    store = Store.open(config["db"])
    node = NodeLease(store, role="test")
    await node.register()  # finds the killed process's node gone: what it held is free now
    async with connected(profile) as connections, anyio.create_task_group() as tg:
        plane = ActionPlane(store, profiles=lambda _id, _version: profile, owner=node.id,
                            gateway_for=lambda p: McpGateway(connections, p),
                            executor_settings=ExecutorSettings(poll_interval_s=0.1,
                                                               reconcile_delay_s=0.05))
        pending = [op for op in await plane.repo.operations(config["session_id"])
                   if not settled(op)]
        done = {op.id: anyio.Event() for op in pending}
        for op in pending:  # before the worker starts: no settlement can be missed
            plane.executor.subscribe(
                op.id, lambda seen: done[seen.id].set() if settled(seen) else None)
        await tg.start(plane.run)
        with anyio.fail_after(30):
            for event in done.values():
                await event.wait()
        ops = await plane.repo.operations(config["session_id"])
        async with store.read() as session:
            proposals = (await session.scalars(select(ProposalRow))).all()
            proposal_states = {p.id: p.status for p in proposals}
        tg.cancel_scope.cancel()
    await store.close()
    return {"operations": [op.public() | {"arguments": op.arguments} for op in ops],
            "proposals": proposal_states}


def main() -> None:
    config = json.loads(sys.argv[1])
    run = act if config["mode"] == "act" else recover
    result = anyio.run(run, config)
    print(json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    main()
