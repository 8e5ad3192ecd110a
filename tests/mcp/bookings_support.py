"""Helpers of the tests against ``fixtures/mcp_servers/bookings_server.py``: its tools as a
profile declares them, a caller allowed to use them, recorded answers of a fake caller, and the
server behind a local identity provider for delegated credentials."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from gateway_support import (
    HttpServer,
    RecordingAudit,
    ServerDef,
    http_servers,
    profile,
    records,
    request,
)

from tests.support.idp import IdentityProvider, identity_provider
from vocero.contracts.domain import McpServerAuth, McpServerSpec, Principal, ToolSpec
from vocero.contracts.ports import InputRequest, InputResponse, ToolCallRequest
from vocero.contracts.secrets import Secret
from vocero.identity.caller_jwt import expires_at
from vocero.mcp_gateway import CallerCredentials, McpConnections, McpGateway

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
    return [line for line in records(path) if line.get("kind") == "input"]


def calls(path: Path, tool: str) -> list[dict[str, Any]]:
    return [line for line in records(path) if line.get("tool") == tool and "kind" not in line]


@dataclass
class IdpBookings:
    """A real local identity provider (``tests/support/idp.py``) and a bookings server over HTTP
    that checks every call's bearer by introspection at it and records the bearer it received
    (``VOCERO_MCP_CALL_INTROSPECT``, ``folder/headers.jsonl``)."""

    idp: IdentityProvider
    server: HttpServer
    folder: Path

    def calls(self) -> list[dict[str, Any]]:
        lines = records(self.folder / "headers.jsonl")
        return [line for line in lines if line["body_method"] == "tools/call"]


@contextmanager
def idp_bookings(folder: Path) -> Iterator[IdpBookings]:
    with identity_provider() as idp:
        env = {
            "VOCERO_MCP_RECORD": str(folder / "bookings.jsonl"),
            "VOCERO_MCP_STATE": str(folder / "bookings.json"),
            "VOCERO_MCP_HEADERS": str(folder / "headers.jsonl"),
            "VOCERO_MCP_CALL_INTROSPECT": idp.introspection_url,
        }
        with http_servers({"bookings": (SCRIPT, env)}) as running:
            yield IdpBookings(idp, running["bookings"], folder)


@asynccontextmanager
async def delegated_gateway(
    w: IdpBookings, auth: McpServerAuth, credentials: CallerCredentials, session_id: str
) -> AsyncIterator[tuple[McpGateway, RecordingAudit]]:
    """A running gateway to ``w``'s server with ``auth``, its tool calls made for the callers in
    ``credentials``; it has connected (listing needs no caller token)."""
    spec = McpServerSpec(url=w.server.url, auth=auth)
    chosen = profile({"bookings": spec}, booking_tools())
    audit = RecordingAudit()
    connections = McpConnections.from_profiles([chosen], audit=audit, subjects=credentials)
    async with connections.running():
        conn = connections.connection("bookings")
        assert conn is not None and conn.state == "connected"
        yield McpGateway(connections, chosen, session_id=session_id), audit


def remember(credentials: CallerCredentials, principal: Principal, jwt: str) -> None:
    credentials.remember(principal.tenant_id, principal.subject_ref, Secret(jwt), expires_at(jwt))
