"""A server that sends the caller to a page before it will run a call: on 2025-11-25 it answers
the ``tools/call`` with ``-32042`` (``URLElicitationRequiredError``) and, once the page is done,
sends ``notifications/elicitation/complete``; the gateway puts the link to the caller, waits for
that notice (bounded) and sends the same call again. On 2026-07-28 the page is asked inside the
call. Against ``fixtures/mcp_servers/bookings_server.py``'s ``release_deposit``: what reached the
server (each ``tools/call``, its operation id), what the caller was asked, what was audited."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from bookings_support import FakeCaller, booking_request, booking_tools, bookings, calls
from gateway_support import Stack, gateway_stack, records

from vocero.contracts.errors import ErrorCode
from vocero.mcp_gateway import GatewaySettings, ToolInputError, public_error
from vocero.mcp_gateway.questions import QuestionDesk

pytestmark = pytest.mark.anyio
SETTINGS = GatewaySettings(input_timeout_s=1.0)


@dataclass
class Server:
    stack: Stack
    folder: Path
    revision: str

    def calls(self, operation_id: str) -> list[dict[str, Any]]:
        sent = calls(self.folder / "bookings.jsonl", "release_deposit")
        return [c for c in sent if c["meta"].get("io.vocero/operation_id") == operation_id]

    def sent_away(self, operation_id: str) -> list[dict[str, Any]]:
        """The server's own record of each time it sent this call's caller to a page."""
        return [
            line
            for line in records(self.folder / "bookings.jsonl")
            if line.get("kind") == "links" and line["operation_id"] == operation_id
        ]

    def released(self) -> dict[str, Any]:
        path = self.folder / "bookings.json"
        found: dict[str, Any] = json.loads(path.read_text()).get("deposits", {})
        return found

    def completions(self, operation_id: str) -> list[bool]:
        return [
            e["completed"]
            for e in self.stack.audit.of("mcp.input_completed")
            if e["operation_id"] == operation_id
        ]

    async def release(self, order: str, operation_id: str, caller: FakeCaller | None) -> Any:
        return await self.stack.gateway.call(
            booking_request(
                "bookings.deposit", {"order_id": order}, operation_id=operation_id, ask=caller
            )
        )


async def _server(
    transport: str, revision: str, factory: pytest.TempPathFactory
) -> AsyncIterator[Server]:
    folder = factory.mktemp("links")
    async with gateway_stack(
        transport, bookings(folder), tools=booking_tools(), protocol=revision, settings=SETTINGS
    ) as stack:
        yield Server(stack, folder, revision)


LEGACY = [("stdio", "2025-11-25"), ("http", "2025-11-25")]
CASES = [*LEGACY, ("stdio", "2026-07-28"), ("http", "auto")]


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c) for c in CASES])
async def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Server]:
    async for found in _server(*request.param, tmp_path_factory):
        yield found


@pytest.fixture(scope="module", params=LEGACY, ids=["-".join(c) for c in LEGACY])
async def legacy(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Server]:
    """Where ``-32042`` exists: 2025-11-25 sessions (2026-07-28 retired the code)."""
    async for found in _server(*request.param, tmp_path_factory):
        yield found


async def test_the_caller_is_sent_to_the_page_and_the_same_call_then_runs(server: Server) -> None:
    caller = FakeCaller()
    result = await server.release("D1", "op_d1", caller)
    assert result.content["status"] == "released"
    [question] = caller.asked
    assert question.mode == "url" and question.link is not None
    assert question.link.url == "https://pay.example.com/release/D1"
    assert (question.operation_id, question.tool) == ("op_d1", "bookings.deposit")
    # the server saw the call twice, the same operation both times, and ran it once
    assert len(server.calls("op_d1")) == 2
    assert server.released() == {"D1": "released"}
    if server.revision == "2025-11-25":
        assert len(server.sent_away("op_d1")) == 1
        assert server.completions("op_d1") == [True]


async def test_a_page_never_finished_ends_the_call_and_nothing_runs(legacy: Server) -> None:
    caller = FakeCaller()
    with pytest.raises(ToolInputError) as caught:
        await legacy.release("STUCK1", "op_stuck", caller)
    assert caught.value.reason_code == "input_not_completed"
    assert public_error(caught.value)["code"] == ErrorCode.MCP_TOOL_ERROR.value
    assert not caught.value.possibly_executed
    assert len(caller.asked) == 1
    assert len(legacy.calls("op_stuck")) == 1  # never sent again
    assert legacy.completions("op_stuck") == [False]
    assert "STUCK1" not in legacy.released()


@pytest.mark.parametrize(
    ("caller", "reason"),
    [(FakeCaller(action="decline"), "input_declined"), (None, "input_unavailable")],
    ids=["declined", "nobody-to-ask"],
)
async def test_a_caller_who_will_not_go_ends_the_call_at_once(
    legacy: Server, caller: FakeCaller | None, reason: str
) -> None:
    operation = f"op_{reason}"
    with anyio.fail_after(SETTINGS.input_timeout_s / 2):  # no wait for a page nobody opens
        with pytest.raises(ToolInputError) as caught:
            await legacy.release(f"N-{reason}", operation, caller)
    assert caught.value.reason_code == reason
    assert len(legacy.calls(operation)) == 1
    assert legacy.completions(operation) == []
    [answered] = [
        e for e in legacy.stack.audit.of("mcp.input_answered") if e["operation_id"] == operation
    ]
    assert answered["reason"] == reason


async def test_a_server_that_keeps_sending_the_caller_away_is_given_up_on(legacy: Server) -> None:
    caller = FakeCaller()
    with pytest.raises(ToolInputError) as caught:
        await legacy.release("AGAIN1", "op_again", caller)
    assert caught.value.reason_code == "url_elicitation_required"
    assert len(caller.asked) == 2  # two rounds, then the server's third refusal ends it
    assert len(legacy.calls("op_again")) == 3
    assert legacy.completions("op_again") == [True, True]
    assert "AGAIN1" not in legacy.released()


async def test_a_page_finished_while_the_caller_is_still_answering_is_not_missed(
    legacy: Server,
) -> None:
    slow = FakeCaller(delay_s=0.3)  # the provider finishes 50 ms in; the caller says yes later
    result = await legacy.release("D2", "op_slow", slow)
    assert result.content["status"] == "released"
    assert legacy.completions("op_slow") == [True]


async def test_a_done_notice_ahead_of_its_call_is_kept_and_only_for_its_page() -> None:
    desk = QuestionDesk("bookings")
    desk.completed("deposit-9")  # over HTTP the notice may overtake the -32042 it belongs to
    with desk.awaiting("deposit-9") as early, desk.awaiting("deposit-8") as other:
        assert early.is_set() and not other.is_set()
        desk.completed("deposit-8")
        assert other.is_set()
    with desk.awaiting("deposit-9") as again:
        assert not again.is_set(), "a notice is used once"
