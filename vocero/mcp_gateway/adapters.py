"""Protocol adapters on the official MCP Python SDK (docs/adr/0004, docs/adr/0007).

Three ways to open a server, chosen by ``McpServerSpec.protocol``:

* ``auto`` (default): :class:`NegotiatingAdapter` probes ``server/discover`` and speaks
  2026-07-28 where the server offers it, else the 2025-11-25 initialize handshake;
* ``2025-11-25``: :class:`StableAdapter_2025_11_25`, the handshake only;
* ``2026-07-28``: :class:`StatelessAdapter_2026_07_28`, which must land on 2026-07-28
  (self-contained requests, ``Mcp-Method`` / ``Mcp-Name`` routing headers stamped by the SDK,
  no protocol session) and never falls back.

On 2026-07-28 list changes arrive on a ``subscriptions/listen`` stream and listings carry
``ttlMs`` / ``cacheScope``; on 2025-11-25 list changes are notifications. A 2026-07-28 HTTP call
whose response stream broke (no resumption in that revision) surfaces as
:class:`StreamBrokenError`, so the connection can send it again. Every adapter carries stdio and
streamable HTTP (with optional OAuth), answers a server's questions through the connection's
:class:`~vocero.mcp_gateway.questions.QuestionDesk`, and hands the rest of the gateway only
neutral shapes (:mod:`vocero.mcp_gateway.model`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
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
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from vocero.contracts.domain import McpServerSpec
from vocero.mcp_gateway.errors import ServerRefusedError
from vocero.mcp_gateway.model import Listing, RemoteResult, RemoteTool
from vocero.mcp_gateway.questions import QuestionDesk
from vocero.mcp_gateway.settings import AUTO_PROTOCOL, STABLE_PROTOCOL, STATELESS_PROTOCOL

log = structlog.get_logger("vocero.mcp_gateway")

CLIENT_INFO = types.Implementation(name="vocero-mcp-gateway", version="0.2.0")
_LIST_PAGE_CAP = 100


class StreamBrokenError(Exception):
    """Internal: a 2026-07-28 HTTP response stream ended before its result, the transport lives
    on. The request is lost (no resumption); the connection may send it again."""


@dataclass(frozen=True, slots=True)
class SessionHooks:
    """What a live session reports back to its connection (both must not block)."""

    tools_changed: Callable[[], None]
    lost: Callable[[], None]


@dataclass(slots=True)
class OpenOptions:
    """Per-connection pieces an adapter wires into the SDK client."""

    desk: QuestionDesk | None = None
    auth: httpx2.Auth | None = None


class AdapterSession(Protocol):
    protocol_version: str

    async def list_tools(self) -> Listing: ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any], *, timeout_s: float
    ) -> RemoteResult: ...


class McpAdapter(Protocol):
    protocol: str

    def open(
        self,
        server: str,
        spec: McpServerSpec,
        hooks: SessionHooks,
        *,
        connect_timeout_s: float,
        options: OpenOptions | None = None,
    ) -> AbstractAsyncContextManager[AdapterSession]: ...


@dataclass(slots=True)
class _Liveness:
    ended: bool = False


@dataclass(slots=True)
class _SdkSession:
    """One long-lived SDK client, shared by every call to the server."""

    client: Client
    http: bool
    liveness: _Liveness
    protocol_version: str = field(init=False)

    def __post_init__(self) -> None:
        self.protocol_version = self.client.protocol_version

    @property
    def stateless(self) -> bool:
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    async def list_tools(self) -> Listing:
        tools: list[RemoteTool] = []
        ttl_ms: int | None = None
        private = False
        cursor: str | None = None
        for _ in range(_LIST_PAGE_CAP):
            page = await self.client.list_tools(cursor=cursor)
            tools.extend(
                RemoteTool(
                    name=t.name,
                    description=t.description or "",
                    input_schema=dict(t.input_schema or {}),
                    output_schema=dict(t.output_schema) if t.output_schema is not None else None,
                )
                for t in page.tools
            )
            if self.stateless:
                ttl_ms = page.ttl_ms if ttl_ms is None else min(ttl_ms, page.ttl_ms)
                private = private or page.cache_scope != "public"
            cursor = page.next_cursor
            if cursor is None:
                break
        scope = "public" if self.stateless and not private else "private"
        return Listing(tools=tools, ttl_ms=ttl_ms, cache_scope=scope)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any], *, timeout_s: float
    ) -> RemoteResult:
        try:
            result = await self.client.call_tool(
                name,
                arguments,
                read_timeout_seconds=timeout_s,
                meta=cast(types.RequestParamsMeta, meta),
            )
        except MCPError as exc:
            if (
                exc.code == types.CONNECTION_CLOSED
                and self.stateless
                and self.http
                and not self.liveness.ended
            ):
                raise StreamBrokenError("stream_broken") from exc
            raise
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        return RemoteResult(
            is_error=bool(result.is_error),
            texts=texts,
            structured=result.structured_content,
            dropped_blocks=len(result.content) - len(texts),
        )


class _SdkAdapter:
    protocol: str = AUTO_PROTOCOL
    mode: str = "auto"

    @asynccontextmanager
    async def open(
        self,
        server: str,
        spec: McpServerSpec,
        hooks: SessionHooks,
        *,
        connect_timeout_s: float,
        options: OpenOptions | None = None,
    ) -> AsyncIterator[AdapterSession]:
        options = options or OpenOptions()
        liveness = _Liveness()

        def lost() -> None:
            liveness.ended = True
            hooks.lost()

        client = Client(
            _watched(_transport(spec, options.auth), lost),
            mode=self.mode,
            read_timeout_seconds=connect_timeout_s,
            client_info=CLIENT_INFO,
            message_handler=_message_handler(server, hooks, options.desk),
            elicitation_callback=(
                options.desk.elicitation_callback if options.desk is not None else None
            ),
            cache=None,
        )
        async with client:
            session = _SdkSession(client, http=bool(spec.url), liveness=liveness)
            self._check_version(server, session.protocol_version)
            log.info("mcp.session_opened", server=server, protocol=session.protocol_version)
            if session.stateless:
                async with _listening(server, client, hooks):
                    yield session
            else:
                yield session

    def _check_version(self, server: str, version: str) -> None:
        """Auto mode takes whichever revision the server offered."""


class StableAdapter_2025_11_25(_SdkAdapter):
    """The 2025-11-25 handshake, session and list-changed notifications (pinned)."""

    protocol = STABLE_PROTOCOL
    mode = "legacy"

    def _check_version(self, server: str, version: str) -> None:
        if version != self.protocol:
            log.warning("mcp.protocol_downgraded", server=server, protocol=version)


class StatelessAdapter_2026_07_28(_SdkAdapter):
    """2026-07-28 only (pinned): discovery must land on it; never falls back."""

    protocol = STATELESS_PROTOCOL
    mode = "auto"

    def _check_version(self, server: str, version: str) -> None:
        if version != self.protocol:
            raise ServerRefusedError("stateless_not_negotiated")


class NegotiatingAdapter(_SdkAdapter):
    """The default: 2026-07-28 where ``server/discover`` offers it, 2025-11-25 otherwise."""

    protocol = AUTO_PROTOCOL
    mode = "auto"


CandidateAdapter_2026_07_28 = StatelessAdapter_2026_07_28
"""Former name, from before 2026-07-28 was supported (docs/adr/0007)."""


def select_adapter(spec: McpServerSpec) -> McpAdapter:
    """The adapter the server's ``protocol`` setting asks for (``auto`` by default)."""
    if spec.oauth is not None and not spec.url:
        raise ServerRefusedError("oauth_needs_http")
    if spec.protocol == STATELESS_PROTOCOL:
        return StatelessAdapter_2026_07_28()
    if spec.protocol == STABLE_PROTOCOL:
        return StableAdapter_2025_11_25()
    return NegotiatingAdapter()


