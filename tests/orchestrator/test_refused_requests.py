"""Issue 42: a caller asking for what only a prohibited tool does hears that we cannot help, and
nothing reaches the server.

A real session with the real action path (coordinator, store, outbox worker) in-process on the
CPU dialogue path (the routed runner; its engine is never asked to chat), its tool behind a
:class:`FakeToolGateway` that records what reached the server, on a profile the code has never
seen: ``bookings.shift`` is offered; ``bookings.refund`` (server tool ``refund_booking``) is
``prohibited``, so it is never offered, and the orchestrator sends it with every model request as
material only (``LlmRequest.refused``). The control is the same session on the same profile
without the prohibited tool: there the same line is taken for the offered tool.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import msgspec
import pytest

from tests.orchestrator.test_consent_conversation import (
    SPEC,
    Booking,
    ConfirmingEngine,
    answered,
    booking,
    cpu_runners,
)
from vocero.contracts.domain import ToolSpec

pytestmark = pytest.mark.anyio

REFUND = msgspec.structs.replace(
    SPEC, name="bookings.refund", resolves_to="refund_booking", action_class="prohibited",
    requires_confirmation=False,
)  # fmt: skip
LINE = "please refund booking BK-101"
SORRY = "Sorry, I can't help with that here."


def session(db_path: Path, tools: list[ToolSpec]) -> AbstractAsyncContextManager[Booking]:
    """One call on the CPU dialogue path to a profile of ``tools``; only ``bookings.shift`` is
    served."""
    return booking(db_path, cpu_runners(ConfirmingEngine()), tools)


async def test_a_request_only_a_prohibited_tool_serves_is_refused_and_nothing_is_sent(
    db_path: Path,
) -> None:
    async with session(db_path, [SPEC, REFUND]) as b:
        said = await answered(b, LINE)
        assert said.startswith(SORRY), said
        assert b.gateway.requests == [], "nothing reached the server"
        assert await b.authorised() == []
        assert b.h.received.of("ConfirmationRequired") == []
        asked = await answered(b, "I need to move booking BK-101")
        assert asked.endswith("?") and not asked.startswith(SORRY), "the offered tool still is"


async def test_without_the_prohibited_tool_the_same_line_is_taken_for_the_offered_one(
    db_path: Path,
) -> None:
    """The control: a profile that lists no prohibited tool takes the line for its own tool
    (it asks for the new time: still nothing sent)."""
    async with session(db_path, [SPEC]) as b:
        said = await answered(b, LINE)
        assert said.endswith("?") and not said.startswith(SORRY), said
        assert b.gateway.requests == []
