"""The session side of a server's question, on its own: how spoken numbers are read, one
question at a time, and a question nobody answered in time closes (the flag is not left open)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from vocero.contracts.clock import VirtualClock
from vocero.contracts.ports import InputRequest
from vocero.orchestrator.asking import Asking
from vocero.orchestrator.machine import Event
from vocero.orchestrator.spoken_answers import numbers_in

pytestmark = pytest.mark.anyio


@dataclass
class Core:
    """What :class:`Asking` uses of a session: its control lane and its machine."""

    sent: list[Any] = field(default_factory=list)
    fired: list[Event] = field(default_factory=list)
    clock: VirtualClock = field(default_factory=VirtualClock)
    ctx: Any = field(default_factory=lambda: SimpleNamespace(
        caller=SimpleNamespace(timezone="Europe/Madrid")))  # fmt: skip

    def control(self, payload: Any) -> None:
        self.sent.append(payload)

    def fire(self, event: Event) -> None:
        self.fired.append(event)


def question(qid: str = "q1") -> InputRequest:
    return InputRequest(
        id=qid, server="bookings", tool="bookings.survey", operation_id="op1",
        requested_schema={"type": "object", "required": ["rating"],
                          "properties": {"rating": {"type": "integer"}}},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("said", "numbers"),
    [
        ("four people", [4]),
        ("twenty five", [25]),
        ("forty", [40]),
        ("on Friday the 4th for two", [2]),
        ("at 7:30 for 12", [12]),
        ("2026-12-04 for nineteen", [19]),
        ("twenty, then three", [20, 3]),
    ],
)
def test_spoken_numbers_leave_dates_and_times_out(said: str, numbers: list[int]) -> None:
    assert numbers_in(said) == numbers


async def test_a_question_nobody_answers_in_time_closes() -> None:
    core = Core()
    asking = Asking(core)  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        tg.start_soon(asking.ask, question())
        await asking.posted.wait()
        tg.cancel_scope.cancel()  # what the gateway's input timeout does to the handler
    assert asking.open is None and not asking.posted.is_set()
    assert core.fired == [Event.INPUT_REQUESTED, Event.QUESTION_CLOSED]
    [shown] = core.sent
    assert (shown.question_id, [f.name for f in shown.fields]) == ("q1", ["rating"])


async def test_a_second_question_while_one_is_open_is_declined() -> None:
    core = Core()
    asking = Asking(core)  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        tg.start_soon(asking.ask, question("q1"))
        await asking.posted.wait()
        second = await asking.ask(question("q2"))
        assert second.action == "decline"
        words, settled = asking.answer("five")
        assert settled and words == ""
    assert core.fired == [Event.INPUT_REQUESTED, Event.INPUT_ANSWERED]
