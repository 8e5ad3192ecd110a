"""Targets of operations whose session ended are kept for the most recent sessions only.

The executor resolves an operation of a session that is no longer live (ended, or from before
a restart) by building a gateway for the session's profile; a long-running node does this for
every session whose write outlived it. The soak found the cache of those unbounded (a gateway
kept per recovered session, forever): it now keeps the most recently used ``MAX_RECOVERED``,
and one let go is rebuilt when needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pytest

from tests.support.harness import profile
from vocero.contracts.domain import AgentProfile, ToolSpec
from vocero.contracts.ports import ToolGateway
from vocero.policy.records import OperationRecord
from vocero.policy.repository import ActionRepository
from vocero.policy.targets import MAX_RECOVERED, Targets

pytestmark = pytest.mark.anyio

SPEC = ToolSpec(name="rooms.hold", server="rooms", resolves_to="hold_room",
                action_class="reversible_write", requires_confirmation=True)


class SessionProfiles:
    async def session_profile(self, session_id: str) -> tuple[str, str] | None:
        return ("p", "1")


@dataclass
class Op:
    session_id: str
    tool: str = "rooms.hold"
    server: str = "rooms"
    resolved_tool: str = "hold_room"


async def test_recovered_sessions_are_kept_for_the_most_recent_only() -> None:
    prof: AgentProfile = profile(tools=[SPEC])
    built: list[str] = []

    def gateway_for(p: AgentProfile) -> ToolGateway | None:
        built.append(p.id)
        return cast(ToolGateway, object())

    targets = Targets(cast(ActionRepository, SessionProfiles()), builtins=None,
                      profiles=lambda _i, _v: prof, gateway_for=gateway_for)

    async def resolve(session_id: str) -> Any:
        return await targets.resolve(cast(OperationRecord, Op(session_id)))

    first = await resolve("ses_0")
    assert first is not None and first.tool.tool == "hold_room"
    assert await resolve("ses_0") is not None and len(built) == 1  # kept: not rebuilt
    for n in range(1, MAX_RECOVERED + 1):
        assert await resolve(f"ses_{n}") is not None
    assert len(built) == MAX_RECOVERED + 1
    assert await resolve(f"ses_{MAX_RECOVERED}") is not None
    assert len(built) == MAX_RECOVERED + 1, "the most recent is still kept"
    assert await resolve("ses_0") is not None
    assert len(built) == MAX_RECOVERED + 2, "the oldest was let go, and is rebuilt when needed"
