"""Helpers of the MCP gateway tests: fixture servers over stdio or HTTP, a recording audit sink,
profiles and requests."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import msgspec

from tests.support.servers import ServerProcess, free_port
from vocero.contracts.domain import AgentProfile, McpServerSpec, Principal, ProfileMatch, ToolSpec
from vocero.contracts.ports import CallMeta, ToolCallRequest
from vocero.mcp_gateway import GatewaySettings, McpConnections, McpGateway

Transport = Literal["stdio", "http"]
SERVERS = Path(__file__).resolve().parents[2] / "fixtures" / "mcp_servers"
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

ALICE = Principal(
    subject_ref="sub_alice",
    tenant_id="acme",
    scopes=[
        "orders:read",
        "appointments:read",
        "appointments:write",
        "appointments:cancel",
        "followups:write",
    ],
)
READONLY = Principal(subject_ref="sub_carol", tenant_id="acme", scopes=["orders:read"])
GLOBEX = Principal(
    subject_ref="sub_dave",
    tenant_id="globex",
    scopes=["orders:read", "appointments:read", "appointments:write"],
)


class RecordingAudit:
    """A fake :class:`~vocero.contracts.ports.AuditSink` that keeps every event."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any], str]] = []

    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        self.events.append((kind, dict(data), session_id))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [data for k, data, _ in self.events if k == kind]


def tool_specs(**overrides: Any) -> list[ToolSpec]:
    """The demo profile's tools (fixtures/profiles/demo.yaml), with per-name overrides."""
    specs = [
        ToolSpec(
            name="orders.status",
            server="orders",
            resolves_to="get_order_status",
            action_class="read",
            required_scopes=["orders:read"],
            idempotent=True,
            timeout_ms=3000,
        ),
        ToolSpec(
            name="appointments.list",
            server="appointments",
            resolves_to="list_appointments",
            action_class="read",
            required_scopes=["appointments:read"],
            idempotent=True,
        ),
        ToolSpec(
            name="appointments.reschedule",
            server="appointments",
            resolves_to="reschedule_appointment",
            action_class="reversible_write",
            requires_confirmation=True,
            required_scopes=["appointments:write"],
            lookup_tool="lookup_operation",
        ),
        ToolSpec(
            name="appointments.cancel",
            server="appointments",
            resolves_to="cancel_appointment",
            action_class="irreversible",
            requires_confirmation=True,
            required_scopes=["appointments:cancel"],
            lookup_tool="lookup_operation",
        ),
        ToolSpec(
            name="account.close",
            server="admin",
            resolves_to="delete_account",
            action_class="prohibited",
        ),
        ToolSpec(
            name="followups.record",
            server="vocero",
            resolves_to="followups.record",
            action_class="reversible_write",
            required_scopes=["followups:write"],
        ),
    ]
    return [
        msgspec.structs.replace(s, **overrides[s.name.replace(".", "_")])
        if s.name.replace(".", "_") in overrides
        else s
        for s in specs
    ]


def profile(servers: Mapping[str, McpServerSpec], tools: Sequence[ToolSpec]) -> AgentProfile:
    return AgentProfile(
        id="test",
        version="1",
        match=ProfileMatch(tenant="acme"),
        mcp_servers=dict(servers),
        tools=[t for t in tools if t.server == "vocero" or t.server in servers],
    )


def request(
    tool: str,
    arguments: dict[str, Any] | None = None,
    *,
    operation_id: str = "op_test",
    proposal_id: str = "",
    revision: int = 0,
    principal: Principal = ALICE,
) -> ToolCallRequest:
    meta = CallMeta(
        operation_id=operation_id,
        principal=principal,
        proposal_id=proposal_id,
        revision=revision,
        traceparent=TRACEPARENT,
    )
    return ToolCallRequest(tool=tool, arguments=arguments or {}, meta=meta)


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


ServerDef = tuple[str, dict[str, str]] | tuple[str, dict[str, str], list[str]]
"""``(script, env)`` or ``(script, env, extra command-line arguments)``."""


def _parts(definition: ServerDef) -> tuple[str, dict[str, str], list[str]]:
    script, env, *rest = definition
    return script, env, list(rest[0]) if rest else []


