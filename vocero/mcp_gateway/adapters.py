"""Protocol adapters on the official MCP Python SDK (seed 004 §9.6).

``StableAdapter_2025_11_25`` (the default) keeps the 2025-11-25 lifecycle: initialize handshake,
a protocol session, ``notifications/tools/list_changed``. ``CandidateAdapter_2026_07_28`` speaks the
release candidate (``server/discover``, self-contained requests, ``subscriptions/listen``) and is
reachable only when a server asks for it *and* the process-wide switch allows it. Both carry stdio
(a spawned server) and streamable HTTP, and both hand the rest of the gateway only neutral shapes
(:mod:`vocero.mcp_gateway.model`), so transport and revision details stay here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol, cast

import anyio
import httpx2
import mcp_types as types
import structlog
from anyio.abc import ObjectReceiveStream
from mcp import Client, StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage

from vocero.contracts.domain import McpServerSpec
from vocero.mcp_gateway.errors import CandidateDisabledError
from vocero.mcp_gateway.model import RemoteResult, RemoteTool
from vocero.mcp_gateway.settings import CANDIDATE_PROTOCOL, STABLE_PROTOCOL, GatewaySettings

log = structlog.get_logger("vocero.mcp_gateway")

CLIENT_INFO = types.Implementation(name="vocero-mcp-gateway", version="0.1.0")
_LIST_PAGE_CAP = 100


@dataclass(frozen=True, slots=True)
class SessionHooks:
    """What a live session reports back to its connection (both must not block)."""

    tools_changed: Callable[[], None]
    lost: Callable[[], None]


class AdapterSession(Protocol):
    protocol_version: str

    async def list_tools(self) -> list[RemoteTool]: ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any], *, timeout_s: float
    ) -> RemoteResult: ...


class McpAdapter(Protocol):
    protocol: str

    def open(
        self, server: str, spec: McpServerSpec, hooks: SessionHooks, *, connect_timeout_s: float
    ) -> AbstractAsyncContextManager[AdapterSession]: ...


class _SdkSession:
    """One long-lived SDK client, shared by every call to the server."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.protocol_version = client.protocol_version

    async def list_tools(self) -> list[RemoteTool]:
        tools: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(_LIST_PAGE_CAP):
            page = await self._client.list_tools(cursor=cursor)
            tools.extend(
                RemoteTool(
                    name=t.name,
                    description=t.description or "",
                    input_schema=dict(t.input_schema or {}),
                    output_schema=dict(t.output_schema) if t.output_schema is not None else None,
                )
                for t in page.tools
            )
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any], *, timeout_s: float
    ) -> RemoteResult:
        result = await self._client.call_tool(
            name,
            arguments,
            read_timeout_seconds=timeout_s,
            meta=cast(types.RequestParamsMeta, meta),
        )
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        return RemoteResult(
            is_error=bool(result.is_error),
            texts=texts,
            structured=result.structured_content,
            dropped_blocks=len(result.content) - len(texts),
        )


class _SdkAdapter:
    protocol: str = STABLE_PROTOCOL
    mode: str = "legacy"

    @asynccontextmanager
    async def open(
        self, server: str, spec: McpServerSpec, hooks: SessionHooks, *, connect_timeout_s: float
    ) -> AsyncIterator[AdapterSession]:
        client = Client(
            _watched(_transport(spec), hooks.lost),
            mode=self.mode,
            read_timeout_seconds=connect_timeout_s,
            client_info=CLIENT_INFO,
            message_handler=self._message_handler(server, hooks),
            cache=None,
        )
        async with client:
            session = _SdkSession(client)
            self._check_version(server, session.protocol_version)
            log.info("mcp.session_opened", server=server, protocol=session.protocol_version)
            async with self._extras(server, client, hooks):
                yield session

    def _check_version(self, server: str, version: str) -> None:
        if version != self.protocol:
            log.warning("mcp.protocol_downgraded", server=server, protocol=version)

    def _message_handler(self, server: str, hooks: SessionHooks) -> Any:
        async def handle(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                hooks.tools_changed()
            elif isinstance(message, Exception):
                log.warning("mcp.transport_error", server=server, error=type(message).__name__)

        return handle

    def _extras(
        self, server: str, client: Client, hooks: SessionHooks
    ) -> AbstractAsyncContextManager[None]:
        return _nothing()


class StableAdapter_2025_11_25(_SdkAdapter):
    """The default: the 2025-11-25 handshake, session and list-changed notifications."""

    protocol = STABLE_PROTOCOL
    mode = "legacy"


class CandidateAdapter_2026_07_28(_SdkAdapter):
    """The 2026-07-28 release candidate, behind a flag until ratified. Never falls back."""

    protocol = CANDIDATE_PROTOCOL
    mode = "auto"

    def _check_version(self, server: str, version: str) -> None:
        if version != self.protocol:
            raise CandidateDisabledError("candidate_not_negotiated")

    @asynccontextmanager
    async def _extras(
        self, server: str, client: Client, hooks: SessionHooks
    ) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_listen_for_changes, server, client, hooks)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()


async def _listen_for_changes(server: str, client: Client, hooks: SessionHooks) -> None:
    """2026-07-28 announces list changes on a ``subscriptions/listen`` stream."""
    try:
        async with client.listen(tools_list_changed=True) as subscription:
            async for _event in subscription:
                hooks.tools_changed()
    except (
        Exception
    ) as exc:  # boundary: a lost listen stream only costs change push; relists remain
        log.warning("mcp.listen_ended", server=server, error=type(exc).__name__)
        hooks.tools_changed()


def select_adapter(spec: McpServerSpec, settings: GatewaySettings) -> McpAdapter:
    """The stable adapter unless the server asks for the candidate and the switch allows it."""
    if spec.protocol == CANDIDATE_PROTOCOL:
        if not settings.allow_candidate:
            raise CandidateDisabledError("candidate_disabled")
        return CandidateAdapter_2026_07_28()
    return StableAdapter_2025_11_25()


# --------------------------------------------------------------------------------- transports


def _transport(spec: McpServerSpec) -> AbstractAsyncContextManager[TransportStreams]:
    if spec.url:
        return _http_transport(spec)
    params = StdioServerParameters(
        command=spec.command, args=list(spec.args), env=dict(spec.env) or None
    )
    return stdio_client(params)


@asynccontextmanager
async def _http_transport(spec: McpServerSpec) -> AsyncIterator[TransportStreams]:
    """Streamable HTTP with the server's configured headers (credentials live only there)."""
    timeout = httpx2.Timeout(10.0, read=300.0)
    async with (
        create_mcp_http_client(headers=dict(spec.headers) or None, timeout=timeout) as http,
        streamable_http_client(spec.url, http_client=http) as streams,
    ):
        yield streams


@asynccontextmanager
async def _watched(
    transport: AbstractAsyncContextManager[TransportStreams], lost: Callable[[], None]
) -> AsyncIterator[TransportStreams]:
    """The transport, with its read side reporting end of stream (a stdio server that died)."""
    async with transport as (read, write):
        yield _EndWatcher(read, lost), write


class _EndWatcher(ObjectReceiveStream[SessionMessage | Exception]):
    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """Forwarded for the SDK dispatcher, which reads it off streamable HTTP's stream."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield
