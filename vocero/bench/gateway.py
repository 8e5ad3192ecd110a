"""``vocero bench mcp``: what the gateway adds to a tools/call, per protocol revision
(2025-11-25 and 2026-07-28) and transport (stdio and streamable HTTP).

For each pair the orders fixture server answers ``get_order_status`` twice over: through a bare
SDK client (``mcp.Client`` in that revision, the same ``_meta``) and through the gateway pinned
to that revision (allowlist, pin lookup, listing freshness, argument and result validation, the
question route, sanitizing, audit to an in-memory sink). Calls alternate between the two (and
which goes first) so both see the same machine state. The overhead is measured per call as the
gateway call's total minus the SDK call inside it (timed by the
:class:`~vocero.mcp_gateway.calls.SdkCallObserver` the bench passes to the connections), in wall
time and in this thread's CPU time (which a busy machine's preemption does not inflate), next to
the plain difference of percentiles. Goal: at most 0.5 ms added at p95 on either revision.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from vocero.bench.stats import percentiles
from vocero.contracts.domain import (
    AgentProfile,
    McpProtocol,
    McpServerSpec,
    Principal,
    ProfileMatch,
    ToolSpec,
)
from vocero.contracts.ports import CallMeta, ToolCallRequest
from vocero.mcp_gateway.calls import SdkCallObserver
from vocero.mcp_gateway.connection import McpConnections
from vocero.mcp_gateway.gateway import McpGateway, wire_meta

GOAL_P95_MS = 0.5
PROTOCOLS = ("2025-11-25", "2026-07-28")
DEFAULT_SERVERS = Path(__file__).resolve().parents[2] / "fixtures" / "mcp_servers"
PRINCIPAL = Principal(subject_ref="sub_bench", tenant_id="acme", scopes=["orders:read"])
ARGUMENTS = {"order_id": "A123"}


class _MemoryAudit:
    def __init__(self) -> None:
        self.count = 0

    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        self.count += 1


class _SdkTimes(SdkCallObserver):
    """The SDK tools/calls timed since the last :meth:`take` (the bench calls one at a time)."""

    def __init__(self) -> None:
        self.wall_s = 0.0
        self.cpu_s = 0.0

    def sdk_call(self, wall_s: float, cpu_s: float) -> None:
        self.wall_s += wall_s
        self.cpu_s += cpu_s

    def take(self) -> tuple[float, float]:
        """Wall and CPU seconds timed since the last call, and start again from zero."""
        taken = (self.wall_s, self.cpu_s)
        self.wall_s = self.cpu_s = 0.0
        return taken


async def run_bench(
    *,
    calls: int = 500,
    warmup: int = 50,
    transports: Sequence[str] = ("stdio", "http"),
    protocols: Sequence[str] = PROTOCOLS,
    servers_dir: Path | None = None,
) -> dict[str, Any]:
    """Measure, per revision and transport, bare SDK vs gateway latency and the overhead."""
    script = (servers_dir or DEFAULT_SERVERS) / "orders_server.py"
    report: dict[str, Any] = {
        "benchmark": "mcp",
        "calls": calls,
        "warmup": warmup,
        "goal_p95_overhead_ms": GOAL_P95_MS,
        "protocols": {},
    }
    for protocol in protocols:
        measured: dict[str, Any] = {}
        for transport in transports:
            async with _server(transport, script, protocol) as spec:
                measured[transport] = await _measure(spec, calls=calls, warmup=warmup)
        report["protocols"][protocol] = measured
    figures = [t for measured in report["protocols"].values() for t in measured.values()]
    # CPU time outside the SDK call is what the gateway costs; wall time adds whatever preemption
    # a busy machine inflicts in that window, so both are reported and the goal reads the first.
    report["meets_goal"] = all(t["overhead_cpu_ms"]["p95"] <= GOAL_P95_MS for t in figures)
    report["meets_goal_wall"] = all(t["overhead_ms"]["p95"] <= GOAL_P95_MS for t in figures)
    return report


@dataclass(frozen=True, slots=True)
class _Timing:
    gateway: bool
    wall: float
    own_wall: float = 0.0
    """Gateway only: wall time outside the SDK call."""
    own_cpu: float = 0.0
    """Gateway only: this thread's CPU time outside the SDK call (immune to preemption)."""


