"""A server's questions during a call reach the caller through ``ToolCallRequest.ask``, on both
revisions (2026-07-28 ``InputRequiredResult`` retried with ``inputResponses``; 2025-11-25
``elicitation/create``): round trips, secrets never asked, declines, timeouts, invalid answers,
URL mode, and routing on a connection shared by several calls.

One bookings server per (transport, revision) serves the whole module; each test uses its own
operation ids and reads only the answers recorded for them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from bookings_support import FakeCaller, booking_request, booking_tools, bookings, calls, inputs
from gateway_support import Stack, gateway_stack

from vocero.contracts.errors import ErrorCode
from vocero.mcp_gateway import GatewaySettings, ToolInputError, ToolSecretInputError, public_error

pytestmark = pytest.mark.anyio
CASES = [("stdio", "2025-11-25"), ("stdio", "2026-07-28"), ("http", "2025-11-25"), ("http", "auto")]
BOOKING = {"date,party_size": {"date": "2026-08-14", "party_size": 4}}
SETTINGS = GatewaySettings(input_timeout_s=1.0)


@dataclass
class Desk:
    stack: Stack
    folder: Path

    def told(self, operation_id: str) -> list[dict[str, Any]]:
        return [
            i for i in inputs(self.folder / "bookings.jsonl") if i["operation_id"] == operation_id
        ]

    def receipt(self, operation_id: str) -> dict[str, Any] | None:
        path = self.folder / "bookings.json"
        state = json.loads(path.read_text()) if path.exists() else {"receipts": {}}
        found: dict[str, Any] | None = state["receipts"].get(operation_id)
        return found


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c) for c in CASES])
async def desk(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Desk]:
    transport, revision = request.param
    folder = tmp_path_factory.mktemp("questions")
    quick = msgspec.structs.replace(booking_tools(book=400)[2], name="bookings.book_quick")
    async with gateway_stack(
        transport,
        bookings(folder),
        tools=booking_tools(),
        extra_profile_tools=[quick],
        protocol=revision,
        settings=SETTINGS,
    ) as stack:
        yield Desk(stack, folder)


def _answered(stack: Stack, operation_id: str) -> list[dict[str, Any]]:
    return [e for e in stack.audit.of("mcp.input_answered") if e["operation_id"] == operation_id]


async def test_a_question_round_trips_through_the_caller(desk: Desk) -> None:
    caller = FakeCaller(answers=BOOKING)
    result = await desk.stack.gateway.call(
        booking_request(
            "bookings.book",
            {"restaurant_id": "R7"},
            operation_id="op_round",
            ask=caller,
            proposal_id="prop_1",
            revision=2,
        )
    )
    assert result.content["status"] == "committed"
    assert result.content["date"] == "2026-08-14" and result.content["party_size"] == 4
    [question] = caller.asked
    assert (question.server, question.tool, question.mode) == ("bookings", "bookings.book", "form")
    assert (question.operation_id, question.proposal_id, question.revision) == (
        "op_round",
        "prop_1",
        2,
    )
    assert question.link is None
    assert question.requested_schema["required"] == ["date", "party_size"]
    assert question.requested_schema["additionalProperties"] is False
    assert question.requested_schema["properties"]["party_size"]["maximum"] == 12
    [told] = desk.told("op_round")
    assert (told["action"], told["keys"]) == ("accept", ["date", "party_size"])
    # one operation: the server executed it once, whatever the number of rounds
    receipt = desk.receipt("op_round")
    assert receipt is not None and receipt["receipt"]["booking"] == result.content["booking"]
    sent = [
        c
        for c in calls(desk.folder / "bookings.jsonl", "book_table")
        if c["meta"]["io.vocero/operation_id"] == "op_round"
    ]
    assert sent and all(c["arguments"] == {"restaurant_id": "R7"} for c in sent)
    audited = json.dumps(desk.stack.audit.events)
    assert "2026-08-14" not in audited  # names and actions only, never values
    [answered] = _answered(desk.stack, "op_round")
    assert answered["action"] == "accept" and answered["fields"] == ["date", "party_size"]


async def test_a_secret_is_never_asked_and_the_server_is_told(desk: Desk) -> None:
    caller = FakeCaller()
    with pytest.raises(ToolSecretInputError) as caught:
        await desk.stack.gateway.call(
            booking_request(
                "bookings.link", {"account_id": "L9"}, operation_id="op_secret", ask=caller
            )
        )
    assert caller.asked == []
    assert str(caught.value) == "input_secret_requested"
    assert public_error(caught.value)["code"] == ErrorCode.TOOL_DENIED.value
    assert not caught.value.possibly_executed
    [told] = desk.told("op_secret")
    assert (told["action"], told["reason"]) == ("decline", "input_secret_requested")


async def test_an_optional_secret_is_left_out_of_the_question(desk: Desk) -> None:
    caller = FakeCaller(answers={"comment,rating": {"rating": 5, "comment": "lovely"}})
    result = await desk.stack.gateway.call(
        booking_request(
            "bookings.survey", {"topic": "dinner"}, operation_id="op_survey", ask=caller
        )
    )
    [question] = caller.asked
    assert set(question.requested_schema["properties"]) == {"rating", "comment"}
    assert result.content == {"topic": "dinner", "rating": 5, "comment": "lovely"}


async def test_declines_and_timeouts_map_to_stable_reasons(desk: Desk) -> None:
    gateway = desk.stack.gateway
    silent = FakeCaller(answers=BOOKING, hold=anyio.Event())  # never answers
    outcomes = []
    for operation, caller in (
        ("op_decline", FakeCaller(action="decline")),
        ("op_silent", silent),
        ("op_nobody", None),
    ):
        with pytest.raises(ToolInputError) as caught:
            await gateway.call(
                booking_request(
                    "bookings.book", {"restaurant_id": "R1"}, operation_id=operation, ask=caller
                )
            )
        outcomes.append(str(caught.value))
        assert public_error(caught.value)["code"] == ErrorCode.MCP_TOOL_ERROR.value
    assert outcomes == ["input_declined", "input_timeout", "input_unavailable"]
    told = [
        (line["action"], line["reason"])
        for operation in ("op_decline", "op_silent", "op_nobody")
        for line in desk.told(operation)
    ]
    assert told == [
        ("decline", "input_declined"),
        ("cancel", "input_timeout"),
        ("decline", "input_unavailable"),
    ]
    assert all(desk.receipt(op) is None for op in ("op_decline", "op_silent", "op_nobody"))


async def test_an_answer_that_breaks_the_schema_is_never_sent(desk: Desk) -> None:
    wrong = FakeCaller(answers={"date,party_size": {"date": "2026-08-14", "party_size": 40}})
    with pytest.raises(ToolInputError) as caught:
        await desk.stack.gateway.call(
            booking_request(
                "bookings.book", {"restaurant_id": "R1"}, operation_id="op_wrong", ask=wrong
            )
        )
    assert str(caught.value) == "input_invalid"
    [told] = desk.told("op_wrong")
    assert (told["action"], told["reason"], told["keys"]) == ("cancel", "input_invalid", [])
    assert _answered(desk.stack, "op_wrong")[0]["problems"] == ["party_size:maximum"]


async def test_a_url_question_is_a_link_for_the_browser(desk: Desk) -> None:
    caller = FakeCaller()
    result = await desk.stack.gateway.call(
        booking_request("bookings.pay", {"order_id": "O5"}, operation_id="op_pay", ask=caller)
    )
    [question] = caller.asked
    assert question.mode == "url" and question.requested_schema == {}
    assert question.link is not None
    assert question.link.server == "bookings"
    assert question.link.url == "https://pay.example.com/approve/O5"
    assert result.content == {"status": "pending_verification", "order_id": "O5"}


async def test_time_spent_answering_does_not_count_against_the_tool(desk: Desk) -> None:
    slow = FakeCaller(answers=BOOKING, delay_s=0.6)  # the tool's timeout is 400 ms
    result = await desk.stack.gateway.call(
        booking_request(
            "bookings.book_quick", {"restaurant_id": "R4"}, operation_id="op_slow", ask=slow
        )
    )
    assert result.content["status"] == "committed"


async def test_questions_of_concurrent_calls_never_cross(tmp_path: Path) -> None:
    """2025-11-25 over stdio carries no link between a question and its call: with two calls in
    flight a question is routed only by the operation id the server echoes, else declined."""
    first = FakeCaller(answers=BOOKING, hold=anyio.Event())
    second = FakeCaller(answers=BOOKING)
    outcome: dict[str, object] = {}
    async with (
        gateway_stack(
            "stdio", bookings(tmp_path), tools=booking_tools(), protocol="2025-11-25"
        ) as stack,
        anyio.create_task_group() as tg,
    ):

        async def book(name: str, caller: FakeCaller) -> None:
            try:
                outcome[name] = await stack.gateway.call(
                    booking_request(
                        "bookings.book",
                        {"restaurant_id": name},
                        operation_id=f"op_{name}",
                        ask=caller,
                    )
                )
            except ToolInputError as exc:
                outcome[name] = str(exc)

        tg.start_soon(book, "A", first)
        await first.reached.wait()
        await book("B", second)
        assert first.hold is not None
        first.hold.set()
    assert outcome["B"] == "input_unroutable" and second.asked == []
    assert [q.operation_id for q in first.asked] == ["op_A"]


async def test_an_echoed_operation_id_routes_each_question_to_its_call(tmp_path: Path) -> None:
    first = FakeCaller(answers=BOOKING, hold=anyio.Event())
    second = FakeCaller(answers=BOOKING)
    servers = bookings(tmp_path, VOCERO_MCP_ECHO_OPERATION="1")
    async with (
        gateway_stack("stdio", servers, tools=booking_tools(), protocol="2025-11-25") as stack,
        anyio.create_task_group() as tg,
    ):

        async def book(name: str, caller: FakeCaller) -> None:
            await stack.gateway.call(
                booking_request(
                    "bookings.book",
                    {"restaurant_id": name},
                    operation_id=f"op_{name}",
                    ask=caller,
                )
            )

        tg.start_soon(book, "A", first)
        await first.reached.wait()
        await book("B", second)
        assert first.hold is not None
        first.hold.set()
    assert [q.operation_id for q in first.asked] == ["op_A"]
    assert [q.operation_id for q in second.asked] == ["op_B"]
