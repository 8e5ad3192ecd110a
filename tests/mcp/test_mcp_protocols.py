"""Both protocol revisions against the bookings fixture server (docs/adr/0007): per-server
negotiation and pinning, stateless routing headers, calls, cancellation, error mapping, a rug
pull, list caching hints, and a broken response stream re-issued with the same operation id."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import pytest
from bookings_support import booking_request, booking_tools, bookings, calls
from gateway_support import Stack, Transport, gateway_stack, http_servers, records, wait_for

from vocero.contracts.clock import VirtualClock
from vocero.contracts.domain import Principal
from vocero.contracts.errors import (
    ErrorCode,
    ToolArgumentsError,
    ToolChangedError,
    ToolNotAllowedError,
    ToolTimeoutError,
    ToolUnavailableError,
)
from vocero.mcp_gateway import GatewaySettings, public_error

pytestmark = pytest.mark.anyio
TRANSPORTS = pytest.mark.parametrize("transport", ["stdio", "http"])
REVISIONS = pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
READER = Principal(subject_ref="sub_r", tenant_id="acme", scopes=["orders:read"])
FAST = GatewaySettings(reconnect_initial_s=0.05, reconnect_max_s=0.2, connect_timeout_s=15)


def _protocol_events(stack: Stack) -> dict[str, str]:
    return {e["server"]: e["protocol"] for e in stack.audit.of("mcp.server_connected")}


@TRANSPORTS
async def test_each_server_gets_the_revision_it_offers(
    transport: Transport, tmp_path: Path
) -> None:
    servers = {
        **bookings(tmp_path, name="modern"),
        **bookings(tmp_path, "--protocols", "legacy", name="legacy"),
    }
    tools = [*booking_tools("modern"), *booking_tools("legacy")]
    async with gateway_stack(
        transport, servers, tools=tools, protocol="auto", settings=FAST
    ) as stack:
        assert _protocol_events(stack) == {"modern": "2026-07-28", "legacy": "2025-11-25"}
        for server in ("modern", "legacy"):
            result = await stack.gateway.call(
                booking_request(f"{server}.slots", {"day": "2026-08-01"})
            )
            assert result.content["slots"] == ["18:00", "19:30", "21:00"]
            seen = calls(tmp_path / f"{server}.jsonl", "find_slots")
            assert seen[-1]["meta"]["io.vocero/principal"]["tenant_id"] == "acme"


@TRANSPORTS
async def test_a_pin_holds_either_revision(transport: Transport, tmp_path: Path) -> None:
    servers = {
        **bookings(tmp_path, name="dual"),
        **bookings(tmp_path, "--protocols", "legacy", name="old"),
    }
    tools = [*booking_tools("dual"), *booking_tools("old")]
    pins = {"dual": "2025-11-25", "old": "2026-07-28"}
    async with gateway_stack(
        transport, servers, tools=tools, protocols=pins, settings=FAST
    ) as stack:
        assert _protocol_events(stack) == {"dual": "2025-11-25"}
        old = stack.connections.connection("old")
        assert old is not None and old.state != "connected"
        refused = stack.audit.of("mcp.server_refused")
        assert {"server": "old", "reason": "stateless_not_negotiated"} in refused
        with pytest.raises(ToolUnavailableError) as caught:
            await stack.gateway.call(booking_request("old.slots", {"day": "2026-08-01"}))
        assert caught.value.code is ErrorCode.MCP_UNAVAILABLE
        assert calls(tmp_path / "old.jsonl", "find_slots") == []
        result = await stack.gateway.call(booking_request("dual.slots", {"day": "2026-08-01"}))
        assert result.content["day"] == "2026-08-01"


async def test_stateless_requests_route_by_headers_without_a_session(tmp_path: Path) -> None:
    headers = tmp_path / "headers.jsonl"
    servers = bookings(tmp_path, VOCERO_MCP_HEADERS=str(headers))
    async with gateway_stack("http", servers, tools=booking_tools(), protocol="auto") as stack:
        await stack.gateway.call(booking_request("bookings.slots", {"day": "2026-08-01"}))
    lines = records(headers)
    assert lines[0]["body_method"] == "server/discover"
    assert all(line["mcp-method"] == line["body_method"] for line in lines)
    assert all(line["mcp-protocol-version"] == "2026-07-28" for line in lines)
    called = [line for line in lines if line["body_method"] == "tools/call"]
    assert [line["mcp-name"] for line in called] == ["find_slots"]
    assert not any(line["body_method"] == "initialize" for line in lines)


@TRANSPORTS
@REVISIONS
async def test_calls_and_failures_map_the_same_on_both_revisions(
    transport: Transport, revision: str, tmp_path: Path
) -> None:
    servers = bookings(tmp_path)
    async with gateway_stack(transport, servers, tools=booking_tools(), protocol=revision) as stack:
        conn = stack.connections.connection("bookings")
        assert conn is not None and conn.protocol_version == revision
        ok = await stack.gateway.call(
            booking_request("bookings.order", {"item": "wine", "quantity": 2}, operation_id="op_w")
        )
        assert ok.content["status"] == "committed" and ok.content["operation_id"] == "op_w"
        assert 'trust="untrusted"' in ok.text
        with pytest.raises(ToolArgumentsError):
            await stack.gateway.call(booking_request("bookings.order", {"item": "x"}))
        with pytest.raises(ToolNotAllowedError):
            await stack.gateway.call(
                booking_request("bookings.slots", {"day": "d"}, principal=READER)
            )
        # the same operation id for another request: the owning service refuses (a tool error)
        conflict = await stack.gateway.call(
            booking_request("bookings.order", {"item": "beer", "quantity": 1}, operation_id="op_w")
        )
        assert conflict.is_error and "idempotency_conflict" in json.dumps(conflict.content)
        orders = calls(tmp_path / "bookings.jsonl", "place_order")
        assert [o["arguments"]["item"] for o in orders] == ["wine", "beer"]
        assert not calls(tmp_path / "bookings.jsonl", "find_slots")


@TRANSPORTS
@REVISIONS
async def test_timeout_and_cancellation_on_both_revisions(
    transport: Transport, revision: str, tmp_path: Path
) -> None:
    servers = bookings(tmp_path, VOCERO_MCP_DELAY_MS="place_order=3000")
    tools = booking_tools(order=200)
    async with gateway_stack(transport, servers, tools=tools, protocol=revision) as stack:
        with pytest.raises(ToolTimeoutError) as caught:
            await stack.gateway.call(
                booking_request("bookings.order", {"item": "a", "quantity": 1}, operation_id="op_t")
            )
        assert caught.value.possibly_executed
        assert public_error(caught.value)["code"] == "MCP_TOOL_TIMEOUT"

        dispatched = anyio.Event()
        with anyio.move_on_after(5):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await stack.gateway.call(
                        booking_request(
                            "bookings.order", {"item": "b", "quantity": 1}, operation_id="op_c"
                        )
                    )

                tg.start_soon(call)
                await wait_for(lambda: len(calls(tmp_path / "bookings.jsonl", "place_order")) == 2)
                dispatched.set()
                tg.cancel_scope.cancel()
        aborted = [e for e in stack.audit.of("mcp.tool_call") if e["operation_id"] == "op_c"]
        assert aborted and aborted[-1]["outcome"] == "aborted"
        assert aborted[-1]["possibly_executed"] is True
        # the connection still serves after both
        result = await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
        assert result.content["day"] == "d"


@TRANSPORTS
@REVISIONS
async def test_a_rug_pull_disables_the_tool_on_both_revisions(
    transport: Transport, revision: str, tmp_path: Path
) -> None:
    pidfile = tmp_path / "bookings.pid"
    servers = bookings(tmp_path, VOCERO_MCP_MUTATE="find_slots", VOCERO_MCP_PIDFILE=str(pidfile))
    async with gateway_stack(transport, servers, tools=booking_tools(), protocol=revision) as stack:
        conn = stack.connections.connection("bookings")
        assert conn is not None
        await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
        os.kill(int(pidfile.read_text()), signal.SIGUSR1)
        listed = conn.listed
        # the change is announced with the next response (2025-11-25) or on the listen stream
        await stack.gateway.call(booking_request("bookings.order", {"item": "x", "quantity": 1}))
        with anyio.fail_after(10):
            await conn.wait_listed(listed + 1)
        assert conn.pins.get("find_slots").status == "changed"  # type: ignore[union-attr]
        with pytest.raises(ToolChangedError):
            await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
        assert "bookings.slots" not in {d.name for d in stack.gateway.definitions()}
        changed = stack.audit.of("mcp.tool_changed")
        assert changed and changed[0]["tool"] == "find_slots"


async def test_listing_hints_are_honoured_and_never_outlive_a_change(tmp_path: Path) -> None:
    clock = VirtualClock()
    servers = bookings(tmp_path, "--ttl-ms", "60000", "--cache-scope", "public")
    settings = GatewaySettings(min_relist_interval_s=0.0, relist_interval_s=300.0)
    async with gateway_stack(
        "stdio", servers, tools=booking_tools(), protocol="auto", settings=settings, clock=clock
    ) as stack:
        conn = stack.connections.connection("bookings")
        assert conn is not None and conn.listed == 1
        await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
        clock.advance(59)
        await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
        await anyio.wait_all_tasks_blocked()
        assert conn.listed == 1  # fresh: no tools/list at all
        clock.advance(2)
        await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
        with anyio.fail_after(10):
            await conn.wait_listed(2)  # stale: fetched again, in the background
        # an operator's pin change makes the next use fetch again, ttl or not
        conn.pins_changed()
        await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
        with anyio.fail_after(10):
            await conn.wait_listed(3)


async def test_without_hints_a_listing_lasts_the_relist_interval(tmp_path: Path) -> None:
    clock = VirtualClock()
    servers = bookings(tmp_path, "--protocols", "legacy")
    settings = GatewaySettings(min_relist_interval_s=0.0, relist_interval_s=300.0)
    async with gateway_stack(
        "stdio", servers, tools=booking_tools(), protocol="auto", settings=settings, clock=clock
    ) as stack:
        conn = stack.connections.connection("bookings")
        assert conn is not None and conn.protocol_version == "2025-11-25"
        clock.advance(299)
        await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
        await anyio.wait_all_tasks_blocked()
        assert conn.listed == 1
        clock.advance(2)
        await stack.gateway.call(booking_request("bookings.slots", {"day": "d"}))
        with anyio.fail_after(10):
            await conn.wait_listed(2)


async def test_a_broken_stream_is_sent_again_and_has_one_effect(tmp_path: Path) -> None:
    servers = bookings(tmp_path, VOCERO_MCP_BREAK="place_order")
    async with gateway_stack("http", servers, tools=booking_tools(), protocol="auto") as stack:
        result = await stack.gateway.call(
            booking_request("bookings.order", {"item": "cake", "quantity": 1}, operation_id="op_b")
        )
        assert result.content["status"] == "committed"
        sent = calls(tmp_path / "bookings.jsonl", "place_order")
        assert [s["meta"]["io.vocero/operation_id"] for s in sent] == ["op_b", "op_b"]
        state = json.loads((tmp_path / "bookings.json").read_text())
        assert len(state["orders"]) == 1  # exactly one effect on the server
        assert stack.audit.of("mcp.request_reissued") == [
            {"server": "bookings", "tool": "place_order", "operation_id": "op_b"}
        ]
        assert stack.connections.connection("bookings").state == "connected"  # type: ignore[union-attr]


async def test_a_stream_broken_twice_is_reported_as_possibly_executed(tmp_path: Path) -> None:
    servers = bookings(tmp_path, VOCERO_MCP_BREAK="place_order:2")
    async with gateway_stack("http", servers, tools=booking_tools(), protocol="auto") as stack:
        with pytest.raises(ToolUnavailableError) as caught:
            await stack.gateway.call(
                booking_request(
                    "bookings.order", {"item": "pie", "quantity": 1}, operation_id="op_2"
                )
            )
        assert str(caught.value) == "stream_broken" and caught.value.possibly_executed
        state = json.loads((tmp_path / "bookings.json").read_text())
        assert len(state["orders"]) == 1
        # the next call works: a broken stream is not a broken connection
        again = await stack.gateway.call(
            booking_request("bookings.order", {"item": "pie", "quantity": 1}, operation_id="op_2")
        )
        assert again.content["order"] == next(iter(state["orders"]))


def test_http_servers_accept_arguments(tmp_path: Path) -> None:
    with http_servers(bookings(tmp_path, "--ttl-ms", "5")) as running:
        assert running["bookings"].args == ["--ttl-ms", "5"]
