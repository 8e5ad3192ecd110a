"""Where an operation goes: the gateway (or built-in tools) that can carry it out.

The outbox worker (:mod:`vocero.policy.executor`) sends an operation to its live session's
gateway, or after a restart to a gateway the application builds for the session's profile
(``docs/adr/0006-durable-state-and-leases.md``). The resolved tool must still be the one that was
authorized, or nothing is sent.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from vocero.contracts.domain import AgentProfile
from vocero.contracts.ports import InputHandler, ToolGateway
from vocero.policy.gate import ResolvedTool, resolve
from vocero.policy.ports import BuiltinTools
from vocero.policy.records import OperationRecord
from vocero.policy.repository import ActionRepository

MAX_RECOVERED = 256
"""Ended sessions whose profile and gateway are kept for their operations (the most recently
used): an executor that recovers a session again after it was let go rebuilds them."""

ProfileLookup = Callable[[str, str], AgentProfile | None]
GatewayFactory = Callable[[AgentProfile], ToolGateway | None]


@dataclass(frozen=True, slots=True)
class Target:
    tool: ResolvedTool
    gateway: ToolGateway | None
    builtins: BuiltinTools | None

    @property
    def reachable(self) -> bool:
        if self.tool.builtin:
            return self.builtins is not None and self.builtins.handles(self.tool.tool)
        return self.gateway is not None


class Targets:
    """Where an operation goes: its live session's gateway, or after a restart a gateway the
    application builds for the session's profile. The resolved tool must still be the one that
    was authorized, or nothing is sent."""

    def __init__(
        self,
        repo: ActionRepository,
        *,
        builtins: BuiltinTools | None,
        profiles: ProfileLookup | None = None,
        gateway_for: GatewayFactory | None = None,
    ) -> None:
        self._repo = repo
        self._builtins = builtins
        self._profiles = profiles
        self._gateway_for = gateway_for
        self._live: dict[str, tuple[AgentProfile, ToolGateway | None]] = {}
        self._askers: dict[str, InputHandler] = {}
        self._recovered: OrderedDict[str, tuple[AgentProfile, ToolGateway | None]] = OrderedDict()

    def attach(self, session_id: str, profile: AgentProfile, gateway: ToolGateway | None) -> None:
        self._live[session_id] = (profile, gateway)

    def detach(self, session_id: str) -> None:
        self._live.pop(session_id, None)
        self._askers.pop(session_id, None)

    def set_asker(self, session_id: str, ask: InputHandler | None) -> None:
        """Who answers a server's questions during this session's calls (the live session);
        none: every question is declined (``input_unavailable``)."""
        if ask is None:
            self._askers.pop(session_id, None)
        else:
            self._askers[session_id] = ask

    def asker(self, session_id: str) -> InputHandler | None:
        return self._askers.get(session_id)

    async def resolve(self, op: OperationRecord) -> Target | None:
        found = self._live.get(op.session_id) or await self._recover(op.session_id)
        if found is None:
            return None
        profile, gateway = found
        tool = resolve(profile, op.tool)
        if tool is None or (tool.server, tool.tool) != (op.server, op.resolved_tool):
            return None
        return Target(tool=tool, gateway=gateway, builtins=self._builtins)

    async def _recover(self, session_id: str) -> tuple[AgentProfile, ToolGateway | None] | None:
        if session_id in self._recovered:
            self._recovered.move_to_end(session_id)
            return self._recovered[session_id]
        if self._profiles is None:
            return None
        ref = await self._repo.session_profile(session_id)
        profile = None if ref is None else self._profiles(*ref)
        if profile is None:
            return None
        gateway = self._gateway_for(profile) if self._gateway_for is not None else None
        self._recovered[session_id] = (profile, gateway)
        while len(self._recovered) > MAX_RECOVERED:  # a long-running node recovers without end
            self._recovered.popitem(last=False)
        return profile, gateway
