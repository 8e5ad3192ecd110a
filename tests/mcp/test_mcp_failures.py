"""Failure behaviour against real fixture servers, over both transports: timeouts, cancellation,
bulkheads, a tool that changes mid-session, a server that crashes."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest
from gateway_support import (
    Transport,
    gateway_stack,
    records,
    request,
    tool_specs,
    wait_for,
)

from vocero.contracts.errors import (
    ErrorCode,
    ToolChangedError,
    ToolNotAllowedError,
    ToolTimeoutError,
    ToolUnavailableError,
)
from vocero.mcp_gateway import GatewaySettings, McpGateway, ToolBusyError, public_error

pytestmark = pytest.mark.anyio

TRANSPORTS = pytest.mark.parametrize("transport", ["stdio", "http"])


def orders_only(env: dict[str, str]) -> dict[str, tuple[str, dict[str, str]]]:
    return {"orders": ("orders_server.py", env)}


@TRANSPORTS
async def test_timeout_cancellation_and_bulkhead(transport: Transport, tmp_path: Path) -> None:
    record = tmp_path / "orders.jsonl"
    env = {"VOCERO_MCP_RECORD": str(record), "VOCERO_MCP_DELAY_MS": "get_order_status=1500"}
    tools = tool_specs(orders_status={"timeout_ms": 300, "idempotent": False})
    settings = GatewaySettings(tool_concurrency=1, breaker_failure_threshold=10)

    async with gateway_stack(transport, orders_only(env), tools=tools, settings=settings) as stack:
        # a timeout after dispatch is reported as possibly executed, never as "did not happen"
        with pytest.raises(ToolTimeoutError) as timed_out:
            await stack.gateway.call(request("orders.status", {"order_id": "A123"}))
        assert timed_out.value.possibly_executed is True
        assert public_error(timed_out.value)["code"] == "MCP_TOOL_TIMEOUT"
        await wait_for(lambda: len(records(record)) == 1)

        # the bulkhead refuses a second concurrent call at once, before sending anything
        first_sent = anyio.Event()

        async def slow() -> None:
            with pytest.raises(ToolTimeoutError):
                await stack.gateway.call(
                    request("orders.status", {"order_id": "A124"}), on_dispatched=first_sent.set
                )

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await first_sent.wait()
            with pytest.raises(ToolBusyError) as busy:
                await stack.gateway.call(request("orders.status", {"order_id": "B777"}))
            assert busy.value.code == ErrorCode.CAPACITY_EXHAUSTED
            assert busy.value.possibly_executed is False
        await wait_for(lambda: len(records(record)) == 2)
        assert [r["arguments"]["order_id"] for r in records(record)] == ["A123", "A124"]

        # a caller's cancellation after dispatch is audited as possibly executed
        dispatched = anyio.Event()
        with anyio.move_on_after(5):
            async with anyio.create_task_group() as tg:

                async def cancelled() -> None:
                    await stack.gateway.call(
                        request("orders.status", {"order_id": "A123"}, operation_id="op_cancel"),
                        on_dispatched=dispatched.set,
                    )

                tg.start_soon(cancelled)
                await dispatched.wait()
                tg.cancel_scope.cancel()
        aborted = [e for e in stack.audit.of("mcp.tool_call") if e["operation_id"] == "op_cancel"]
        assert aborted == [aborted[0]]
        assert aborted[0]["outcome"] == "aborted"
        assert aborted[0]["possibly_executed"] is True


@TRANSPORTS
async def test_a_tool_that_changes_mid_session_is_disabled(
    transport: Transport, tmp_path: Path
) -> None:
    record = tmp_path / "orders.jsonl"
    env = {
        "VOCERO_MCP_RECORD": str(record),
        "VOCERO_MCP_MUTATE": "get_order_status",
        "VOCERO_MCP_MUTATE_AFTER": "2",
    }
    async with gateway_stack(transport, orders_only(env)) as stack:
        conn = stack.connections.connection("orders")
        assert conn is not None
        pinned = conn.pins.get("get_order_status")
        assert pinned is not None
        listed = conn.listed
        for order in ("A123", "A124"):
            await stack.gateway.call(request("orders.status", {"order_id": order}))

        with anyio.fail_after(10):  # the change is announced; the tools are listed again
            await conn.wait_listed(listed + 1)
        assert conn.pins.get("get_order_status").status == "changed"  # type: ignore[union-attr]

        assert "orders.status" not in {d.name for d in stack.gateway.definitions()}
        with pytest.raises(ToolChangedError) as changed:
            await stack.gateway.call(request("orders.status", {"order_id": "B777"}))
        assert public_error(changed.value)["code"] == "MCP_TOOL_CHANGED"
        assert public_error(changed.value)["user_message_key"] == "tool.disabled_pending_review"
        assert len(records(record)) == 2
        (event,) = stack.audit.of("mcp.tool_changed")
        assert event["definition_hash"] == pinned.definition_hash
        observed = event["observed_hash"]
        assert observed != pinned.definition_hash

        # an operator reviews the new definition and re-approves it by its hash
        await stack.connections.approve_tool(
            "orders", "get_order_status", observed, approved_by="op_security"
        )
        result = await stack.gateway.call(request("orders.status", {"order_id": "B777"}))
        assert result.content["status"] == "delivered"
        assert stack.audit.of("mcp.tool_approved")[0]["approved_by"] == "op_security"
        (definition,) = stack.gateway.definitions()
        assert definition.input_schema["properties"]["note"] == {"type": "string"}


async def _call_orders(gateway: McpGateway) -> ToolUnavailableError | None:
    try:
        await gateway.call(request("orders.status", {"order_id": "A123"}))
    except ToolUnavailableError as exc:
        return exc
    return None


async def _failures_until_breaker_opens(gateway: McpGateway) -> list[ToolUnavailableError]:
    failures: list[ToolUnavailableError] = []
    with anyio.fail_after(15):
        while not failures or str(failures[-1]) != "circuit_open":
            if (failure := await _call_orders(gateway)) is not None:
                failures.append(failure)
    return failures


@TRANSPORTS
async def test_server_crash_opens_the_breaker_and_recovers(
    transport: Transport, tmp_path: Path
) -> None:
    record = tmp_path / "orders.jsonl"
    pidfile = tmp_path / "orders.pid"
    refuse = tmp_path / "refuse-start"
    env = {
        "VOCERO_MCP_RECORD": str(record),
        "VOCERO_MCP_PIDFILE": str(pidfile),
        "VOCERO_MCP_FAIL_START": str(refuse),
    }
    settings = GatewaySettings(
        breaker_failure_threshold=2,
        breaker_reset_s=0.3,
        reconnect_initial_s=0.1,
        reconnect_max_s=0.3,
        read_retries=0,
    )
    async with gateway_stack(transport, orders_only(env), settings=settings) as stack:
        conn = stack.connections.connection("orders")
        assert conn is not None
        await stack.gateway.call(request("orders.status", {"order_id": "A123"}))

        refuse.touch()  # a stdio server the gateway respawns now fails to start
        if transport == "http":
            stack.http["orders"].stop()
        else:
            os.kill(int(pidfile.read_text()), signal.SIGKILL)

        failures = await _failures_until_breaker_opens(stack.gateway)
        assert {public_error(f)["code"] for f in failures} == {"MCP_UNAVAILABLE"}
        assert all(public_error(f)["retryable"] for f in failures)
        assert {"connection_lost", "not_connected"} & {str(f) for f in failures[:-1]}
        assert conn.breaker.state in {"open", "half_open"}
        assert {"server": "orders", "from": "closed", "to": "open"} in stack.audit.of(
            "mcp.breaker_changed"
        )

        listed = conn.listed
        refuse.unlink()
        if transport == "http":
            stack.http["orders"].start()
            await anyio.to_thread.run_sync(stack.http["orders"].wait_ready)

        with anyio.fail_after(20):  # reconnected: a new listing of the server's tools
            await conn.wait_listed(listed + 1)
        assert await _call_orders(stack.gateway) is None  # the reconnection let the probe pass
        assert conn.breaker.state == "closed"
        assert len(stack.audit.of("mcp.server_connected")) == 2


@TRANSPORTS
async def test_a_prohibited_tool_is_described_by_its_servers_line_never_offered(
    transport: Transport, tmp_path: Path
) -> None:
    """Issue 42: a prohibited tool the profile names without a description ("billing.comp"
    in Larkspur) was material only by its name in words ("Cancel appointment."); the server's
    own line says what callers ask for. It is still never offered, and a call is refused."""
    record = tmp_path / "appointments.jsonl"
    env = {"VOCERO_MCP_RECORD": str(record)}
    tools = tool_specs(
        appointments_cancel={"action_class": "prohibited", "requires_confirmation": False}
    )
    servers = {"appointments": ("appointments_server.py", env)}
    async with gateway_stack(transport, servers, tools=tools) as stack:
        refused = {t.name: t for t in stack.gateway.refused()}
        assert refused["appointments.cancel"].description == (
            "Cancel an appointment. This cannot be undone."
        )
        assert refused["appointments.cancel"].input_schema == {}
        # a server never connected (only prohibited tools): the name in words, as before
        assert refused["account.close"].description == "Delete account."
        assert "appointments.cancel" not in {d.name for d in stack.gateway.definitions()}
        with pytest.raises(ToolNotAllowedError, match="prohibited"):
            await stack.gateway.call(request("appointments.cancel", {"appointment_id": "A"}))
        assert records(record) == []