def _message_handler(server: str, hooks: SessionHooks, desk: QuestionDesk | None) -> Any:
    async def handle(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            hooks.tools_changed()
        elif isinstance(message, types.ElicitCompleteNotification) and desk is not None:
            desk.completed(message.params.elicitation_id)
        elif isinstance(message, Exception):
            log.warning("mcp.transport_error", server=server, error=type(message).__name__)

    return handle


@asynccontextmanager
async def _listening(server: str, client: Client, hooks: SessionHooks) -> AsyncIterator[None]:
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
    except Exception as exc:  # boundary: a lost listen stream only costs change push
        log.warning("mcp.listen_ended", server=server, error=type(exc).__name__)
        hooks.tools_changed()


# --------------------------------------------------------------------------------- transports


def _transport(
    spec: McpServerSpec, auth: httpx2.Auth | None
) -> AbstractAsyncContextManager[TransportStreams]:
    if spec.url:
        return _http_transport(spec, auth)
    params = StdioServerParameters(
        command=spec.command, args=list(spec.args), env=dict(spec.env) or None
    )
    return stdio_client(params)


@asynccontextmanager
async def _http_transport(
    spec: McpServerSpec, auth: httpx2.Auth | None
) -> AsyncIterator[TransportStreams]:
    """Streamable HTTP with the server's configured headers and OAuth (credentials live only
    there and in the gateway's token store)."""
    timeout = httpx2.Timeout(10.0, read=300.0)
    async with (
        create_mcp_http_client(
            headers=dict(spec.headers) or None, timeout=timeout, auth=auth
        ) as http,
        streamable_http_client(spec.url, http_client=http) as streams,
    ):
        yield streams


@asynccontextmanager
async def _watched(
    transport: AbstractAsyncContextManager[TransportStreams], lost: Callable[[], None]
) -> AsyncIterator[TransportStreams]:
    """The transport, with its read side reporting end of stream (a server or transport gone)."""
    async with transport as (read, write):
        yield _EndWatcher(read, lost), write


class _EndWatcher(ObjectReceiveStream[SessionMessage | Exception]):
    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """Forwarded for the SDK dispatcher, which reads it off streamable HTTP's stream (it is
        how a question arriving on a call's own response stream runs in the caller's context)."""
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
