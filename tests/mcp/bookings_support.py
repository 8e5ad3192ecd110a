"""Helpers of the tests against ``fixtures/mcp_servers/bookings_server.py``: its tools as a
profile declares them, a caller allowed to use them, and recorded answers of a fake caller."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from gateway_support import ServerDef, request

from vocero.contracts.domain import Principal, ToolSpec
from vocero.contracts.ports import InputRequest, InputResponse, ToolCallRequest

BOOKER = Principal(
    subject_ref="sub_bob", tenant_id="acme", scopes=["bookings:read", "bookings:write"]
)
SCRIPT = "bookings_server.py"


def booking_tools(server: str = "bookings", **timeouts: int) -> list[ToolSpec]:
    def spec(name: str, tool: str, action: str, scope: str, **extra: Any) -> ToolSpec:
        return ToolSpec(
            name=f"{server}.{name}",
            server=server,
            resolves_to=tool,
            action_class=action,  # type: ignore[arg-type]
            required_scopes=[scope],
            timeout_ms=timeouts.get(name, 5000),
            **extra,
        )

    return [
        spec("slots", "find_slots", "read", "bookings:read", idempotent=True),
        spec("order", "place_order", "reversible_write", "bookings:write"),
        spec("book", "book_table", "reversible_write", "bookings:write"),
        spec("link", "link_account", "reversible_write", "bookings:write"),
        spec("pay", "verify_payment", "reversible_write", "bookings:write"),
        spec("deposit", "release_deposit", "reversible_write", "bookings:write"),
        spec("survey", "survey", "read", "bookings:read"),
    ]


def bookings(folder: Path, *args: str, name: str = "bookings", **env: str) -> dict[str, ServerDef]:
    """One bookings server recording into ``folder``."""
    knobs = {
        "VOCERO_MCP_RECORD": str(folder / f"{name}.jsonl"),
        "VOCERO_MCP_STATE": str(folder / f"{name}.json"),
        **env,
    }
    return {name: (SCRIPT, knobs, list(args))}


def booking_request(
    tool: str,
    arguments: dict[str, Any],
    *,
    operation_id: str = "op_booking",
    ask: Callable[[InputRequest], Awaitable[InputResponse]] | None = None,
    proposal_id: str = "",
    revision: int = 0,
    principal: Principal = BOOKER,
) -> ToolCallRequest:
    base = request(
        tool,
        arguments,
        operation_id=operation_id,
        principal=principal,
        proposal_id=proposal_id,
        revision=revision,
    )
    return ToolCallRequest(tool=base.tool, arguments=base.arguments, meta=base.meta, ask=ask)


@dataclass
class FakeCaller:
    """Answers every question with ``answers[field-set]`` (or ``action``), and keeps what it
    was asked."""

    answers: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    action: str = "accept"
    asked: list[InputRequest] = field(default_factory=list)
    delay_s: float = 0.0
    hold: anyio.Event | None = None
    reached: anyio.Event = field(default_factory=anyio.Event)

    async def __call__(self, question: InputRequest) -> InputResponse:
        self.asked.append(question)
        self.reached.set()
        if self.hold is not None:
            await self.hold.wait()
        if self.delay_s:
            await anyio.sleep(self.delay_s)  # the caller takes a while to speak
        if self.action != "accept":
            return InputResponse(action=self.action)  # type: ignore[arg-type]
        fields = ",".join(sorted(question.requested_schema.get("properties") or {}))
        return InputResponse(action="accept", content=dict(self.answers.get(fields, {})))


def inputs(path: Path) -> list[dict[str, Any]]:
    """The answers the server received (``kind: input`` lines of its record)."""
    from gateway_support import records

    return [line for line in records(path) if line.get("kind") == "input"]


def calls(path: Path, tool: str) -> list[dict[str, Any]]:
    from gateway_support import records

    return [line for line in records(path) if line.get("tool") == tool and "kind" not in line]
