"""A server's questions during a tool call, answered through the caller (MCP elicitation).

Both revisions end here. On 2026-07-28 the server returns an ``InputRequiredResult``; the SDK's
multi-round-trip driver hands each embedded ``elicitation/create`` to the client's elicitation
callback and retries the same ``tools/call`` with ``inputResponses`` and the echoed
``requestState`` (a new request id, the same ``_meta``, so the same operation id). On
2025-11-25 the server sends ``elicitation/create`` mid-call and the same callback answers it.

The callback is shared by every session on a connection, so each call opens a :class:`CallRoute`
that the callback finds: through a context variable (the SDK runs the 2026-07-28 driver, and a
2025-11-25 request arriving on the call's own HTTP response stream, in the calling task's
context), else by the ``io.vocero/operation_id`` a server echoes in the request's ``_meta``, else
as the only call with a route in flight on that connection. Anything else is declined
(``input_unroutable``): a question is never put to a caller it may not belong to.

What the caller sees is an :class:`~vocero.contracts.ports.InputRequest`: a flat schema holding
only fields a caller may answer (cut by :mod:`vocero.mcp_gateway.askable`). A question that needs
a secret (password, token, card number) is never asked: the server gets a decline saying why
(``_meta["io.vocero/reason"]``). An accepted answer is validated against that schema before it is
sent. Nothing here logs or audits a value: events carry names, the action and the reason.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import mcp_types as types
import structlog
from jsonschema import Draft202012Validator
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from vocero.contracts.ports import (
    CallMeta,
    InputHandler,
    InputLink,
    InputRequest,
    InputResponse,
)
from vocero.mcp_gateway.askable import (
    MAX_MESSAGE_CHARS,
    Refusal,
    answer_problems,
    checked_url,
    restrict_schema,
    with_defaults,
)
from vocero.mcp_gateway.errors import (
    INPUT_CANCELLED,
    INPUT_DECLINED,
    INPUT_INVALID,
    INPUT_NOT_COMPLETED,
    INPUT_TIMEOUT,
    INPUT_UNAVAILABLE,
    INPUT_UNROUTABLE,
    LINKS_REQUIRED,
    ToolInputError,
)
from vocero.mcp_gateway.sanitize import scrub

log = structlog.get_logger("vocero.mcp_gateway")

REASON_META = "io.vocero/reason"
OPERATION_META = "io.vocero/operation_id"
_MAX_LINKS = 4
"""Pages one ``-32042`` may send the caller to; more is not a request a caller can follow."""
_EARLY_S = 10.0
_EARLY_KEPT = 64
"""A page's done notice that no call waits for yet is kept this long (this many at most)."""

AuditFn = Callable[[str, dict[str, Any]], Awaitable[None]]
T = TypeVar("T")


@dataclass(eq=False)
class CallRoute:
    """One tool call that may be asked questions: who answers and what happened."""

    server: str
    tool: str
    meta: CallMeta
    ask: InputHandler | None
    audit: AuditFn
    timeout_s: float
    max_fields: int
    reason: str = ""
    """The last reason a question did not end in an accepted answer ("" when none)."""

    @property
    def failure_reason(self) -> str:
        """Why an error result of this call is put down to a question ("" when it is not)."""
        return self.reason or (INPUT_UNROUTABLE if self.unrouted else "")

    asked: int = 0
    active: bool = True
    unrouted: bool = False
    """A question arrived that could not be told apart from another call's while this one was
    in flight: an error result of this call is then put down to it (``input_unroutable``)."""
    auth_failure: str = ""
    """Set by the OAuth guard when this call's request could not be authorized."""
    deadline: anyio.CancelScope | None = None
    """The call's timeout scope: the time a caller takes to answer does not count against it."""
    _validators: dict[str, Draft202012Validator] = field(default_factory=dict)

    async def ask_caller(self, request: InputRequest) -> InputResponse:
        """The handler's answer within ``timeout_s`` (``TimeoutError`` after it)."""
        assert self.ask is not None
        return await self.off_the_clock(self.ask(request))

    async def off_the_clock(self, pending: Awaitable[T]) -> T:
        """``pending`` within ``timeout_s`` (``TimeoutError`` after it), the time it takes
        added to the call's deadline: the caller's time is not the tool's."""
        scope = self.deadline
        if scope is not None:
            scope.deadline += self.timeout_s
        started = anyio.current_time()
        try:
            with anyio.fail_after(self.timeout_s):
                return await pending
        finally:
            if scope is not None:
                scope.deadline -= max(0.0, self.timeout_s - (anyio.current_time() - started))


CURRENT_ROUTE: ContextVar[CallRoute | None] = ContextVar("vocero_mcp_route", default=None)


