"""The client the official MCP conformance suite drives: the stable adapter behind the gateway.

``conformance client --command "python -m vocero.mcp_gateway.conformance"`` (npm package
``@modelcontextprotocol/conformance``) starts a scenario server and runs this module with its URL
as the last argument (the scenario name in ``MCP_CONFORMANCE_SCENARIO``). It connects as Vocero
does in production: the tools the server lists become a throwaway profile's allowlist, then every
tool is called through :class:`~vocero.mcp_gateway.gateway.McpGateway` (pinning, validation,
``_meta``, result checks) with arguments built from its pinned input schema. See
``scripts/mcp_conformance.sh``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio

from vocero.contracts.domain import (
    AgentProfile,
    McpServerSpec,
    Principal,
    ProfileMatch,
    ToolSpec,
)
from vocero.contracts.errors import ToolCallError
from vocero.contracts.ports import CallMeta, ToolCallRequest
from vocero.mcp_gateway.adapters import SessionHooks, StableAdapter_2025_11_25
from vocero.mcp_gateway.connection import McpConnections
from vocero.mcp_gateway.gateway import McpGateway
from vocero.mcp_gateway.model import RemoteTool

SERVER = "conformance"
PRINCIPAL = Principal(subject_ref="sub_conformance", tenant_id="conformance", scopes=[])


class _PrintAudit:
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        print(f"audit {kind} {data}", file=sys.stderr)


_FORMATS = {"date": "2026-01-01", "date-time": "2026-01-01T00:00:00Z", "email": "a@example.com"}


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a simple object schema: defaults first, then a value per type."""
    properties = schema.get("properties") or {}
    required = schema.get("required") or list(properties)
    return {name: _sample(properties.get(name) or {}) for name in required}


def _sample(schema: dict[str, Any]) -> Any:
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return sample_arguments(schema)
    if kind in (None, "string"):
        return _FORMATS.get(str(schema.get("format")), "CONFORMANCE1")
    return {"number": 1, "integer": 1, "boolean": True, "array": []}.get(str(kind))


async def _discover(spec: McpServerSpec) -> list[RemoteTool]:
    hooks = SessionHooks(tools_changed=lambda: None, lost=lambda: None)
    async with StableAdapter_2025_11_25().open(
        SERVER, spec, hooks, connect_timeout_s=10
    ) as session:
        return (await session.list_tools()).tools


async def run(url: str, scenario: str = "") -> int:
    spec = McpServerSpec(url=url)
    listed = await _discover(spec)
    tools = [
        ToolSpec(name=f"t.{tool.name}", server=SERVER, resolves_to=tool.name, action_class="read")
        for tool in listed
    ]
    profile = AgentProfile(
        id="conformance",
        version="1",
        match=ProfileMatch(tenant="conformance"),
        mcp_servers={SERVER: spec},
        tools=tools,
    )
    failures = 0
    connections = McpConnections.from_profiles([profile], audit=_PrintAudit())
    async with connections.running():
        gateway = McpGateway(connections, profile, session_id=scenario or "conformance")
        for tool in listed:
            request = ToolCallRequest(
                tool=f"t.{tool.name}",
                arguments=sample_arguments(tool.input_schema),
                meta=CallMeta(operation_id=f"op_{tool.name}", principal=PRINCIPAL),
            )
            try:
                result = await gateway.call(request)
            except ToolCallError as exc:
                failures += 1
                print(f"{tool.name}: {exc.code.value} {exc}", file=sys.stderr)
            else:
                print(f"{tool.name}: is_error={result.is_error} {result.content}")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m vocero.mcp_gateway.conformance SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    return anyio.run(run, args[-1], scenario)


if __name__ == "__main__":
    raise SystemExit(main())