async def _measure(spec: McpServerSpec, *, calls: int, warmup: int) -> dict[str, Any]:
    tool = ToolSpec(
        name="orders.status",
        server="orders",
        resolves_to="get_order_status",
        action_class="read",
        idempotent=True,
        timeout_ms=5000,
    )
    profile = AgentProfile(
        id="bench",
        version="1",
        match=ProfileMatch(tenant="acme"),
        mcp_servers={"orders": spec},
        tools=[tool],
    )
    audit = _MemoryAudit()
    sdk_times = _SdkTimes()
    connections = McpConnections.from_profiles([profile], audit=audit, sdk_observer=sdk_times)
    meta = CallMeta(operation_id="op_bench", principal=PRINCIPAL)
    bare_meta = cast(types.RequestParamsMeta, wire_meta(meta))
    request = ToolCallRequest(tool="orders.status", arguments=ARGUMENTS, meta=meta)
    timings: list[_Timing] = []
    async with _bare_client(spec) as client, connections.running():
        gateway = McpGateway(connections, profile, session_id="ses_bench")
        gc.collect()
        for i in range(warmup + calls):
            # alternate which path goes first, so neither always follows the other's wake-ups
            if i % 2:
                bare = await _bare(client, bare_meta)
                ours = await _gateway(gateway, request, sdk_times)
            else:
                ours = await _gateway(gateway, request, sdk_times)
                bare = await _bare(client, bare_meta)
            if i >= warmup:
                timings += (bare, ours)
    gateway_calls = [t for t in timings if t.gateway]
    bare_p = percentiles([t.wall for t in timings if not t.gateway], scale=1000, digits=3)
    gateway_p = percentiles([t.wall for t in gateway_calls], scale=1000, digits=3)
    return {
        "bare_sdk_ms": bare_p,
        "gateway_ms": gateway_p,
        "overhead_ms": percentiles([t.own_wall for t in gateway_calls], scale=1000, digits=3),
        "overhead_cpu_ms": percentiles([t.own_cpu for t in gateway_calls], scale=1000, digits=3),
        "delta_of_percentiles_ms": {
            k: round(gateway_p[k] - bare_p[k], 3) for k in ("p50", "p95", "p99")
        },
        "audit_events": audit.count,
    }


async def _bare(client: Client, meta: types.RequestParamsMeta) -> _Timing:
    started = time.perf_counter()
    await client.call_tool("get_order_status", ARGUMENTS, meta=meta)
    return _Timing(gateway=False, wall=time.perf_counter() - started)


async def _gateway(gateway: McpGateway, request: ToolCallRequest, sdk: _SdkTimes) -> _Timing:
    sdk.take()
    started, started_cpu = time.perf_counter(), time.thread_time()
    await gateway.call(request)
    wall, cpu = time.perf_counter() - started, time.thread_time() - started_cpu
    sdk_wall, sdk_cpu = sdk.take()
    return _Timing(gateway=True, wall=wall, own_wall=wall - sdk_wall, own_cpu=cpu - sdk_cpu)


@asynccontextmanager
async def _bare_client(spec: McpServerSpec) -> AsyncIterator[Client]:
    target: str | StdioServerParameters = spec.url or StdioServerParameters(
        command=spec.command, args=list(spec.args)
    )
    mode = "legacy" if spec.protocol == "2025-11-25" else "auto"
    async with Client(target, mode=mode, cache=None) as client:
        assert client.protocol_version == spec.protocol
        await client.list_tools()
        yield client


@asynccontextmanager
async def _server(transport: str, script: Path, protocol: str) -> AsyncIterator[McpServerSpec]:
    pinned = cast(McpProtocol, protocol)
    if transport == "stdio":
        yield McpServerSpec(command=sys.executable, args=[str(script)], protocol=pinned)
        return
    if transport != "http":
        raise ValueError(f"unknown transport {transport!r}")
    port = await _free_port()
    process = await anyio.open_process(
        [sys.executable, str(script), "--transport", "http", "--port", str(port)],
        env={**os.environ},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await _wait_listening(port)
        yield McpServerSpec(url=f"http://127.0.0.1:{port}/mcp", protocol=pinned)
    finally:
        process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()


async def _free_port() -> int:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
    await listener.aclose()
    return port


async def _wait_listening(port: int, timeout_s: float = 30.0) -> None:
    with anyio.fail_after(timeout_s):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return


def main(argv: Sequence[str] | None = None) -> None:  # pragma: no cover - manual entry point
    import json

    args = list(sys.argv[1:] if argv is None else argv)
    calls = int(args[0]) if args else 500
    print(json.dumps(anyio.run(lambda: run_bench(calls=calls)), indent=2))


if __name__ == "__main__":  # pragma: no cover
    main()