@dataclass
class HttpServer:
    """A fixture server run as its own process on a fixed port (so it can be restarted)."""

    script: str
    env: dict[str, str]
    args: list[str] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    process: ServerProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        command = [sys.executable, str(SERVERS / self.script), "--transport", "http",
                   "--port", str(self.port), *self.args]
        self.process = ServerProcess(self.script, command, port=self.port, env=self.env).spawn()

    def wait_ready(self, timeout_s: float = 20.0) -> None:
        assert self.process is not None
        self.process.wait_ready(timeout_s)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(grace_s=0)
            self.process = None


@contextmanager
def http_servers(servers: Mapping[str, ServerDef]) -> Iterator[dict[str, HttpServer]]:
    running = {name: HttpServer(*_parts(definition)) for name, definition in servers.items()}
    try:
        for server in running.values():
            server.start()
        for server in running.values():
            server.wait_ready()
        yield running
    finally:
        for server in running.values():
            server.stop()


@dataclass
class Stack:
    transport: Transport
    connections: McpConnections
    gateway: McpGateway
    audit: RecordingAudit
    http: dict[str, HttpServer]
    profile: AgentProfile
    folder: Path | None = None


@asynccontextmanager
async def gateway_stack(
    transport: Transport,
    servers: Mapping[str, ServerDef],
    *,
    tools: Sequence[ToolSpec] | None = None,
    settings: GatewaySettings | None = None,
    protocol: str = "2025-11-25",
    protocols: Mapping[str, str] | None = None,
    folder: Path | None = None,
    http: dict[str, HttpServer] | None = None,
    extra_profile_tools: Sequence[ToolSpec] = (),
    **connection_options: Any,
) -> AsyncIterator[Stack]:
    """Fixture servers (``name -> (script, env[, args])``) behind a running gateway.

    ``admin`` (only a prohibited tool) is always declared as a stdio server and never started:
    the gateway must not even connect to it. ``http`` reuses servers already running.
    ``protocols`` sets one server's ``protocol`` (default ``protocol``); ``connection_options``
    go to :class:`McpConnections` (``clock``, ``auth``, ``pins``).
    """
    audit = RecordingAudit()
    chosen_protocol = dict(protocols or {})
    async with AsyncExitStack() as stack:
        if transport == "http":
            http = http if http is not None else stack.enter_context(http_servers(servers))
            specs = {
                name: McpServerSpec(
                    url=server.url,
                    protocol=chosen_protocol.get(name, protocol),  # type: ignore[arg-type]
                    **_spec_extras(connection_options, name),
                )
                for name, server in http.items()
            }
        else:
            specs = {}
            for name, definition in servers.items():
                script, env, args = _parts(definition)
                specs[name] = McpServerSpec(
                    command=sys.executable,
                    args=[str(SERVERS / script), *args],
                    env=env,
                    protocol=chosen_protocol.get(name, protocol),  # type: ignore[arg-type]
                )
        admin_env = {"VOCERO_MCP_RECORD": str(folder / "admin.jsonl")} if folder else {}
        specs["admin"] = McpServerSpec(
            command=sys.executable, args=[str(SERVERS / "admin_server.py")], env=admin_env
        )
        all_tools = [*(tools if tools is not None else tool_specs()), *extra_profile_tools]
        chosen = profile(specs, all_tools)
        connection_options.pop("oauth", None)
        connections = McpConnections.from_profiles(
            [chosen], audit=audit, settings=settings or GatewaySettings(), **connection_options
        )
        await stack.enter_async_context(connections.running())
        gateway = McpGateway(connections, chosen, session_id="ses_test")
        yield Stack(transport, connections, gateway, audit, http or {}, chosen, folder)


def _spec_extras(options: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``oauth={server: McpOAuthSpec}`` puts OAuth on that HTTP server's spec."""
    oauth = (options.get("oauth") or {}).get(name)
    return {"oauth": oauth} if oauth is not None else {}


async def wait_for(predicate: Any, timeout_s: float = 10.0, interval_s: float = 0.05) -> None:
    """Until ``predicate()`` holds, checked every ``interval_s``: only for what another process
    writes (a fixture server's record file), where no event of ours can tell; in-process
    changes are awaited on their events (``McpConnection.wait_listed``, ``on_dispatched``)."""
    with anyio.fail_after(timeout_s):
        while True:
            if predicate():
                return
            await anyio.sleep(interval_s)
