"""A server's questions during a call reach the caller through ``ToolCallRequest.ask``, on both
revisions (2026-07-28 ``InputRequiredResult`` retried with ``inputResponses``; 2025-11-25
``elicitation/create``): round trips, secrets never asked, declines, timeouts, invalid answers,
URL mode, and routing on a connection shared by several calls."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from bookings_support import FakeCaller, booking_request, booking_tools, bookings, calls, inputs
from gateway_support import Transport, gateway_stack

from vocero.contracts.errors import ErrorCode
from vocero.mcp_gateway import GatewaySettings, ToolInputError, ToolSecretInputError, public_error

pytestmark = pytest.mark.anyio
CASES = pytest.mark.parametrize(
    ("transport", "revision"),
    [("stdio", "2025-11-25"), ("stdio", "2026-07-28"), ("http", "2025-11-25"), ("http", "auto")],
)
BOOKING = {"date,party_size": {"date": "2026-08-14", "party_size": 4}}


@CASES
async def test_a_question_round_trips_through_the_caller(
    transport: Transport, revision: str, tmp_path: Path
) -> None:
    caller = FakeCaller(answers=BOOKING)
    async with gateway_stack(
        transport, bookings(tmp_path), tools=booking_tools(), protocol=revision
    ) as stack:
        result = await stack.gateway.call(
            booking_request(
                "bookings.book",
                {"restaurant_id": "R7"},
                operation_id="op_q1",
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
        "op_q1",
        "prop_1",
        2,
    )
    assert question.link is None
    assert question.requested_schema["required"] == ["date", "party_size"]
    assert question.requested_schema["additionalProperties"] is False
    assert question.requested_schema["properties"]["party_size"]["maximum"] == 12
    assert inputs(tmp_path / "bookings.jsonl") == [
        {
            **inputs(tmp_path / "bookings.jsonl")[0],
            "action": "accept",
            "keys": ["date", "party_size"],
        }
    ]
    # one operation: the server executed the call once, whatever the number of rounds
    state = json.loads((tmp_path / "bookings.json").read_text())
    assert len(state["bookings"]) == 1
    sent = calls(tmp_path / "bookings.jsonl", "book_table")
    assert {s["meta"]["io.vocero/operation_id"] for s in sent} == {"op_q1"}
    audited = json.dumps(stack.audit.events)
    assert "2026-08-14" not in audited  # names and actions only, never values
    answered = stack.audit.of("mcp.input_answered")
    assert answered[0]["action"] == "accept" and answered[0]["fields"] == ["date", "party_size"]


@CASES
async def test_a_secret_is_never_asked_and_the_server_is_told(
    transport: Transport, revision: str, tmp_path: Path
) -> None:
    caller = FakeCaller()
    async with gateway_stack(
        transport, bookings(tmp_path), tools=booking_tools(), protocol=revision
    ) as stack:
        with pytest.raises(ToolSecretInputError) as caught:
            await stack.gateway.call(
                booking_request("bookings.link", {"account_id": "L9"}, ask=caller)
            )
    assert caller.asked == []
    assert str(caught.value) == "input_secret_requested"
    assert public_error(caught.value)["code"] == ErrorCode.TOOL_DENIED.value
    assert not caught.value.possibly_executed
    [told] = inputs(tmp_path / "bookings.jsonl")
    assert (told["action"], told["reason"]) == ("decline", "input_secret_requested")


async def test_an_optional_secret_is_left_out_of_the_question(tmp_path: Path) -> None:
    caller = FakeCaller(answers={"comment,rating": {"rating": 5, "comment": "lovely"}})
    async with gateway_stack("stdio", bookings(tmp_path), tools=booking_tools()) as stack:
        result = await stack.gateway.call(
            booking_request("bookings.survey", {"topic": "dinner"}, ask=caller)
        )
    [question] = caller.asked
    assert set(question.requested_schema["properties"]) == {"rating", "comment"}
    assert result.content == {"topic": "dinner", "rating": 5, "comment": "lovely"}


@CASES
async def test_declines_and_timeouts_map_to_stable_reasons(
    transport: Transport, revision: str, tmp_path: Path
) -> None:
    settings = GatewaySettings(input_timeout_s=0.3)
    async with gateway_stack(
        transport, bookings(tmp_path), tools=booking_tools(), protocol=revision, settings=settings
    ) as stack:
        with pytest.raises(ToolInputError) as declined:
            await stack.gateway.call(
                booking_request(
                    "bookings.book", {"restaurant_id": "R1"}, ask=FakeCaller(action="decline")
                )
            )
        silent = FakeCaller(answers=BOOKING, hold=anyio.Event())  # never answers
        with pytest.raises(ToolInputError) as timed_out:
            await stack.gateway.call(
                booking_request("bookings.book", {"restaurant_id": "R2"}, ask=silent)
            )
        with pytest.raises(ToolInputError) as nobody:
            await stack.gateway.call(booking_request("bookings.book", {"restaurant_id": "R3"}))
    assert [str(declined.value), str(timed_out.value), str(nobody.value)] == [
        "input_declined",
        "input_timeout",
        "input_unavailable",
    ]
    assert public_error(declined.value)["code"] == ErrorCode.MCP_TOOL_ERROR.value
    told = [(line["action"], line["reason"]) for line in inputs(tmp_path / "bookings.jsonl")]
    assert told == [
        ("decline", "input_declined"),
        ("cancel", "input_timeout"),
        ("decline", "input_unavailable"),
    ]
    assert (
        not (tmp_path / "bookings.json").exists()
        or not json.loads((tmp_path / "bookings.json").read_text())["bookings"]
    )


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_an_answer_that_breaks_the_schema_is_never_sent(
    revision: str, tmp_path: Path
) -> None:
    wrong = FakeCaller(answers={"date,party_size": {"date": "2026-08-14", "party_size": 40}})
    async with gateway_stack(
        "stdio", bookings(tmp_path), tools=booking_tools(), protocol=revision
    ) as stack:
        with pytest.raises(ToolInputError) as caught:
            await stack.gateway.call(
                booking_request("bookings.book", {"restaurant_id": "R1"}, ask=wrong)
            )
    assert str(caught.value) == "input_invalid"
    [told] = inputs(tmp_path / "bookings.jsonl")
    assert (told["action"], told["reason"], told["keys"]) == ("cancel", "input_invalid", [])
    problems = stack.audit.of("mcp.input_answered")[0]["problems"]
    assert problems == ["party_size:maximum"]


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_a_url_question_is_a_link_for_the_browser(revision: str, tmp_path: Path) -> None:
    caller = FakeCaller()
    async with gateway_stack(
        "stdio", bookings(tmp_path), tools=booking_tools(), protocol=revision
    ) as stack:
        result = await stack.gateway.call(
            booking_request("bookings.pay", {"order_id": "O5"}, ask=caller)
        )
    [question] = caller.asked
    assert question.mode == "url" and question.requested_schema == {}
    assert question.link is not None
    assert question.link.server == "bookings"
    assert question.link.url == "https://pay.example.com/approve/O5"
    assert result.content == {"status": "pending_verification", "order_id": "O5"}


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_time_spent_answering_does_not_count_against_the_tool(
    revision: str, tmp_path: Path
) -> None:
    slow = FakeCaller(answers=BOOKING, delay_s=0.6)
    tools = booking_tools(book=400)
    async with gateway_stack("stdio", bookings(tmp_path), tools=tools, protocol=revision) as stack:
        result = await stack.gateway.call(
            booking_request("bookings.book", {"restaurant_id": "R4"}, ask=slow)
        )
    assert result.content["status"] == "committed"


async def test_questions_of_concurrent_calls_never_cross(tmp_path: Path) -> None:
    """2025-11-25 over stdio carries no link between a question and its call: with two calls in
    flight a question is routed only by the operation id the server echoes, else declined."""
    first = FakeCaller(answers=BOOKING, hold=anyio.Event())
    second = FakeCaller(answers=BOOKING)
    async with gateway_stack(
        "stdio", bookings(tmp_path), tools=booking_tools(), protocol="2025-11-25"
    ) as stack:
        outcome: dict[str, object] = {}
        async with anyio.create_task_group() as tg:

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
    async with gateway_stack(
        "stdio", servers, tools=booking_tools(), protocol="2025-11-25"
    ) as stack, anyio.create_task_group() as tg:

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
