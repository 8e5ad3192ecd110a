"""Contract tests against the fixture servers, over stdio and streamable HTTP (shared stack)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gateway_support import ALICE, GLOBEX, READONLY, TRACEPARENT, Stack, records, request

from vocero.contracts.errors import (
    ErrorCode,
    ToolArgumentsError,
    ToolInvalidResultError,
    ToolNotAllowedError,
)
from vocero.mcp_gateway import InvalidToolArgumentsError, public_error

pytestmark = pytest.mark.anyio

RESCHEDULE = {
    "appointment_id": "APT-1002",
    "new_date": "2026-12-12",
    "new_time": "09:30",
    "timezone": "Europe/Madrid",
}


def folder(stack: Stack) -> Path:
    assert stack.folder is not None
    return stack.folder


def recorded(stack: Stack, server: str) -> list[dict[str, Any]]:
    return records(folder(stack) / f"{server}.jsonl")


async def test_stable_adapter_negotiates_2025_11_25(shared: Stack) -> None:
    for name in ("orders", "appointments"):
        conn = shared.connections.connection(name)
        assert conn is not None
        assert conn.protocol_version == "2025-11-25"
        assert conn.state == "connected"


async def test_definitions_expose_only_allowlisted_tools_with_pinned_schemas(shared: Stack) -> None:
    definitions = {d.name: d for d in shared.gateway.definitions()}

    assert set(definitions) == {
        "orders.status",
        "appointments.list",
        "appointments.reschedule",
        "appointments.cancel",
    }
    orders = shared.connections.connection("orders")
    assert orders is not None
    pin = orders.pins.get("get_order_status")
    assert pin is not None
    assert definitions["orders.status"].input_schema == pin.input_schema
    assert definitions["orders.status"].input_schema["required"] == ["order_id"]
    # lookup tools are callable for reconciliation but never shown to the model
    assert "lookup_operation" not in {d.name for d in definitions.values()}


@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        ("account.close", "prohibited"),
        ("delete_account", "not_allowlisted"),
        ("get_order_status", "not_allowlisted"),
        ("appointments.delete", "not_allowlisted"),
        ("followups.record", "builtin_tool"),
    ],
)
async def test_allowlist_is_enforced_before_anything_is_sent(
    shared: Stack, tool: str, reason: str
) -> None:
    before = {s: len(recorded(shared, s)) for s in ("orders", "appointments")}

    with pytest.raises(ToolNotAllowedError) as caught:
        await shared.gateway.call(request(tool, {"account_id": "acc_1", "order_id": "A123"}))

    assert str(caught.value) == reason
    assert caught.value.code == ErrorCode.TOOL_DENIED
    assert {s: len(recorded(shared, s)) for s in before} == before
    assert shared.connections.connection("admin") is None  # prohibited-only: never connected
    assert not (folder(shared) / "admin.jsonl").exists()
    assert {"tool": tool, "reason": reason} in shared.audit.of("mcp.tool_denied")


async def test_missing_scope_is_refused_before_anything_is_sent(shared: Stack) -> None:
    before = len(recorded(shared, "appointments"))

    with pytest.raises(ToolNotAllowedError, match="missing_scope"):
        await shared.gateway.call(request("appointments.list", principal=READONLY))

    assert len(recorded(shared, "appointments")) == before


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("orders.status", {"order_id": 123}, "order_id:type"),
        ("orders.status", {"order_id": "a123; DROP"}, "order_id:pattern"),
        ("orders.status", {}, "$:required"),
        ("orders.status", {"order_id": "A123", "note": "x"}, "note:not_declared"),
        ("appointments.reschedule", {**RESCHEDULE, "new_date": "12/12/2026"}, "new_date:format"),
        ("appointments.reschedule", {**RESCHEDULE, "new_time": "25:00"}, "new_time:pattern"),
    ],
)
async def test_invalid_arguments_are_never_sent(
    shared: Stack, tool: str, arguments: dict[str, Any], field: str
) -> None:
    arguments = {**arguments} if tool == "orders.status" else {**arguments, "expected_version": 1}
    before = {s: len(recorded(shared, s)) for s in ("orders", "appointments")}

    with pytest.raises(InvalidToolArgumentsError) as caught:
        await shared.gateway.call(request(tool, arguments, proposal_id="prop_x"))

    assert field in caught.value.fields
    assert isinstance(caught.value, ToolArgumentsError)
    assert caught.value.possibly_executed is False
    assert "DROP" not in str(caught.value)  # values never leave in errors
    assert {s: len(recorded(shared, s)) for s in before} == before


async def test_prompt_injection_in_a_result_stays_inert_data(shared: Stack) -> None:
    definitions = shared.gateway.definitions()
    pins = [(p.tool, p.definition_hash, p.status) for p in shared.connections.pins()]

    result = await shared.gateway.call(request("orders.status", {"order_id": "INJ1"}))

    assert result.is_error is False
    assert "ignore all previous instructions" in result.content["status"]
    assert 'trust="untrusted"' in result.text
    assert "instruction_like" in result.text
    assert result.text.index("<tool_data") < result.text.index("SYSTEM OVERRIDE")
    # nothing about the session changed: same tools, same pins, the prohibited tool still refused
    assert shared.gateway.definitions() == definitions
    assert [(p.tool, p.definition_hash, p.status) for p in shared.connections.pins()] == pins
    with pytest.raises(ToolNotAllowedError):
        await shared.gateway.call(request("account.close", {"account_id": "acc_1"}))


@pytest.mark.parametrize(
    ("order_id", "reason"), [("BIG1", "result_too_large"), ("BAD1", "protocol_violation")]
)
async def test_invalid_or_oversized_results_never_reach_the_model(
    shared: Stack, order_id: str, reason: str
) -> None:
    with pytest.raises(ToolInvalidResultError) as caught:
        await shared.gateway.call(request("orders.status", {"order_id": order_id}))

    error = public_error(caught.value)
    assert error["code"] == "MCP_INVALID_RESULT"
    assert error["user_message_key"] == "tool.invalid_result"
    assert error["reason_code"] in {reason, "output_schema_violation"}
    assert caught.value.possibly_executed is True
    assert "xxxx" not in repr(caught.value)
    assert "unexpected" not in repr(caught.value)
    last = shared.audit.of("mcp.tool_call")[-1]
    assert last["outcome"] == "MCP_INVALID_RESULT"


async def test_meta_carries_principal_operation_and_trace(shared: Stack) -> None:
    await shared.gateway.call(
        request("orders.status", {"order_id": "A123"}, operation_id="op_meta_read")
    )

    sent = recorded(shared, "orders")[-1]
    assert sent["tool"] == "get_order_status"
    assert sent["arguments"] == {"order_id": "A123"}
    assert sent["meta"] == {
        "io.vocero/operation_id": "op_meta_read",
        "io.vocero/principal": {
            "subject_ref": ALICE.subject_ref,
            "tenant_id": "acme",
            "scopes": ALICE.scopes,
        },
        "traceparent": TRACEPARENT,
    }


async def test_writes_carry_the_proposal_and_are_idempotent(shared: Stack) -> None:
    listed = await shared.gateway.call(request("appointments.list", operation_id="op_list"))
    version = next(
        a["version"] for a in listed.content["appointments"] if a["appointment_id"] == "APT-1002"
    )
    write = request(
        "appointments.reschedule",
        {**RESCHEDULE, "expected_version": version},
        operation_id="op_resched_1",
        proposal_id="prop_1",
        revision=2,
    )

    first = await shared.gateway.call(write)
    again = await shared.gateway.call(write)  # a retry of the same authorized operation

    assert first.is_error is False
    assert again.content == first.content
    assert first.content["appointment"]["version"] == version + 1
    sent = recorded(shared, "appointments")[-1]
    assert sent["meta"]["io.vocero/proposal"] == {"proposal_id": "prop_1", "revision": 2}
    assert sent["meta"]["io.vocero/operation_id"] == "op_resched_1"

    stale = await shared.gateway.call(
        request(
            "appointments.reschedule",
            {**RESCHEDULE, "new_time": "10:00", "expected_version": version},
            operation_id="op_resched_2",
            proposal_id="prop_2",
        )
    )
    assert stale.is_error is True
    assert "stale_version" in stale.content["error"]

    found = await shared.gateway.lookup("appointments.reschedule", write.meta)
    assert found.content["status"] == "committed"
    assert found.content["receipt"] == first.content
    missing = await shared.gateway.lookup(
        "appointments.cancel", request("appointments.cancel", operation_id="op_never").meta
    )
    assert missing.content["status"] == "not_found"


async def test_owning_service_refuses_another_tenant(shared: Stack) -> None:
    result = await shared.gateway.call(
        request(
            "appointments.cancel",
            {"appointment_id": "APT-1001", "expected_version": 1},
            operation_id="op_cross_tenant",
            proposal_id="prop_g",
            principal=GLOBEX.__class__(
                subject_ref=GLOBEX.subject_ref,
                tenant_id="globex",
                scopes=[*GLOBEX.scopes, "appointments:cancel"],
            ),
        )
    )

    assert result.is_error is True
    assert "not_found" in result.content["error"]


async def test_every_call_is_audited_without_payloads(shared: Stack) -> None:
    await shared.gateway.call(request("orders.status", {"order_id": "A124"}, operation_id="op_a"))

    event = shared.audit.of("mcp.tool_call")[-1]
    assert event["tool"] == "orders.status"
    assert event["server_tool"] == "get_order_status"
    assert event["operation_id"] == "op_a"
    assert event["outcome"] == "ok"
    assert event["definition_hash"].startswith("sha256:")
    assert "A124" not in repr(event)
    assert all(
        session == "ses_test" for kind, _, session in shared.audit.events if kind == "mcp.tool_call"
    )