class QuestionDesk:
    """The routes in flight on one connection, the elicitation callback that serves them, and
    the pages the server has said are done (``notifications/elicitation/complete``)."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._routes: list[CallRoute] = []
        self._awaited: dict[str, list[anyio.Event]] = {}
        self._early: dict[str, float] = {}

    @contextmanager
    def open(self, route: CallRoute) -> Iterator[CallRoute]:
        """Register ``route`` for the duration of its call (also as the context's route)."""
        self._routes.append(route)
        token = CURRENT_ROUTE.set(route)
        try:
            yield route
        finally:
            CURRENT_ROUTE.reset(token)
            route.active = False
            self._routes.remove(route)

    def find(self, meta: dict[str, Any] | None) -> CallRoute | None:
        current = CURRENT_ROUTE.get()
        if current is not None and current.active and current in self._routes:
            return current
        echoed = (meta or {}).get(OPERATION_META)
        if isinstance(echoed, str) and echoed:
            matches = [r for r in self._routes if r.meta.operation_id == echoed]
            return matches[0] if len(matches) == 1 else None
        return self._routes[0] if len(self._routes) == 1 else None

    def completed(self, elicitation_id: str) -> None:
        """The server says the page of ``elicitation_id`` is done. Kept a while when no call
        waits for it yet: over HTTP the notice may overtake the error that named the page."""
        events = self._awaited.get(elicitation_id)
        if events:
            for event in events:
                event.set()
            return
        now = anyio.current_time()
        self._early = {key: at for key, at in self._early.items() if now - at < _EARLY_S}
        if len(self._early) < _EARLY_KEPT:
            self._early[elicitation_id] = now

    @contextmanager
    def awaiting(self, elicitation_id: str) -> Iterator[anyio.Event]:
        """An event set once the server says the page of ``elicitation_id`` is done."""
        event = anyio.Event()
        seen = self._early.pop(elicitation_id, None)
        if seen is not None and anyio.current_time() - seen < _EARLY_S:
            event.set()
        events = self._awaited.setdefault(elicitation_id, [])
        events.append(event)
        try:
            yield event
        finally:
            events.remove(event)
            if not events:
                del self._awaited[elicitation_id]

    async def elicitation_callback(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The SDK's ``elicitation_callback`` for this connection (both revisions)."""
        route = self.find(getattr(context, "meta", None))
        if route is None:
            log.warning("mcp.input_unroutable", server=self.server, in_flight=len(self._routes))
            for candidate in self._routes:
                candidate.unrouted = True
            return _refuse(INPUT_UNROUTABLE)
        return await answer(route, params)


async def answer(route: CallRoute, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Put one question to the caller of ``route`` and turn the answer into the MCP result."""
    _request, result = await _answer(route, params)
    return result


async def visit_links(route: CallRoute, desk: QuestionDesk, error: MCPError) -> None:
    """A 2025-11-25 ``-32042``: the server will not run the call until the caller has been to
    one or more pages. Each link is put to the caller as a URL question; this returns once the
    server has said every page is done (``notifications/elicitation/complete``), so the call may
    be sent again. Otherwise :class:`ToolInputError` with the reason: the caller's refusal, or
    ``input_not_completed`` when the server does not say so within ``timeout_s`` of the
    caller's yes (the notice is not guaranteed, so the wait is bounded)."""
    try:
        links = UrlElicitationRequiredError.from_error(error.error).elicitations
    except ValueError:  # pydantic's ValidationError included: a malformed list
        links = []
    pages = [link.elicitation_id for link in links if link.elicitation_id]
    if not links or len(links) > _MAX_LINKS or len(pages) != len(links):
        raise ToolInputError(LINKS_REQUIRED)
    with ExitStack() as stack:
        done = [stack.enter_context(desk.awaiting(page)) for page in pages]
        for link, page_done in zip(links, done, strict=True):
            request, result = await _answer(route, link)
            if request is None or result.action != "accept":
                raise ToolInputError(route.reason or INPUT_DECLINED)
            try:
                await route.off_the_clock(page_done.wait())
            except TimeoutError:
                route.reason = INPUT_NOT_COMPLETED
                await _page_done(route, request, completed=False)
                raise ToolInputError(INPUT_NOT_COMPLETED) from None
            await _page_done(route, request, completed=True)


def wants_links(error: MCPError, protocol_version: str) -> bool:
    """Whether ``error`` sends the caller to a page before the call can run: ``-32042``, a
    2025-11-25 code (2026-07-28 asks for a page inside the call and retired the code)."""
    return (
        error.code == types.URL_ELICITATION_REQUIRED
        and protocol_version not in MODERN_PROTOCOL_VERSIONS
    )


async def _answer(
    route: CallRoute, params: types.ElicitRequestParams
) -> tuple[InputRequest | None, types.ElicitResult]:
    """The question as put to the caller (``None`` when it was refused before), and the MCP
    result of the answer."""
    route.asked += 1
    try:
        request = build_request(route, params)
    except Refusal as refusal:
        return None, await _close(route, "decline", str(refusal), fields=_field_names(params))
    return request, await _answer_request(route, request)


async def _answer_request(route: CallRoute, request: InputRequest) -> types.ElicitResult:
    base = _about(route)
    await route.audit(
        "mcp.input_requested",
        {**base, "question_id": request.id, "mode": request.mode, "fields": _fields(request)},
    )
    if route.ask is None:
        return await _close(route, "decline", INPUT_UNAVAILABLE, request=request)
    try:
        response = await route.ask_caller(request)
    except TimeoutError:
        return await _close(route, "cancel", INPUT_TIMEOUT, request=request)
    if response.action == "decline":
        return await _close(route, "decline", INPUT_DECLINED, request=request)
    if response.action == "cancel":
        return await _close(route, "cancel", INPUT_CANCELLED, request=request)
    if request.mode == "url":
        await _answered(route, request, "accept", [])
        return types.ElicitResult(action="accept")
    content = with_defaults(request, response.content)
    problems = answer_problems(request, content, route._validators)
    if problems:
        return await _close(route, "cancel", INPUT_INVALID, request=request, problems=problems)
    await _answered(route, request, "accept", sorted(content))
    return types.ElicitResult(action="accept", content=content)


def build_request(route: CallRoute, params: types.ElicitRequestParams) -> InputRequest:
    """The protocol-neutral question, or :class:`Refusal` with the reason it is not asked."""
    message = scrub(params.message[:MAX_MESSAGE_CHARS])
    common: dict[str, Any] = {
        "id": f"q_{secrets.token_hex(8)}",
        "server": route.server,
        "tool": route.tool,
        "operation_id": route.meta.operation_id,
        "proposal_id": route.meta.proposal_id,
        "revision": route.meta.revision,
        "message": message.value,
        "message_flags": sorted(message.flags),
    }
    if isinstance(params, types.ElicitRequestURLParams):
        url = checked_url(params.url)
        link = InputLink(server=route.server, url=url, message=message.value)
        return InputRequest(**common, mode="url", link=link)
    schema = restrict_schema(dict(params.requested_schema), max_fields=route.max_fields)
    return InputRequest(**common, mode="form", requested_schema=schema)


async def _close(
    route: CallRoute,
    action: str,
    reason: str,
    *,
    request: InputRequest | None = None,
    fields: list[str] | None = None,
    problems: list[str] | None = None,
) -> types.ElicitResult:
    """Tell the server the question ended without an answer, and why."""
    route.reason = reason
    data: dict[str, Any] = {**_about(route), "action": action, "reason": reason}
    if request is not None:
        data["question_id"] = request.id
        data["fields"] = _fields(request)
    elif fields is not None:
        data["fields"] = fields
    if problems:
        data["problems"] = problems
    await route.audit("mcp.input_answered", data)
    return _refuse(reason, action=action)


async def _answered(
    route: CallRoute, request: InputRequest, action: str, fields: list[str]
) -> None:
    await route.audit(
        "mcp.input_answered",
        {
            **_about(route),
            "question_id": request.id,
            "action": action,
            "reason": "",
            "fields": fields,
        },
    )


async def _page_done(route: CallRoute, request: InputRequest, *, completed: bool) -> None:
    data = {**_about(route), "question_id": request.id, "completed": completed}
    await route.audit("mcp.input_completed", data)


def _about(route: CallRoute) -> dict[str, Any]:
    return {"server": route.server, "tool": route.tool, "operation_id": route.meta.operation_id}


def _refuse(reason: str, *, action: str = "decline") -> types.ElicitResult:
    return types.ElicitResult(
        action="cancel" if action == "cancel" else "decline", _meta={REASON_META: reason}
    )


def _fields(request: InputRequest) -> list[str]:
    return sorted((request.requested_schema.get("properties") or {}).keys())


def _field_names(params: types.ElicitRequestParams) -> list[str]:
    if isinstance(params, types.ElicitRequestFormParams):
        return sorted(str(name) for name in (params.requested_schema.get("properties") or {}))
    return []


def route_for(
    server: str,
    tool: str,
    meta: CallMeta,
    ask: InputHandler | None,
    *,
    audit: AuditFn,
    timeout_s: float,
    max_fields: int,
) -> CallRoute:
    return CallRoute(
        server=server,
        tool=tool,
        meta=meta,
        ask=ask,
        audit=audit,
        timeout_s=timeout_s,
        max_fields=max_fields,
    )
