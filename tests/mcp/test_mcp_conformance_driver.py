"""The client the official conformance suite drives (``vocero.bench.conformance``) goes
through the gateway in its default configuration: discovery, pinning, the question port."""

from __future__ import annotations

from pathlib import Path

import pytest
from bookings_support import bookings
from gateway_support import http_servers, records

from vocero.bench.conformance import (
    planned_calls,
    run,
    sample_arguments,
    stand_in_caller,
)
from vocero.contracts.ports import InputRequest
from vocero.mcp_gateway.model import RemoteTool

pytestmark = pytest.mark.anyio


def calls_of(folder: Path) -> list[dict[str, object]]:
    return [line for line in records(folder / "bookings.jsonl") if "kind" not in line]


async def test_the_driver_calls_through_the_gateway_and_its_question_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with http_servers(bookings(tmp_path)) as running:
        assert await run(running["bookings"].url, "local") == 0
    out = capsys.readouterr()
    # the conformance principal has no scopes: the owning service refuses it, as data
    assert "find_slots: is_error=True" in out.out
    assert (
        "audit mcp.server_connected {'server': 'conformance', 'protocol': '2026-07-28'}" in out.err
    )
    # every tool the server listed was pinned and called through the gateway, with _meta
    called = {line["tool"] for line in calls_of(tmp_path)}
    assert called == {
        "find_slots",
        "place_order",
        "book_table",
        "link_account",
        "verify_payment",
        "release_deposit",
        "survey",
    }


async def test_the_stand_in_caller_answers_every_field_without_a_default() -> None:
    question = InputRequest(
        id="q",
        server="s",
        tool="t",
        operation_id="op",
        requested_schema={
            "type": "object",
            "properties": {
                "confirmed": {"type": "boolean"},
                "name": {"type": "string", "default": "x"},
            },
        },
    )
    answer = await stand_in_caller(question)
    assert (answer.action, answer.content) == ("accept", {"confirmed": True})


def test_scenario_calls_and_sample_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "string", "enum": ["x", "y"]}},
        "required": ["a", "b"],
    }
    assert sample_arguments(schema) == {"a": 1, "b": "x"}
    tool = RemoteTool(
        name="t",
        input_schema={
            "type": "object",
            "properties": {"r": {"type": "string"}, "v": {"type": "boolean"}},
            "required": ["r"],
        },
    )
    context = {"toolCalls": [{"name": "t", "arguments": {"r": "x", "v": None}}]}
    assert planned_calls("http-custom-headers", [tool], context) == [("t", {"r": "x"})]
