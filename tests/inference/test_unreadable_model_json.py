"""A small model's JSON cut off mid-string (``max_tokens`` reached inside a value) closed the
session with 1011 (Beacon suite, issue 42): the filler's unreadable answer now fills nothing,
the field is asked for, and the runner goes on. Sans-IO on the routed runner with an engine
that answers every structured request with truncated JSON."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import anyio

from vocero.contracts.domain import ToolDefinition
from vocero.contracts.ports import LlmRequest, Message, TextChunk, ToolIntent
from vocero.inference.toolkit.llm import RoutedLlm
from vocero.inference.toolkit.settings import QueueSettings

TODAY = dt.date(2026, 12, 7)
FRAME = ToolDefinition(
    name="frames.order",
    description="Order a picture frame for a print; moulding is the frame's wood.",
    input_schema={
        "type": "object",
        "properties": {
            "print_ref": {"type": "string", "pattern": "^PF[0-9]{4}$"},
            "moulding": {"type": "string"},
        },
        "required": ["print_ref", "moulding"],
    },
)


class CutOffEngine:
    """Answers every structured request as a model cut off inside a string would."""

    def __init__(self) -> None:
        self.asked = 0

    def load(self) -> None:
        return None

    def json_object(
        self, messages: list[dict[str, str]], shape: dict[str, Any], *, max_tokens: int = 160
    ) -> dict[str, Any]:
        self.asked += 1
        value: dict[str, Any] = json.loads('{"moulding": "dark wal')
        return value

    def chat_stream(self, messages: list[dict[str, str]], *, max_tokens: int) -> Iterator[str]:
        yield "Sorry."


def test_a_cut_off_fill_asks_for_the_field_and_the_runner_goes_on() -> None:
    engine = CutOffEngine()
    llm = RoutedLlm(engine, QueueSettings(), today=lambda: TODAY)  # type: ignore[arg-type]
    request = LlmRequest(
        messages=[
            Message(role="system", content="You take framing orders."),
            Message(role="user", content="Please order a frame for print PF1234."),
        ],
        tools=[FRAME],
    )

    async def run() -> list[object]:
        return [o async for o in llm.generate(request)]

    outputs = anyio.run(run)
    assert engine.asked >= 1  # the model was asked, and its answer was unreadable
    assert not [o for o in outputs if isinstance(o, ToolIntent)]  # nothing half-filled is sent
    spoken = " ".join(o.text for o in outputs if isinstance(o, TextChunk))
    assert "moulding" in spoken.lower(), outputs  # the field is asked for
